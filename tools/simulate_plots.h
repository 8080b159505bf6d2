// `zeus simulate --plot DIR`: gathers the runs of a simulation (through the
// history callback) and draws, with gnuplot, per workload
//   cost_<gpu>_<dataset>.svg: the cumulative cost per recurrence of each
//     policy simulated (mean over the seeds);
//   energy_time_<gpu>_<dataset>_<policy>.svg: the expected energy and time to
//     reach the target of every (batch size, power limit), the default and
//     the oracle, and the path the policy took through them (its first
//     seed: the configuration of each recurrence's last run, in order).
// With job groups, a recurrence is a submission index.
//
// Thread-safety: one thread per object.

#ifndef ZEUS_TOOLS_SIMULATE_PLOTS_H_
#define ZEUS_TOOLS_SIMULATE_PLOTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zeus/plot/gnuplot.h"
#include "zeus/sim/experiment.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus::cli {

class SimulationPlots {
 public:
  // `path_seed`: the seed whose path is drawn; `simulation`: the options
  // simulated (its eta prices the expected configurations).
  SimulationPlots(uint64_t path_seed, const SimulationOptions& simulation)
      : path_seed_(path_seed), simulation_(simulation) {}

  // Records one run (a HistoryCallback).
  void Add(const HistoryRow& row);

  // Draws the figures of every workload recorded into `dir` (created when
  // missing) and returns their paths. kIoError naming `dir` when it cannot be
  // created or written; kNotFound naming the package when gnuplot is missing.
  StatusOr<std::vector<std::string>> Write(const std::string& dir,
                                           const std::vector<Workload>& workloads,
                                           const PlotOptions& options = {}) const;

 private:
  // (gpu, dataset, policy).
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<std::pair<PlotFigure, std::string>> Figures(
      const std::string& dir, const std::vector<Workload>& workloads) const;

  uint64_t path_seed_;
  SimulationOptions simulation_;
  // Cost of each (seed, recurrence), all its tries summed.
  std::map<Key, std::map<std::pair<uint64_t, int>, double>> costs_;
  // path_seed_'s configuration (batch size, power limit W) per recurrence.
  std::map<Key, std::map<int, std::pair<int, int>>> paths_;
};

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_SIMULATE_PLOTS_H_
