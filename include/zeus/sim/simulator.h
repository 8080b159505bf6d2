// The trace-driven simulator of recurring training jobs (Zeus, NSDI'23).
//
// Each recurrence samples one seed run of the chosen batch size from the
// train trace; a run's energy is epochs x time per epoch x average power at
// the chosen power limit. A run that does not reach the target is retried
// within its recurrence, up to SimulationOptions::max_tries times.
//
// Deterministic given the seed. Thread-safety: functions are reentrant;
// distinct simulations may run on distinct threads.

#ifndef ZEUS_SIM_SIMULATOR_H_
#define ZEUS_SIM_SIMULATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/core/rng.h"
#include "zeus/sim/job_context.h"
#include "zeus/sim/policy.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

// How long a run of a job group lasts (SimulateJobGroup). Either way a run
// spends its cost evenly over that span, and one its bound stops ends when
// it has spent what it ran.
enum class GroupRunTime {
  // Its submission's duration x its time to the target / the default batch
  // size's expected time at the maximum power limit (DefaultRun): the
  // submission's duration is how long the job takes as its user configured
  // it, a configuration that trains faster finishes sooner, and every run
  // spends cost at the pace its GPU's power allows.
  kScaled,
  // Its submission's duration whatever its batch size, as in the original
  // Zeus simulator: a batch size that needs 5x the default's time spends
  // cost 5x as fast.
  kSubmission,
};
// "scaled" or "submission".
std::string_view GroupRunTimeName(GroupRunTime model);
// kInvalidArgument naming the text and the known names otherwise.
StatusOr<GroupRunTime> ParseGroupRunTime(std::string_view name);

struct SimulationOptions {
  // Weight of energy in the cost, in [0, 1]. Default: 0.5.
  double eta = 0.5;
  // Early stopping at beta x the lowest cost so far (> 0); nullopt disables
  // it. Default: 2.
  std::optional<double> beta = 2.0;
  // Recurrences of the job; 0 = 2 x |batch sizes| x |power limits|.
  // Default: 0.
  int num_recurrences = 0;
  // Seed of the run sampling and of the policy. Default: 1.
  uint64_t seed = 1;
  // Tries per recurrence before giving up on it. Default: 20.
  int max_tries = 20;
  // Job groups only. Default: kScaled.
  GroupRunTime group_run_time = GroupRunTime::kScaled;
  // JobContext::check_in_s: finite and >= 0. Default: 10 s.
  double check_in_s = 10.0;
  // JobContext::nonbinding_margin: nullopt (default) profiles every limit;
  // otherwise finite and >= 0.
  std::optional<double> nonbinding_margin;

  // kInvalidArgument naming the field.
  Status Validate() const;
  // The context of a simulation of `workload` under these options (eta,
  // beta, seed). REQUIRES: `workload` outlives it.
  JobContext ContextFor(const Workload& workload) const;
  // num_recurrences, or DefaultRecurrences(workload) when it is 0.
  int RecurrencesOf(const Workload& workload) const;
};

// 2 x |batch sizes| x |power limits| of `workload`, at most INT_MAX.
int DefaultRecurrences(const Workload& workload);

// One run, as written to --history-csv.
struct RunRecord {
  // 0-based; retries share their recurrence's number.
  int recurrence = 0;
  int batch_size = 0;
  int power_limit_w = 0;
  double energy_j = 0.0;
  double time_s = 0.0;
  bool reached = false;
  double cost = 0.0;
  // RunPlan::kind of the run.
  std::string_view kind = {};
  // It passed its early-stop bound as a near miss and ran on
  // (RunOutcome::ran_on).
  bool ran_on = false;
};

// Executes `plan` on `job`'s workload: samples a seed run with `rng`, applies
// the cost limit and JIT profiling, and prices the run at `job`'s eta. An
// exact limit (RunPlan::exact_cost_limit) is judged where `zeus serve`
// judges it: at each epoch's report and at each check-in between them
// (JobContext::check_in_s), so a run stops at the first of them past its
// bound, charged what it spent by then (spend is even within an epoch).
// REQUIRES: the plan's configuration is in the workload.
RunOutcome ExecuteRun(const JobContext& job, const RunPlan& plan, Rng& rng);
// The same on `workload` at `eta`, for the policies' probes of a workload of
// their own (src/sim/policies). New code passes a JobContext; this overload and
// OracleRun's go once the policies do.
RunOutcome ExecuteRun(const Workload& workload, const RunPlan& plan, double eta, Rng& rng);

// How the submissions (recurrences) of simulations fared: the invariant
// that no policy abandons a submission (Policy::Next).
struct SubmissionTally {
  int submissions = 0;
  // Submissions that neither reached the target nor had a try that may
  // finish (RunPlan::may_finish): must be 0.
  int abandoned = 0;
  // The most tries any submission took.
  int most_tries = 0;

  // One submission: whether it reached the target or had a try that may
  // finish, and how many tries it took.
  void Add(bool reached_or_may_finish, int tries);
  void Merge(const SubmissionTally& other);
};

// Runs a sequentially recurring job under `policy`. Runs that never started
// (cost limit below one epoch) are not recorded. Adds each recurrence to
// `tally` when given. kInvalidArgument for invalid options or a workload
// that fails ValidateWorkload (checked first).
StatusOr<std::vector<RunRecord>> SimulateRecurringJob(const Workload& workload, Policy& policy,
                                                      const SimulationOptions& options,
                                                      SubmissionTally* tally = nullptr);

// Expected outcome of one configuration over its seed runs that reached the
// target.
struct ExpectedRun {
  int batch_size = 0;
  int power_limit_w = 0;
  double energy_j = 0.0;
  double time_s = 0.0;
  double cost = 0.0;
};
// Each prices the runs of `job`'s workload at `job`'s eta.
// nullopt when no seed run of `batch_size` reaches the target or the power
// limit is not in the trace.
std::optional<ExpectedRun> Expected(const JobContext& job, int batch_size, int power_limit_w);
// The default batch size at its maximum power limit. kFailedPrecondition when
// no seed run of the default reaches the target.
StatusOr<ExpectedRun> DefaultRun(const JobContext& job);
// The configuration with the least expected cost among those whose every seed
// run reaches the target (any that reaches when none does).
StatusOr<ExpectedRun> OracleRun(const JobContext& job);
// OracleRun of `workload` at `eta`, for the policies (see ExecuteRun above).
StatusOr<ExpectedRun> OracleRun(const Workload& workload, double eta);

// How one simulation compares with the references.
struct SimulationSummary {
  int num_recurrences = 0;
  int num_runs = 0;
  // Cumulative over all runs (failed and early-stopped ones included).
  double energy_j = 0.0;
  double time_s = 0.0;
  double cost = 0.0;
  // Cumulative over recurrences x the default's expected value.
  double cost_ratio = 0.0;
  double energy_ratio = 0.0;
  double time_ratio = 0.0;
  // The same over the last 10 recurrences.
  double last10_energy_ratio = 0.0;
  double last10_time_ratio = 0.0;
  // (cost - N x oracle cost) / (N x oracle cost).
  double regret = 0.0;
  // The configuration settled on: modes of the last 20 runs (smallest on ties).
  int final_batch_size = 0;
  int final_power_limit_w = 0;
  ExpectedRun default_run;
  ExpectedRun oracle_run;
};

// `runs` of a simulation of `job` against its default and oracle.
// kInvalidArgument when there is no run or num_recurrences <= 0.
StatusOr<SimulationSummary> Summarize(const JobContext& job, const std::vector<RunRecord>& runs,
                                      int num_recurrences);

}  // namespace zeus

#endif  // ZEUS_SIM_SIMULATOR_H_
