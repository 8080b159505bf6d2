// Many simulations at once: GPUs x workloads x policies x seeds, summarised
// the way `zeus simulate` reports them. Returns data; printing is the
// caller's (tools/simulate_command.cc). Both experiments below run one loop:
// a solo experiment is a group experiment whose only "group" per workload is
// the recurring job of the options (one simulation per policy and seed).
//
// Thread-safety: RunExperiment is reentrant; callbacks run on the calling
// thread.

#ifndef ZEUS_SIM_EXPERIMENT_H_
#define ZEUS_SIM_EXPERIMENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

struct ExperimentOptions {
  // Policy names (see PolicyNames()). Default: zeus.
  std::vector<std::string> policies = {"zeus"};
  // One simulation per seed. Default: 1..10.
  std::vector<uint64_t> seeds = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  // eta, beta, recurrences and tries; its `seed` is ignored.
  SimulationOptions simulation;
};

// One policy on one workload, averaged over the seeds.
struct PolicyResult {
  std::string gpu;
  std::string dataset;
  std::string policy;
  int num_recurrences = 0;
  int num_seeds = 0;
  // Means over the seeds of the cumulative values.
  double energy_j = 0.0;
  double time_s = 0.0;
  double cost = 0.0;
  double cost_ratio = 0.0;
  double energy_ratio = 0.0;
  double time_ratio = 0.0;
  // (cumulative cost - the `oracle` policy's cumulative cost) / the latter,
  // on the same seeds (and groups): 0 for the oracle itself, > 0 for a policy
  // that pays more than always running the best configuration.
  double regret = 0.0;
  // The paper's definition: against recurrences x the oracle configuration's
  // expected cost (the original simulator's `regret`); sampling noise makes
  // it slightly negative for the oracle itself.
  double expected_regret = 0.0;
  double cost_ratio_min = 0.0;
  double cost_ratio_max = 0.0;
  // Over every seed (and group): the submissions, the policy's runs in
  // them, and how the submissions fared (SubmissionTally).
  SubmissionTally submissions;
  // Modes of the last 20 runs pooled over the seeds (smallest on ties).
  int final_batch_size = 0;
  int final_power_limit_w = 0;
  ExpectedRun default_run;
  ExpectedRun oracle_run;
};

// One run of one simulation, for --history-csv.
struct HistoryRow {
  const std::string* gpu = nullptr;
  const std::string* dataset = nullptr;
  const std::string* policy = nullptr;
  uint64_t seed = 0;
  RunRecord run;
  // Group simulations only (null otherwise): the run's group, and its
  // start, end, attempt and stopped_early (GroupRunRecord).
  const std::string* group = nullptr;
  const GroupRunRecord* group_run = nullptr;
};

// Called with (simulations done, simulations in total).
using ProgressCallback = std::function<void(size_t done, size_t total)>;
// Called once per run, in simulation order.
using HistoryCallback = std::function<void(const HistoryRow& row)>;

// Runs every (workload, policy, seed). Fails on the first error (unknown
// policy, no policies or seeds, invalid options, unreachable default or
// oracle, a (policy, seed) whose runs never started).
StatusOr<std::vector<PolicyResult>> RunExperiment(const std::vector<Workload>& workloads,
                                                  const ExperimentOptions& options,
                                                  const ProgressCallback& progress = nullptr,
                                                  const HistoryCallback& history = nullptr);

// Runs every (GPU workload, policy, seed, group) of `groups` whose dataset
// the workloads hold (other groups are skipped; none matching is
// kNotFound). Results are per (GPU, dataset, policy), summed over groups and
// averaged over seeds; ratios compare with the default's and the oracle's
// expected runs scaled by each submission's runtime_ratio, and
// num_recurrences counts submissions. Each group runs with seed
// GroupSeed(seed, group name). History rows carry the submission index as
// the recurrence. Fails as RunExperiment does.
StatusOr<std::vector<PolicyResult>> RunGroupExperiment(const std::vector<Workload>& workloads,
                                                       const JobGroups& groups,
                                                       const ExperimentOptions& options,
                                                       const ProgressCallback& progress = nullptr,
                                                       const HistoryCallback& history = nullptr);

}  // namespace zeus

#endif  // ZEUS_SIM_EXPERIMENT_H_
