// Zeus's energy-time cost (NSDI'23), written once for the whole project:
//
//   cost = eta * energy_j + (1 - eta) * max_power_w * time_s
//
// `eta` in [0, 1] weighs energy against time. MaxPower (`max_power_w`)
// converts time into energy so that both terms are in J: it is the highest
// power limit the job considers, in W, times the number of GPUs whose energy
// `energy_j` sums (MaxPowerW()). Callers differ only in which highest limit
// they mean, and each passes its own:
//   - a batch-size job: the client's `max_power` field (already W x GPUs);
//   - a simulated run's cost: the highest limit of the GPU's whole power
//     trace (Workload::max_power_w, one GPU);
//   - a per-epoch or per-step cost that ranks power limits (JIT profiling,
//     the simulator's early stopping, the optimum selectors): the highest
//     limit measured for that batch size or in that profile, x its GPUs.
//
// Thread-safety: pure functions.

#ifndef ZEUS_CORE_COST_H_
#define ZEUS_CORE_COST_H_

namespace zeus {

// MaxPower in W: `max_power_limit_w` (the highest power limit the job
// considers, in W) x `num_gpus`. REQUIRES: num_gpus >= 1.
double MaxPowerW(double max_power_limit_w, int num_gpus);

// The cost above, in J. REQUIRES: 0 <= eta <= 1; max_power_w from MaxPowerW().
double ZeusCost(double energy_j, double time_s, double eta, double max_power_w);

}  // namespace zeus

#endif  // ZEUS_CORE_COST_H_
