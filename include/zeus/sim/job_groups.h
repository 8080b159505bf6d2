// Recurring-job groups with overlapping submissions (the Alibaba-derived
// trace of the Zeus paper): each group is one recurring job whose
// submissions may start before earlier ones finish.
//
// File format, one row per submission:
//   group,start_time,end_time,dataset,runtime_ratio
// (seconds; runtime_ratio scales a run's energy and time to this
// submission's size). Columns are found by their header, in any order, so the
// original Zeus's trace/alibaba_groups.csv (an unnamed index column, then
// group,dataset,start_time,end_time,runtime_ratio) loads once decompressed;
// an xz or gzip file is refused with that hint. Extra columns are ignored;
// loading is strict. Ranges: start_time and end_time in [-1e12, 1e12] s
// (end_time >= start_time), runtime_ratio in [1e-6, 1e6]. A leading UTF-8
// byte-order mark is allowed.
//
// Thread-safety: functions are reentrant.

#ifndef ZEUS_SIM_JOB_GROUPS_H_
#define ZEUS_SIM_JOB_GROUPS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

// The ranges above.
constexpr double kMaxGroupTimeS = 1e12;
constexpr double kMinRuntimeRatio = 1e-6;
constexpr double kMaxRuntimeRatio = 1e6;

struct JobSubmission {
  std::string group;
  double start_time_s = 0.0;
  double end_time_s = 0.0;
  std::string dataset;
  double runtime_ratio = 1.0;
};

// Submissions grouped by group name, each group sorted by start time.
using JobGroups = std::map<std::string, std::vector<JobSubmission>>;

// Loads and groups a job-group file. Errors name file:line:col: end before
// start, a value out of its range, a malformed number.
StatusOr<JobGroups> LoadJobGroups(const std::string& path);

// A seeded arrival process for when no group file is given: per group, a
// dataset drawn uniformly from `datasets`, Poisson arrivals, and durations
// = mean_duration_s x runtime_ratio with runtime_ratio log-normal (median 1).
struct JobGroupGeneratorOptions {
  // Default: 8.
  int num_groups = 8;
  // Submissions per group. Default: 40.
  int submissions_per_group = 40;
  // Mean gap between a group's submissions, s. Default: 3600.
  double mean_interarrival_s = 3600.0;
  // Median duration of a submission, s; above the interarrival gap means
  // overlap. Default: 5400.
  double mean_duration_s = 5400.0;
  // Spread (sigma of log) of runtime_ratio. Default: 0.25.
  double runtime_ratio_sigma = 0.25;
  // Default: 1.
  uint64_t seed = 1;
};
// kInvalidArgument for empty `datasets` or non-positive sizes.
StatusOr<JobGroups> GenerateJobGroups(const JobGroupGeneratorOptions& options,
                                      const std::vector<std::string>& datasets);

// A run of a group simulation: the RunRecord (energy and time scaled by the
// submission's runtime_ratio; recurrence = index of the submission in its
// group) and when it ran.
struct GroupRunRecord {
  RunRecord run;
  double start_time_s = 0.0;
  double end_time_s = 0.0;
  // 1 for a submission's first run, 2 for its first retry, ...
  int attempt = 1;
  // Stopped when another run's result tightened its bound past what it had
  // spent (see SimulateJobGroup); it did not reach the target.
  bool stopped_early = false;
  // Also stopped early: stopped below the restart threshold of a report
  // (Policy::RestartThresholdAtReport), so that its submission restarts at
  // a cheaper size.
  bool restarted = false;
};

// Simulates one group on `workload` under `policy`. Every run's outcome is
// drawn when it starts and observed by the policy when it ends, in end-time
// order, so results arrive out of submission order when runs overlap.
// Bounds are read as `zeus serve` reads them, at every report: after each
// observation, every run still in flight whose bound the policy has
// tightened (Policy::CostLimitAtReport: the run that ended lowered the best
// cost, or made the run useless to it) is charged what it has spent so far
// (its unbounded cost spread evenly over its unbounded span: see
// GroupRunTime for how long a run lasts). If that already reaches the
// new bound the run stops at that moment, having spent it, and is observed
// next as not reaching the target; otherwise it goes on under the new bound
// (replayed with the same draw of epochs). A bound that loosens (swarm's
// walk step outbid from further along) is replayed the same way for a run
// still going. A run is also held to the bound in force when it reports; a
// run its bound stops ends when it has spent it. A run that misses the
// target is retried from its end time with its submission's duration, up to
// options.max_tries per submission. With GroupRunTime::kScaled,
// kFailedPrecondition when no seed run of the default batch size reaches
// the target.
// REQUIRES: `submissions` sorted by start time (as LoadJobGroups returns
// them). kInvalidArgument for invalid options, a workload failing
// ValidateWorkload, or a submission out of the ranges above.
// Adds each submission to `tally` when given.
StatusOr<std::vector<GroupRunRecord>> SimulateJobGroup(
    const Workload& workload, Policy& policy, const std::vector<JobSubmission>& submissions,
    const SimulationOptions& options, SubmissionTally* tally = nullptr);

// The groups of `groups` whose submissions run `dataset`, in name order.
// The pointers are into `groups`.
std::vector<const std::vector<JobSubmission>*> GroupsRunning(const JobGroups& groups,
                                                             const std::string& dataset);

// A stable per-group seed: `seed` mixed with a hash of the group name.
uint64_t GroupSeed(uint64_t seed, const std::string& group);

}  // namespace zeus

#endif  // ZEUS_SIM_JOB_GROUPS_H_
