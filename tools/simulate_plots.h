// `zeus simulate --plot DIR`: gathers the runs of a simulation (through the
// history callback) and draws, with gnuplot, per workload
//   cost_<gpu>_<dataset>.svg: the cumulative cost per recurrence of each
//     policy simulated (mean over the seeds), relative to the default
//     configuration's expected cost over as many recurrences (1 = the
//     default's), one colour per policy (PolicyColor), a curve far above the
//     others off the top (ChooseCostScale);
//   energy_time_<gpu>_<dataset>_<policy>.svg: the expected energy and time to
//     reach the target of every (batch size, power limit), the default and
//     the oracle, and the path the policy took through them (its first
//     seed: the configuration of each recurrence's last run, in order).
// and index.html, a page showing the cost figures and linking the planes.
// With job groups, a recurrence is a submission index.
//
// Thread-safety: one thread per object.

#ifndef ZEUS_TOOLS_SIMULATE_PLOTS_H_
#define ZEUS_TOOLS_SIMULATE_PLOTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
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

// The colour of `policy`'s series in every figure ("#rrggbb"): one of ten
// distinct colours for the known policies, `default` black and `oracle`
// green; another name gets one of a few more, by a hash of it.
std::string PolicyColor(const std::string& policy);

// A curve more than this many times higher, at its highest, than the median
// curve's highest goes off the top of the cost figure.
constexpr double kOffScaleFactor = 3.0;

// The y range of a cost figure: every curve in view except those off scale
// (kOffScaleFactor; never when there is one curve), with 1 (the default's
// level) always in view and a margin.
struct CostScale {
  std::optional<double> y_min, y_max;
  // Per curve.
  std::vector<bool> off_scale;
};
CostScale ChooseCostScale(const std::vector<std::vector<std::pair<double, double>>>& curves);

class SimulationPlots {
 public:
  // `path_seed`: the seed whose path is drawn; `simulation`: the options
  // simulated (its eta prices the expected configurations).
  SimulationPlots(uint64_t path_seed, const SimulationOptions& simulation)
      : path_seed_(path_seed), simulation_(simulation) {}

  // Records one run (a HistoryCallback).
  void Add(const HistoryRow& row);

  // Draws the figures of every workload recorded into `dir` (created when
  // missing), writes index.html there, and returns their paths (the index's
  // last). kIoError naming `dir` when it cannot be
  // created or written; kNotFound naming the package when gnuplot is missing.
  StatusOr<std::vector<std::string>> Write(const std::string& dir,
                                           const std::vector<Workload>& workloads,
                                           const PlotOptions& options = {}) const;

 private:
  // (gpu, dataset, policy).
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<std::pair<PlotFigure, std::string>> Figures(
      const std::string& dir, const std::vector<Workload>& workloads) const;
  // The page linking the figures of `written` (paths under `dir`).
  std::string IndexHtml(const std::string& dir, const std::set<std::string>& written) const;

  uint64_t path_seed_;
  SimulationOptions simulation_;
  // Cost of each (seed, recurrence), all its tries summed.
  std::map<Key, std::map<std::pair<uint64_t, int>, double>> costs_;
  // path_seed_'s configuration (batch size, power limit W) per recurrence.
  std::map<Key, std::map<int, std::pair<int, int>>> paths_;
};

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_SIMULATE_PLOTS_H_
