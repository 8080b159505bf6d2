#include "zeus/sim/job_groups.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>

#include "zeus/core/rng.h"
#include "zeus/util/csv.h"

namespace zeus {

namespace {

// kInvalidArgument when `path` starts like an xz or gzip file: the original
// Zeus ships its Alibaba group trace as trace/alibaba_groups.csv.xz.
Status RefuseCompressed(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[6] = {};
  in.read(head, sizeof(head));
  const std::string start(head, static_cast<size_t>(in.gcount()));
  const char* tool = nullptr;
  if (start == std::string("\xFD"
                           "7zXZ\0",
                           6))
    tool = "xz";
  if (start.size() >= 2 && start[0] == '\x1F' && start[1] == '\x8B') tool = "gzip";
  if (tool == nullptr) return Status::Ok();
  return InvalidArgumentError(path + ": compressed with " + std::string(tool) +
                              "; decompress it first (" + tool + " -dk " + path +
                              ") and pass the CSV");
}

}  // namespace

StatusOr<JobGroups> LoadJobGroups(const std::string& path) {
  ZEUS_RETURN_IF_ERROR(RefuseCompressed(path));
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, CsvTable::ReadFile(path));
  std::vector<size_t> c;
  for (const char* name : {"group", "start_time", "end_time", "dataset", "runtime_ratio"}) {
    ZEUS_ASSIGN_OR_RETURN(size_t index, table.ColumnIndex(name));
    c.push_back(index);
  }
  JobGroups groups;
  for (size_t row = 0; row < table.num_rows(); ++row) {
    JobSubmission s;
    s.group = table.Field(row, c[0]);
    if (s.group.empty()) return table.ErrorAt(row, c[0], "expected a group name");
    ZEUS_ASSIGN_OR_RETURN(s.start_time_s, table.Double(row, c[1]));
    ZEUS_ASSIGN_OR_RETURN(s.end_time_s, table.Double(row, c[2]));
    s.dataset = table.Field(row, c[3]);
    if (s.dataset.empty()) return table.ErrorAt(row, c[3], "expected a dataset name");
    ZEUS_ASSIGN_OR_RETURN(s.runtime_ratio, table.Double(row, c[4]));
    if (!(std::abs(s.start_time_s) <= kMaxGroupTimeS)) {
      return table.ErrorAt(
          row, c[1], "expected a time in [-1e+12, 1e+12] s, got '" + table.Field(row, c[1]) + "'");
    }
    if (!(std::abs(s.end_time_s) <= kMaxGroupTimeS) || s.end_time_s < s.start_time_s) {
      return table.ErrorAt(row, c[2],
                           "expected a time in [-1e+12, 1e+12] s and >= start_time, got '" +
                               table.Field(row, c[2]) + "'");
    }
    if (!(s.runtime_ratio >= kMinRuntimeRatio && s.runtime_ratio <= kMaxRuntimeRatio)) {
      return table.ErrorAt(
          row, c[4], "expected a ratio in [1e-06, 1e+06], got '" + table.Field(row, c[4]) + "'");
    }
    std::vector<JobSubmission>& group = groups[s.group];
    if (!group.empty() && group.front().dataset != s.dataset) {
      return table.ErrorAt(row, c[3],
                           "group '" + s.group + "' mixes datasets '" + group.front().dataset +
                               "' and '" + s.dataset + "'");
    }
    group.push_back(std::move(s));
  }
  for (auto& [name, group] : groups) {
    std::stable_sort(group.begin(), group.end(),
                     [](const JobSubmission& a, const JobSubmission& b) {
                       return a.start_time_s < b.start_time_s;
                     });
  }
  return groups;
}

StatusOr<JobGroups> GenerateJobGroups(const JobGroupGeneratorOptions& options,
                                      const std::vector<std::string>& datasets) {
  if (datasets.empty()) return InvalidArgumentError("job groups: no datasets to draw from");
  if (options.num_groups <= 0 || options.submissions_per_group <= 0) {
    return InvalidArgumentError("job groups: num_groups and submissions_per_group must be > 0");
  }
  if (!(options.mean_interarrival_s > 0) || !(options.mean_duration_s > 0) ||
      !(options.runtime_ratio_sigma >= 0)) {
    return InvalidArgumentError(
        "job groups: mean_interarrival_s and mean_duration_s must be > 0, runtime_ratio_sigma "
        ">= 0");
  }
  Rng rng(options.seed);
  JobGroups groups;
  for (int g = 0; g < options.num_groups; ++g) {
    const std::string name = "group-" + std::to_string(g);
    const std::string& dataset = datasets[rng.UniformInt(datasets.size())];
    std::vector<JobSubmission>& group = groups[name];
    double time_s = 0.0;
    for (int i = 0; i < options.submissions_per_group; ++i) {
      // Exponential gaps: -mean * log(U), U in (0, 1].
      time_s += -options.mean_interarrival_s * std::log(1.0 - rng.Uniform01());
      const double ratio = std::exp(options.runtime_ratio_sigma * rng.StandardNormal());
      group.push_back({name, time_s, time_s + options.mean_duration_s * ratio, dataset, ratio});
    }
  }
  return groups;
}

std::vector<const std::vector<JobSubmission>*> GroupsRunning(const JobGroups& groups,
                                                             const std::string& dataset) {
  std::vector<const std::vector<JobSubmission>*> running;
  for (const auto& [name, submissions] : groups) {
    if (!submissions.empty() && submissions.front().dataset == dataset) {
      running.push_back(&submissions);
    }
  }
  return running;
}

uint64_t GroupSeed(uint64_t seed, const std::string& group) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a.
  for (unsigned char ch : group) {
    hash ^= ch;
    hash *= 0x100000001b3ULL;
  }
  return seed ^ hash;
}

namespace {

struct InFlight {
  RunPlan plan;
  RunOutcome outcome;
  double start_time_s = 0.0;
  double end_time_s = 0.0;
  int submission = 0;
  int tries = 1;
  double runtime_ratio = 1.0;
  // The generator before the run's outcome was drawn: a replay under a
  // tighter bound draws the same epochs.
  Rng rng_before;
  // The same draw with no bound, and how long it would last: the run
  // spends at that pace, evenly, until its bound stops it.
  RunOutcome unbounded;
  double unbounded_span_s = 0.0;
  // Its submission's duration (a retry starts from it, even when this run
  // was stopped early).
  double duration_s = 0.0;
  // Stopped when a tighter bound found it already past it: its outcome is
  // what it had spent by then, and its report replays nothing.
  bool stopped_early = false;
  // Policy::RunOn was called for it, at this (kept through later replays,
  // which hold it to its run-on bound and have no verdict left to pass).
  std::optional<RunOutcome::RanOn> ran_on;
  // Stopped by a restart threshold (GroupRunRecord::restarted).
  bool restarted = false;
  // A stop decided for its next judgment, after the refresh that found it:
  // the run as it was before, so that a refresh before that judgment judges
  // it again under the bounds then, as the server would (Refresh).
  struct BeforeStop {
    RunPlan plan;
    RunOutcome outcome;
    double end_time_s = 0.0;
  };
  std::optional<BeforeStop> before_stop;
  // How many points of its (unbounded) curve it reported in flight
  // (Policy::ReportsInFlight).
  size_t reported = 0;
};

// Whether bound `limit` is tighter than `current` (no value: no bound).
bool Tighter(const std::optional<double>& limit, const std::optional<double>& current) {
  return limit.has_value() && (!current.has_value() || *limit < *current);
}

// Sets `run`'s end: a run its bound stops ends when it has spent what it
// ran, at its unbounded pace.
void SetEndTime(InFlight& run) {
  const double fraction =
      run.unbounded.cost > 0.0 ? std::clamp(run.outcome.cost / run.unbounded.cost, 0.0, 1.0) : 1.0;
  run.end_time_s = run.start_time_s + run.unbounded_span_s * (run.outcome.ran ? fraction : 0.0);
}

// Runs `run` again under bound `limit`, learning-curve limits
// `progress_limits` and run-on limit `run_on`, with the same draw of epochs.
void ReplayUnder(const JobContext& job, const std::optional<double>& limit,
                 const std::vector<ProgressPoint>& progress_limits,
                 const std::optional<double>& run_on, InFlight& run) {
  run.plan.cost_limit = limit;
  run.plan.progress_limits = progress_limits;
  run.plan.run_on_cost_limit = run_on;
  Rng replay = run.rng_before;
  run.outcome = ExecuteRun(job, run.plan, replay);
  SetEndTime(run);
}

// Restores `run`'s verdict (RunOutcome::ran_on and its point on the curve)
// after a replay under the bound it runs on to.
void KeepRanOn(InFlight& run) {
  if (!run.ran_on.has_value()) return;
  run.outcome.ran_on = run.ran_on;
  if (!run.plan.record_progress) return;
  std::vector<ProgressPoint>& curve = run.outcome.progress;
  auto at =
      std::lower_bound(curve.begin(), curve.end(), run.ran_on->at.cost,
                       [](const ProgressPoint& point, double cost) { return point.cost < cost; });
  if (at == curve.end() || at->cost != run.ran_on->at.cost) curve.insert(at, run.ran_on->at);
}

// Whether `run` (unbounded) has reached the target once it has spent
// `spent`.
bool ReachedBy(const InFlight& run, double spent) {
  return run.unbounded.reached && run.unbounded.cost <= spent;
}

// What a run (its unbounded outcome) has spent when it is next judged after
// having spent `spent`: at its next check-in (every `check_in_s` of its time
// since its last report, or since it started; 0: none) or at the report
// that ends the epoch it is in, whichever comes first; `spent` itself when
// it reports just then. `*at_check_in`: whether that is a check-in.
double NextJudgedCost(const RunOutcome& outcome, double spent, double check_in_s,
                      bool* at_check_in) {
  *at_check_in = false;
  double c0 = 0.0;
  double c1 = outcome.first_epoch_cost;
  double t0 = 0.0;
  double t1 = outcome.first_epoch_time_s;
  if (spent >= outcome.first_epoch_cost && outcome.epoch_cost > 0.0) {
    const double epochs = std::ceil((spent - outcome.first_epoch_cost) / outcome.epoch_cost - 1e-9);
    c1 = outcome.first_epoch_cost + epochs * outcome.epoch_cost;
    t1 = outcome.first_epoch_time_s + epochs * outcome.epoch_time_s;
    c0 = c1 - outcome.epoch_cost;
    t0 = t1 - outcome.epoch_time_s;
  }
  // (Costs within this of a report's are that report's: the epochs'
  // costs here and in the outcome's curve round differently.)
  const double slack = 1e-9 * c1;
  double next = c1;
  if (check_in_s > 0.0 && c1 > c0 && t1 > t0 && spent < c1 - slack) {
    const double spent_s = t0 + (spent - c0) / (c1 - c0) * (t1 - t0);
    const double check_ins = std::max(1.0, std::ceil((spent_s - t0) / check_in_s));
    const double at_s = t0 + check_ins * check_in_s;
    if (at_s < t1) next = c0 + (at_s - t0) / (t1 - t0) * (c1 - c0);
  }
  if (next >= c1 - slack) {
    // A report: the run's own last one when that is its end.
    return c1 >= outcome.cost - slack ? outcome.cost : c1;
  }
  if (next >= outcome.cost) return outcome.cost;
  *at_check_in = true;
  return next;
}

// Stops in-flight `run` at `now_s`, when it has run `fraction` of its
// unbounded span, at a check-in (`at_check_in`) or a report: it spent that
// fraction of its unbounded outcome, did not reach the target, and reports
// nothing more (stopped_early).
void StopAt(double now_s, double fraction, bool at_check_in, InFlight& run) {
  run.outcome.energy_j = run.unbounded.energy_j * fraction;
  run.outcome.time_s = run.unbounded.time_s * fraction;
  run.outcome.cost = run.unbounded.cost * fraction;
  run.outcome.reached = false;
  // Its curve up to now (the policy tells a curve stop from it).
  run.outcome.progress.clear();
  for (const ProgressPoint& point : run.unbounded.progress) {
    if (point.cost > run.outcome.cost) break;
    run.outcome.progress.push_back(point);
  }
  // A report stopped it: its point (a check-in tells no progress).
  if (run.plan.record_progress && !at_check_in) {
    const double progress =
        run.outcome.progress.empty() ? 0.0 : run.outcome.progress.back().progress;
    run.outcome.progress.push_back({run.outcome.cost, progress});
  }
  run.end_time_s = now_s;
  run.stopped_early = true;
  run.outcome.stopped_at_check_in = at_check_in;
}

// The best progress `run` (unbounded) had reported once it had spent
// `cost`: kNoProgress before its first report.
double ReportedProgress(const InFlight& run, double cost) {
  double progress = kNoProgress;
  for (const ProgressPoint& point : run.unbounded.progress) {
    if (point.cost > cost + 1e-9 * cost) break;
    progress = point.progress;
  }
  return progress;
}

// The point of `run`'s curve (unbounded) where it first reported its best
// progress before its judgment at cost `cost` (a report at `cost` itself
// is that judgment); nullopt before its first report.
std::optional<ProgressPoint> BestReportBefore(const InFlight& run, double cost) {
  std::optional<ProgressPoint> best;
  for (const ProgressPoint& point : run.unbounded.progress) {
    if (!(point.cost < cost - 1e-9 * cost)) break;
    best = point;
  }
  return best;
}

// The curve limit (`progress_limits`) that `run`'s check-ins after it has
// spent `spent` hold it to until its next report, after the curve changed
// (BatchSizeOptimizer::CheckInThreshold): at kNoProgress before its first
// report; after one, at its progress then, only when it got there slower
// than the curve allows. nullopt: its whole bound alone.
std::optional<double> CheckInCurve(const InFlight& run,
                                   const std::vector<ProgressPoint>& progress_limits,
                                   double spent) {
  const double progress = ReportedProgress(run, spent);
  if (progress != kNoProgress &&
      !ReachedSlowerThan(progress_limits, run.unbounded.progress, progress, 1.0)) {
    return std::nullopt;
  }
  return ProgressBound(progress_limits, progress, 1.0);
}

// Holds in-flight `run` to the bound `policy` now gives it, at time `now_s`,
// as `zeus serve` does at the run's next check-in or report (its next
// judgment, NextJudgedCost): when the bound is tighter than the one it runs
// under and the run's cost then (its cost spread evenly over its duration)
// passes it, the run stops there having spent that (not reached,
// stopped_early); otherwise, and when the bound loosened (swarm's walk step
// once outbid from further along), it goes on under the new bound
// (replayed with the same draw of epochs). A run that has not started yet
// (or could not) spends nothing and is replayed.
Status RefreshBound(const JobContext& job, Policy& policy, double now_s, InFlight& run) {
  std::optional<double> limit = policy.CostLimitAtReport(run.plan);
  std::vector<ProgressPoint> progress_limits = policy.ProgressLimitsAtReport(run.plan);
  std::optional<double> run_on = policy.RunOnLimitAtReport(run.plan);
  const double fraction =
      run.unbounded_span_s > 0.0
          ? std::clamp((now_s - run.start_time_s) / run.unbounded_span_s, 0.0, 1.0)
          : 0.0;
  // What it has spent by now (its unbounded cost, evenly over its span), and
  // when it is next judged.
  const double spent = run.unbounded.cost * fraction;
  bool check_in = false;
  const double judged = NextJudgedCost(run.unbounded, spent, job.check_in_s, &check_in);
  const InFlight::BeforeStop before{run.plan, run.outcome, run.end_time_s};
  // Stops it when it has spent `cost`, at a check-in or a report.
  const auto stop_having_spent = [&](double cost, bool at_check_in) {
    const double stop_fraction = run.unbounded.cost > 0.0 ? cost / run.unbounded.cost : 0.0;
    StopAt(run.start_time_s + run.unbounded_span_s * stop_fraction, stop_fraction, at_check_in,
           run);
    if (run.end_time_s > now_s) run.before_stop = before;
  };
  // Bounds that changed since its last report stop it at its judgment at
  // `cost` (a check-in: `at_check_in`), unless the policy lets it finish
  // there (Policy::FinishLimitAtReport): then it goes on under the bounds
  // the policy gives it from now on.
  // (Its points up to now were reported before the bounds changed.)
  const auto try_finish = [&](double cost) -> StatusOr<bool> {
    const std::optional<ProgressPoint> best = BestReportBefore(run, cost);
    if (ReachedBy(run, cost) || !best.has_value() ||
        !policy.FinishLimitAtReport(run.plan, *best, cost).has_value()) {
      return false;
    }
    ZEUS_RETURN_IF_ERROR(policy.Finish(run.plan, *best, cost));
    ReplayUnder(job, policy.CostLimitAtReport(run.plan), policy.ProgressLimitsAtReport(run.plan),
                policy.RunOnLimitAtReport(run.plan), run);
    KeepRanOn(run);
    run.plan.progress_limits_from_cost = std::max(run.plan.progress_limits_from_cost, spent);
    run.end_time_s = std::max(run.end_time_s, now_s);
    return true;
  };
  const auto stop_or_finish = [&](double cost, bool at_check_in) -> Status {
    ZEUS_ASSIGN_OR_RETURN(const bool finished, try_finish(cost));
    if (!finished) stop_having_spent(cost, at_check_in);
    return Status::Ok();
  };
  // Judged against a restart threshold at its next judgment: below it, it
  // stops there, so that its submission restarts at a cheaper size; past
  // it, what it reported so far came before the threshold existed.
  if (const std::optional<double> restart = policy.RestartThresholdAtReport(run.plan);
      restart.has_value() && run.outcome.ran && run.unbounded.cost > 0.0 &&
      !ReachedBy(run, spent)) {
    if (judged < *restart && !ReachedBy(run, judged)) {
      stop_having_spent(judged, check_in);
      run.restarted = true;
      return Status::Ok();
    }
    run.plan.progress_limits_from_cost = std::max(run.plan.progress_limits_from_cost, spent);
  }
  if (limit == run.plan.cost_limit && progress_limits == run.plan.progress_limits &&
      run_on == run.plan.run_on_cost_limit) {
    return Status::Ok();
  }
  // (A near miss past a bound that tightened under it stops too: the
  // server's next report, with the run's curve, could let it run on.)
  if (Tighter(limit, run.plan.cost_limit) && run.outcome.ran && fraction > 0.0 && judged > *limit) {
    run.plan.cost_limit = limit;
    run.plan.progress_limits = std::move(progress_limits);
    run.plan.run_on_cost_limit = run_on;
    return stop_or_finish(judged, check_in);
  }
  // New learning-curve limits hold the run at once: its check-ins until its
  // next report judge its progress so far against them where CheckInCurve
  // says (its progress then was not judged against them), and that report
  // its progress then. Past them at one, it stops there having spent that;
  // otherwise they apply to its epochs after now.
  if (progress_limits != run.plan.progress_limits && run.outcome.ran && fraction > 0.0) {
    bool never_a_check_in = false;
    const double reported = NextJudgedCost(run.unbounded, spent, 0.0, &never_a_check_in);
    if (const std::optional<double> curve = CheckInCurve(run, progress_limits, spent);
        curve.has_value() && job.check_in_s > 0.0) {
      // The first check-in past the curve (one just at it does not pass it).
      bool at_check_in = false;
      const double stop = NextJudgedCost(
          run.unbounded,
          std::max(spent, std::nextafter(*curve, std::numeric_limits<double>::infinity())),
          job.check_in_s, &at_check_in);
      if (at_check_in && stop > *curve && stop < reported && !ReachedBy(run, stop)) {
        run.plan.cost_limit = limit;
        run.plan.progress_limits = std::move(progress_limits);
        run.plan.run_on_cost_limit = run_on;
        return stop_or_finish(stop, true);
      }
    }
    const std::optional<double> curve =
        ProgressBound(progress_limits, ReportedProgress(run, reported), 1.0);
    if (curve.has_value() && reported > *curve && !ReachedBy(run, reported)) {
      run.plan.cost_limit = limit;
      run.plan.progress_limits = std::move(progress_limits);
      run.plan.run_on_cost_limit = run_on;
      return stop_or_finish(reported, false);
    }
    // (A run that ran on has no curve left: nothing to judge from here.)
    if (!progress_limits.empty()) run.plan.progress_limits_from_cost = spent;
  }
  ReplayUnder(job, limit, progress_limits, run_on, run);
  KeepRanOn(run);
  // Stopped by the new bounds before its next report: it may finish there.
  if (run.outcome.ran && !run.outcome.reached && !run.outcome.ran_on.has_value() &&
      fraction > 0.0 && run.outcome.cost > spent &&
      run.outcome.cost < run.unbounded.cost * (1.0 - 1e-9)) {
    bool never_a_check_in = false;
    const double next_report = NextJudgedCost(run.unbounded, spent, 0.0, &never_a_check_in);
    if (run.outcome.cost <= next_report * (1.0 + 1e-9)) {
      ZEUS_ASSIGN_OR_RETURN(const bool finished, try_finish(run.outcome.cost));
      if (finished) return Status::Ok();
    }
  }
  // Stopped between two epochs' worth of its pace: it stops at this report.
  run.end_time_s = std::max(run.end_time_s, now_s);
  return Status::Ok();
}

// RefreshBound for in-flight `run` at `now_s`, and for one a refresh
// stopped at a judgment still to come: judged again from before that stop
// under the bounds now (the server judges that check-in or report then).
Status Refresh(const JobContext& job, Policy& policy, double now_s, InFlight& run) {
  if (run.stopped_early) {
    if (!run.before_stop.has_value() || run.end_time_s <= now_s) return Status::Ok();
    run.plan = run.before_stop->plan;
    run.outcome = run.before_stop->outcome;
    run.end_time_s = run.before_stop->end_time_s;
    run.stopped_early = false;
    run.restarted = false;
    run.before_stop.reset();
  }
  return RefreshBound(job, policy, now_s, run);
}

}  // namespace

StatusOr<std::vector<GroupRunRecord>> SimulateJobGroup(
    const Workload& workload, Policy& policy, const std::vector<JobSubmission>& submissions,
    const SimulationOptions& options, SubmissionTally* tally) {
  ZEUS_RETURN_IF_ERROR(options.Validate());
  ZEUS_RETURN_IF_ERROR(ValidateWorkload(workload));
  for (size_t i = 0; i < submissions.size(); ++i) {
    const JobSubmission& s = submissions[i];
    if (!(std::abs(s.start_time_s) <= kMaxGroupTimeS && std::abs(s.end_time_s) <= kMaxGroupTimeS &&
          s.end_time_s >= s.start_time_s && s.runtime_ratio >= kMinRuntimeRatio &&
          s.runtime_ratio <= kMaxRuntimeRatio)) {
      return InvalidArgumentError(
          "job group '" + s.group + "': submission " + std::to_string(i) +
          ": start_time_s and end_time_s must be in [-1e12, 1e12] with end >= start and "
          "runtime_ratio in [1e-6, 1e6], got " +
          std::to_string(s.start_time_s) + ", " + std::to_string(s.end_time_s) + ", " +
          std::to_string(s.runtime_ratio));
    }
  }
  const JobContext job = options.ContextFor(workload);
  // kScaled: a run lasts its submission's duration x its time / this.
  double default_time_s = 0.0;
  if (options.group_run_time == GroupRunTime::kScaled) {
    StatusOr<ExpectedRun> default_run = DefaultRun(job);
    if (!default_run.ok()) {
      return Status(default_run.status().code(),
                    "job groups: runs last their time relative to the default batch size's "
                    "(--group-run-time scaled): " +
                        default_run.status().message());
    }
    default_time_s = default_run->time_s;
  }
  Rng rng(options.seed ^ 0x5851f42d4c957f2dULL);
  std::vector<InFlight> running;
  std::vector<GroupRunRecord> records;
  // Per submission: reached the target or had a try that may finish; tries.
  std::vector<bool> served(submissions.size(), false);
  std::vector<int> tries_of(submissions.size(), 0);
  // The time of the latest event the policy was told of.
  double clock_s = -std::numeric_limits<double>::infinity();

  auto launch = [&](int submission, int tries, double start_s, double end_s, double ratio) {
    InFlight run;
    run.plan = policy.Next(tries);
    served[static_cast<size_t>(submission)] =
        served[static_cast<size_t>(submission)] || run.plan.may_finish;
    tries_of[static_cast<size_t>(submission)] = tries;
    run.rng_before = rng;
    RunPlan unbounded_plan = run.plan;
    unbounded_plan.cost_limit.reset();
    unbounded_plan.progress_limits.clear();
    // Its curve tells its progress at any time (RefreshBound).
    unbounded_plan.record_progress = true;
    Rng unbounded_rng = rng;
    run.unbounded = ExecuteRun(job, unbounded_plan, unbounded_rng);
    run.outcome = ExecuteRun(job, run.plan, rng);
    run.start_time_s = start_s;
    run.submission = submission;
    run.tries = tries;
    run.runtime_ratio = ratio;
    run.duration_s = end_s - start_s;
    run.unbounded_span_s = options.group_run_time == GroupRunTime::kScaled && default_time_s > 0.0
                               ? run.duration_s * run.unbounded.time_s / default_time_s
                               : run.duration_s;
    SetEndTime(run);
    running.push_back(run);
  };
  // When in-flight `run` passes its bound as a near miss and runs on (the
  // end of that epoch; infinity when it does not, or already did).
  auto run_on_time = [](const InFlight& run) {
    if (run.ran_on.has_value() || run.stopped_early || !run.outcome.ran_on.has_value() ||
        !(run.unbounded.cost > 0.0)) {
      return std::numeric_limits<double>::infinity();
    }
    return run.start_time_s +
           run.unbounded_span_s *
               std::clamp(run.outcome.ran_on->at.cost / run.unbounded.cost, 0.0, 1.0);
  };
  // When in-flight `run` next reports an epoch the policy wants to hear of
  // as it happens (Policy::ReportsInFlight; not the report that ends it);
  // infinity when none.
  auto report_time = [&](const InFlight& run) {
    const std::vector<ProgressPoint>& curve = run.unbounded.progress;
    if (!run.outcome.ran || run.reported >= curve.size() || !(run.unbounded.cost > 0.0) ||
        !(curve[run.reported].cost < run.outcome.cost * (1.0 - 1e-9)) ||
        !policy.ReportsInFlight(run.plan)) {
      return std::numeric_limits<double>::infinity();
    }
    return run.start_time_s +
           run.unbounded_span_s *
               std::clamp(curve[run.reported].cost / run.unbounded.cost, 0.0, 1.0);
  };
  // Finishes every run that ends by `now`, earliest first, and tells the
  // policy of every run that runs on past its bound by then, and of the
  // in-flight reports it wants, as they happen; retries start at their
  // predecessor's end and may themselves end by `now`.
  auto reap = [&](double now) -> Status {
    while (true) {
      auto next = std::min_element(
          running.begin(), running.end(),
          [](const InFlight& a, const InFlight& b) { return a.end_time_s < b.end_time_s; });
      auto runs_on = std::min_element(
          running.begin(), running.end(),
          [&](const InFlight& a, const InFlight& b) { return run_on_time(a) < run_on_time(b); });
      auto reports = std::min_element(
          running.begin(), running.end(),
          [&](const InFlight& a, const InFlight& b) { return report_time(a) < report_time(b); });
      // (A report time is finite: the final reap, at infinity, reaches none.)
      const double report_s = reports != running.end() ? report_time(*reports)
                                                       : std::numeric_limits<double>::infinity();
      if (report_s < std::numeric_limits<double>::infinity() && report_s <= now &&
          (next == running.end() || report_s <= next->end_time_s) &&
          report_s <= run_on_time(*runs_on)) {
        // (A run that became the policy's interest late, such as a
        // speculative run the walk adopted as its step, tells its earlier
        // epochs now.)
        const double at = std::max(report_s, clock_s);
        clock_s = at;
        const ProgressPoint point = reports->unbounded.progress[reports->reported++];
        ZEUS_RETURN_IF_ERROR(policy.ReportProgress(reports->plan, point));
        // Its curve may bound other runs in flight from now on.
        for (InFlight& run : running) ZEUS_RETURN_IF_ERROR(Refresh(job, policy, at, run));
        continue;
      }
      if (runs_on != running.end() && run_on_time(*runs_on) <= now &&
          (next == running.end() || run_on_time(*runs_on) <= next->end_time_s)) {
        const double at = run_on_time(*runs_on);
        clock_s = std::max(clock_s, at);
        runs_on->ran_on = runs_on->outcome.ran_on;
        ZEUS_RETURN_IF_ERROR(policy.RunOn(runs_on->plan, runs_on->ran_on->progress_within));
        // Its run on goes on under beta: it may finish.
        served[static_cast<size_t>(runs_on->submission)] = true;
        // Its verdict may change the bounds of every run in flight, its own
        // first (a concurrent run's now).
        for (InFlight& run : running) ZEUS_RETURN_IF_ERROR(Refresh(job, policy, at, run));
        continue;
      }
      if (next == running.end() || next->end_time_s > now) return Status::Ok();
      InFlight done = *next;
      running.erase(next);
      clock_s = std::max(clock_s, done.end_time_s);
      // Held to the bound in force when it reports (Policy::CostLimitAtReport).
      const std::optional<double> limit = policy.CostLimitAtReport(done.plan);
      // (Its learning-curve limits, refreshed at each report of another run,
      // do not judge its epochs again: its last report ends it either way.)
      if (!done.stopped_early && limit != done.plan.cost_limit) {
        ReplayUnder(job, limit, done.plan.progress_limits, policy.RunOnLimitAtReport(done.plan),
                    done);
        KeepRanOn(done);
        // Past its new bound as a near miss: it runs on there, as its
        // reports replayed at once tell the server.
        if (done.outcome.ran_on.has_value() && !done.ran_on.has_value()) {
          done.ran_on = done.outcome.ran_on;
          ZEUS_RETURN_IF_ERROR(policy.RunOn(done.plan, done.ran_on->progress_within));
          served[static_cast<size_t>(done.submission)] = true;
        }
      }
      ZEUS_RETURN_IF_ERROR(policy.Observe(done.plan, done.outcome));
      // The report may tighten the bound of runs still in flight, as the
      // server's next per-epoch report of each would see it.
      for (InFlight& run : running) {
        ZEUS_RETURN_IF_ERROR(Refresh(job, policy, done.end_time_s, run));
      }
      if (done.outcome.ran) {
        GroupRunRecord record;
        record.run = {done.submission,
                      done.plan.batch_size,
                      done.plan.power_limit_w,
                      done.outcome.energy_j * done.runtime_ratio,
                      done.outcome.time_s * done.runtime_ratio,
                      done.outcome.reached,
                      done.outcome.cost * done.runtime_ratio,
                      done.plan.kind,
                      done.ran_on.has_value()};
        record.start_time_s = done.start_time_s;
        record.end_time_s = done.end_time_s;
        record.attempt = done.tries;
        record.stopped_early = done.stopped_early;
        record.restarted = done.restarted;
        records.push_back(record);
      }
      if (done.outcome.reached) served[static_cast<size_t>(done.submission)] = true;
      if (!done.outcome.reached && done.tries < options.max_tries) {
        launch(done.submission, done.tries + 1, done.end_time_s, done.end_time_s + done.duration_s,
               done.runtime_ratio);
      }
    }
  };

  for (size_t i = 0; i < submissions.size(); ++i) {
    const JobSubmission& s = submissions[i];
    ZEUS_RETURN_IF_ERROR(reap(s.start_time_s));
    clock_s = std::max(clock_s, s.start_time_s);
    launch(static_cast<int>(i), 1, s.start_time_s, s.end_time_s, s.runtime_ratio);
  }
  ZEUS_RETURN_IF_ERROR(reap(std::numeric_limits<double>::infinity()));
  if (tally != nullptr) {
    for (size_t i = 0; i < submissions.size(); ++i) tally->Add(served[i], tries_of[i]);
  }
  return records;
}

}  // namespace zeus
