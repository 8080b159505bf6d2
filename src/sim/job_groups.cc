#include "zeus/sim/job_groups.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>

#include "zeus/core/rng.h"
#include "zeus/util/csv.h"

#include "src/sim/judged_run.h"

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
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, ReadTraceFile(path));
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

// A run in flight in a group simulation.
struct Live {
  RunPlan plan;
  int submission = 0;
  int tries = 1;
  double runtime_ratio = 1.0;
  double start_time_s = 0.0;
  // Its submission's duration (a retry starts from it, even when this run
  // was stopped early), and how long this run would take to its natural
  // end (GroupRunTime).
  double duration_s = 0.0;
  double span_s = 0.0;
  // A run its policy does not judge: its outcome, drawn at launch, and when
  // it ends (when it has spent that, at its unbounded pace).
  RunOutcome outcome;
  double end_time_s = 0.0;
  // A judged run (RunPlan::judged): where it is, its next point and when.
  std::optional<JudgedRun> judged;
  JudgedPoint next;
  double next_time_s = 0.0;
  bool ran_on = false;

  // When it is next judged, or ends.
  double EventTime() const { return judged ? next_time_s : end_time_s; }
  // The wall time at which a judged run has spent `cost`: its full cost
  // spread evenly over its span.
  double TimeAt(double cost) const {
    const double full = judged->full_cost();
    return start_time_s + span_s * (full > 0.0 ? std::clamp(cost / full, 0.0, 1.0) : 1.0);
  }
  // Its run time (trace seconds) by wall time `now_s`.
  double RunTimeAt(double now_s) const {
    const double fraction =
        span_s > 0.0 ? std::clamp((now_s - start_time_s) / span_s, 0.0, 1.0) : 1.0;
    return judged->TimeAt(judged->meter().EpochsAt(fraction * judged->full_cost()));
  }
  void SetNext(const JudgedPoint& point) {
    next = point;
    next_time_s = TimeAt(point.cost);
  }
};

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
  std::vector<Live> running;
  std::vector<GroupRunRecord> records;
  // Per submission: reached the target or had a try that may finish; tries.
  std::vector<bool> served(submissions.size(), false);
  std::vector<int> tries_of(submissions.size(), 0);
  // How long a run to its natural end lasts: its submission's duration,
  // scaled by its time relative to the default's under kScaled.
  const auto span_of = [&](double duration_s, double full_time_s) {
    return options.group_run_time == GroupRunTime::kScaled && default_time_s > 0.0
               ? duration_s * full_time_s / default_time_s
               : duration_s;
  };
  // The policy's state changed at `now_s`: every judged run but `except`
  // is judged afresh at its first check-in after now (else its next
  // report), as the server would judge its next check-in against the new
  // bounds.
  const auto rejudge = [&](double now_s, const Live* except = nullptr) {
    for (Live& run : running) {
      if (run.judged && &run != except) {
        run.SetNext(run.judged->NextAfter(run.RunTimeAt(now_s)));
      }
    }
  };
  // Hands out a run (a change of the policy's state, see rejudge).
  const auto launch = [&](int submission, int tries, double start_s, double end_s, double ratio) {
    Live run;
    run.plan = policy.Next(tries);
    run.submission = submission;
    run.tries = tries;
    run.runtime_ratio = ratio;
    run.start_time_s = start_s;
    run.duration_s = end_s - start_s;
    served[static_cast<size_t>(submission)] =
        served[static_cast<size_t>(submission)] || run.plan.may_finish;
    tries_of[static_cast<size_t>(submission)] = tries;
    if (run.plan.judged) {
      run.judged.emplace(job, run.plan, rng);
      run.span_s = span_of(run.duration_s, run.judged->full_time_s());
      run.SetNext(run.judged->Next());
    } else {
      // The same draw with no bound tells how long the run would last.
      RunPlan unbounded_plan = run.plan;
      unbounded_plan.cost_limit.reset();
      unbounded_plan.progress_limits.clear();
      unbounded_plan.record_progress = true;
      Rng unbounded_rng = rng;
      const RunOutcome unbounded = ExecuteRun(job, unbounded_plan, unbounded_rng);
      run.outcome = ExecuteRun(job, run.plan, rng);
      run.span_s = span_of(run.duration_s, unbounded.time_s);
      const double fraction =
          unbounded.cost > 0.0 ? std::clamp(run.outcome.cost / unbounded.cost, 0.0, 1.0) : 1.0;
      run.end_time_s = start_s + run.span_s * (run.outcome.ran ? fraction : 0.0);
    }
    running.push_back(std::move(run));
    rejudge(start_s);
  };
  // Ends `done` (out of `running`) with `outcome` at `end_s`: the policy
  // observes it, it is recorded, and a run that missed the target is retried
  // from its end with its submission's duration.
  const auto end_run = [&](Live done, RunOutcome outcome, double end_s, bool stopped,
                           bool restarted) -> Status {
    ZEUS_RETURN_IF_ERROR(policy.Observe(done.plan, outcome));
    if (outcome.ran) {
      GroupRunRecord record;
      record.run = {done.submission,
                    done.plan.batch_size,
                    done.plan.power_limit_w,
                    outcome.energy_j * done.runtime_ratio,
                    outcome.time_s * done.runtime_ratio,
                    outcome.reached,
                    outcome.cost * done.runtime_ratio,
                    done.plan.kind,
                    done.ran_on};
      record.start_time_s = done.start_time_s;
      record.end_time_s = end_s;
      record.attempt = done.tries;
      record.stopped_early = stopped;
      record.restarted = restarted;
      records.push_back(record);
    }
    if (outcome.reached) served[static_cast<size_t>(done.submission)] = true;
    if (!outcome.reached && done.tries < options.max_tries) {
      launch(done.submission, done.tries + 1, end_s, end_s + done.duration_s, done.runtime_ratio);
    } else {
      rejudge(end_s);
    }
    return Status::Ok();
  };
  // The time of the latest event: a judged point computed before a state
  // change may fall a rounding error before it.
  double clock_s = -std::numeric_limits<double>::infinity();
  // Handles every event up to `now`, earliest first (launch order on ties).
  const auto reap = [&](double now) -> Status {
    while (true) {
      auto it = std::min_element(running.begin(), running.end(), [](const Live& a, const Live& b) {
        return a.EventTime() < b.EventTime();
      });
      if (it == running.end() || it->EventTime() > now) return Status::Ok();
      const double at_s = std::max(clock_s, it->EventTime());
      clock_s = at_s;
      if (!it->judged) {
        Live done = std::move(*it);
        running.erase(it);
        const RunOutcome outcome = done.outcome;
        ZEUS_RETURN_IF_ERROR(end_run(std::move(done), outcome, at_s, false, false));
        continue;
      }
      Live& run = *it;
      const JudgedPoint point = run.next;
      ZEUS_ASSIGN_OR_RETURN(const Verdict verdict, policy.Judge(run.plan, ObservationAt(point)));
      run.judged->MoveTo(point);
      if (verdict.ran_on_to.has_value()) {
        run.ran_on = true;
        // It runs on under beta: it may finish.
        served[static_cast<size_t>(run.submission)] = true;
      }
      if (verdict.stops() || (point.report && point.last)) {
        Live done = std::move(run);
        running.erase(it);
        const RunOutcome outcome = done.judged->OutcomeAt(point, point.reached && !verdict.stops());
        ZEUS_RETURN_IF_ERROR(end_run(std::move(done), outcome, at_s, verdict.stops(),
                                     verdict.action == Verdict::Action::kRestart));
        continue;
      }
      // After a report, or a verdict that changed the bounds, the next
      // check-in is judged afresh; otherwise the first one past its bound.
      run.SetNext(point.report || verdict.state_changed ? run.judged->Next()
                                                        : run.judged->NextPast(verdict.cost_bound));
      if (verdict.state_changed) rejudge(at_s, &run);
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
