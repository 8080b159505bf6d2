// What one simulated recurring job runs under: its workload, the cost's
// weight of energy (eta), the early-stopping knob (beta) and the seed. Built
// once per simulation (SimulationOptions::ContextFor) and passed by const
// reference to the policy (as PolicyContext) and to everything that prices a
// run, so eta and MaxPower travel together instead of as loose doubles.
//
// Thread-safety: a plain value; the workload it points to is read-only.

#ifndef ZEUS_SIM_JOB_CONTEXT_H_
#define ZEUS_SIM_JOB_CONTEXT_H_

#include <cstdint>
#include <optional>

#include "zeus/sim/trace.h"

namespace zeus {

struct JobContext {
  // REQUIRES (for every use): non-null and outliving the context's users.
  const Workload* workload = nullptr;
  // Weight of energy in the cost, in [0, 1].
  double eta = 0.5;
  // Early-stopping knob (> 0) or nullopt for none.
  std::optional<double> beta = 2.0;
  // Seed of the policy's own random choices and of the run sampling.
  uint64_t seed = 1;
  // How often (s of a run's time) a run with an exact cost limit is judged
  // between its per-epoch reports: our client's check-ins
  // (BatchSizeOptimizer.on_step_end, POST /report/progress). 0: only at
  // the end of each epoch, as the original client reports. >= 0.
  double check_in_s = 10.0;
  // JIT power-limit profiles skip the limits that cannot bind, at this
  // margin (BatchSizeTrace::ProfiledPoints); nullopt: every limit is
  // profiled, as in the original simulator.
  std::optional<double> nonbinding_margin;

  // ZeusCost(energy_j, time_s, eta, workload->max_power_w): a run's cost, J,
  // with MaxPower the highest power limit of the GPU's whole trace.
  double Cost(double energy_j, double time_s) const;
};

}  // namespace zeus

#endif  // ZEUS_SIM_JOB_CONTEXT_H_
