// The Zeus trace format (NSDI'23, ml-energy/zeus): what one recurring job
// costs on one GPU, per batch size and power limit.
//
// A trace directory holds
//   summary_train.csv       dataset,network,batch_size,optimizer,learning_rate,run,
//                           target_metric,target_epoch  (empty or nan: never reached)
//   summary_power_<gpu>.csv dataset,network,batch_size,optimizer,power_limit,
//                           time_per_epoch,average_power  (W, s, W)
//   jobs.csv                dataset,network,optimizer,target_metric,max_epochs,
//                           default_batch_size
// Loading is strict: a missing column, a malformed number, a value out of
// its range (below) or a duplicate row is an error naming file:line:col.
// Nothing is guessed. A leading UTF-8 byte-order mark is allowed.
//
// Ranges (inclusive), far wider than any real trace and narrow enough that
// every product and sum the simulator forms stays finite and positive, and
// that a power limit converts to mW without overflow:
//   batch_size, max_epochs, default_batch_size   integers in [1, 2^30]
//   run                                          integer in [0, 2^30]
//   power_limit                                  integer W in [1, 100000]
//   time_per_epoch                               s in [1e-6, 1e9]
//   average_power                                W in [1e-6, 1e6]
//   target_epoch                                 in [1, 2^30] (or empty/nan)
//   target_metric                                finite
//
// Thread-safety: loaded traces are immutable values.

#ifndef ZEUS_SIM_TRACE_H_
#define ZEUS_SIM_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zeus/status.h"
#include "zeus/util/csv.h"

namespace zeus {

// The ranges above.
constexpr int kMaxTraceInteger = 1 << 30;
constexpr int kMaxTracePowerLimitW = 100'000;
constexpr double kMinTraceTimePerEpochS = 1e-6;
constexpr double kMaxTraceTimePerEpochS = 1e9;
constexpr double kMinTraceAveragePowerW = 1e-6;
constexpr double kMaxTraceAveragePowerW = 1e6;
// The largest trace file (and job-group file) loaded: the simulator holds
// about 8 times a file's size in memory (the published traces are under
// 1 MB each). A larger file is refused before it is read.
constexpr uint64_t kMaxTraceFileBytes = uint64_t{256} << 20;

// The CSV table of trace (or job-group) file `path`; kInvalidArgument naming
// the file and its size, before reading it, above kMaxTraceFileBytes.
StatusOr<CsvTable> ReadTraceFile(const std::string& path);

// One recurring job of jobs.csv.
struct JobSpec {
  std::string dataset;
  std::string network;
  std::string optimizer;
  // The validation metric that counts as "reached".
  double target_metric = 0.0;
  // The most epochs one run may train.
  int max_epochs = 0;
  // The batch size users would pick (before capping to a GPU's trace).
  int default_batch_size = 0;
};

// One row of summary_train.csv.
struct TrainRow {
  std::string dataset;
  std::string network;
  std::string optimizer;
  int batch_size = 0;
  int run = 0;
  double target_metric = 0.0;
  // The first epoch that reached target_metric; nullopt = never reached.
  std::optional<double> target_epoch;
};

// One row of summary_power_<gpu>.csv.
struct PowerRow {
  std::string dataset;
  std::string network;
  std::string optimizer;
  int batch_size = 0;
  int power_limit_w = 0;
  double time_per_epoch_s = 0.0;
  double average_power_w = 0.0;
};

StatusOr<std::vector<JobSpec>> LoadJobs(const std::string& path);
StatusOr<std::vector<TrainRow>> LoadTrainTrace(const std::string& path);
StatusOr<std::vector<PowerRow>> LoadPowerTrace(const std::string& path);

// The GPU names with a summary_power_<name>.csv in `dir`, sorted.
// kNotFound when `dir` is unreadable or holds none.
StatusOr<std::vector<std::string>> FindTraceGpus(const std::string& dir);

// What one (batch size, power limit) costs per epoch.
struct PowerPoint {
  int power_limit_w = 0;
  double time_per_epoch_s = 0.0;
  double average_power_w = 0.0;
  double energy_per_epoch_j() const { return time_per_epoch_s * average_power_w; }
};

// One batch size of a workload: its power curve and its seed runs.
struct BatchSizeTrace {
  int batch_size = 0;
  // Sorted by power limit, ascending.
  std::vector<PowerPoint> power;
  // One entry per seed run: the epoch that reached the target, or nullopt.
  std::vector<std::optional<double>> target_epochs;
  // Per seed run, in the order of target_epochs: the first epoch at which it
  // reached each of Workload::milestones (nullopt: never). Consistent: a run
  // reaches a level no later than a harder one, and than the target. May be
  // empty when the workload has no milestones.
  std::vector<std::vector<std::optional<double>>> milestone_epochs = {};

  // The point at `power_limit_w`, or nullptr.
  const PowerPoint* At(int power_limit_w) const;
  int max_power_limit_w() const { return power.back().power_limit_w; }
  // The points a JIT power-limit profile of this batch size runs: every
  // limit; with `nonbinding_margin`, only the limits that can bind at the
  // draw of the highest limit (PowerLimitCanBind) and the highest limit, as
  // the power-limit optimizer skips the others. Ascending; never empty.
  std::vector<const PowerPoint*> ProfiledPoints(std::optional<double> nonbinding_margin) const;
};

// One job on one GPU: the join of the three files.
struct Workload {
  std::string gpu;
  JobSpec job;
  // The job's default, capped at the largest batch size of this GPU's power
  // trace; always one of `batch_sizes`.
  int default_batch_size = 0;
  // Batch sizes present in both traces, ascending, with at least one power
  // point and one seed run each.
  std::vector<BatchSizeTrace> batch_sizes;
  // Every power limit of this workload, ascending.
  std::vector<int> power_limits_w;
  // The metric levels a run passes on its way to the target (the train
  // trace's rows at other target_metric values), in the order runs reach
  // them, the target excluded; empty when the trace records none. A run's
  // progress after an epoch is how many of them it has reached, plus one
  // once it reached the target (RunOutcome::progress).
  std::vector<double> milestones;
  // MaxPower of a run's cost (see zeus/core/cost.h), in W: the largest power
  // limit of the GPU's whole power trace (other workloads included), one GPU.
  double max_power_w = 0.0;

  // The batch size's trace, or nullptr.
  const BatchSizeTrace* Find(int batch_size) const;
  std::vector<int> BatchSizeList() const;
};

// Joins the traces on dataset, network, optimizer and batch size (train rows
// filtered to the job's target metric). Jobs absent from `power` are skipped.
// kInvalidArgument when a job of `power` has no batch size common to both
// traces or its capped default is not among them, or a row's value is out of
// range (ValidateWorkload; rows from the loaders always are in range).
StatusOr<std::vector<Workload>> BuildWorkloads(const std::string& gpu,
                                               const std::vector<JobSpec>& jobs,
                                               const std::vector<TrainRow>& train,
                                               const std::vector<PowerRow>& power);

// OK when `workload` is one BuildWorkloads could return: every value in the
// ranges above, at least one batch size, each with power points at distinct
// ascending limits (all in power_limits_w, itself ascending) and at least one
// seed run, the default batch size among them, 0 < max_power_w <=
// kMaxTracePowerLimitW. kInvalidArgument naming the GPU, job, batch size,
// limit and value otherwise. The simulator checks it before simulating, so a
// Workload built in code gets an error, not an abort.
Status ValidateWorkload(const Workload& workload);

// Loads `dir`'s jobs.csv, summary_train.csv and summary_power_<gpu>.csv.
StatusOr<std::vector<Workload>> LoadWorkloads(const std::string& dir, const std::string& gpu);

}  // namespace zeus

#endif  // ZEUS_SIM_TRACE_H_
