#include "zeus/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "zeus/core/cost.h"

#include "src/sim/judged_run.h"
#include "src/sim/settled_configuration.h"

namespace zeus {

std::string_view GroupRunTimeName(GroupRunTime model) {
  return model == GroupRunTime::kScaled ? "scaled" : "submission";
}

StatusOr<GroupRunTime> ParseGroupRunTime(std::string_view name) {
  for (GroupRunTime model : {GroupRunTime::kScaled, GroupRunTime::kSubmission}) {
    if (name == GroupRunTimeName(model)) return model;
  }
  return InvalidArgumentError("group run time: expected 'scaled' or 'submission', got '" +
                              std::string(name) + "'");
}

Status SimulationOptions::Validate() const {
  if (!(eta >= 0.0 && eta <= 1.0)) {
    return InvalidArgumentError("simulation options: field 'eta': must be in [0, 1], got " +
                                std::to_string(eta));
  }
  if (beta.has_value() && !(std::isfinite(*beta) && *beta > 0)) {
    return InvalidArgumentError("simulation options: field 'beta': must be finite and > 0, got " +
                                std::to_string(*beta));
  }
  if (num_recurrences < 0) {
    return InvalidArgumentError(
        "simulation options: field 'num_recurrences': must be >= 0 (0 = default), got " +
        std::to_string(num_recurrences));
  }
  if (max_tries <= 0) {
    return InvalidArgumentError("simulation options: field 'max_tries': must be > 0, got " +
                                std::to_string(max_tries));
  }
  if (!(std::isfinite(check_in_s) && check_in_s >= 0.0)) {
    return InvalidArgumentError(
        "simulation options: field 'check_in_s': must be finite and >= 0 (0 = per-epoch reports "
        "only), got " +
        std::to_string(check_in_s));
  }
  return Status::Ok();
}

JobContext SimulationOptions::ContextFor(const Workload& workload) const {
  JobContext job;
  job.workload = &workload;
  job.eta = eta;
  job.beta = beta;
  job.seed = seed;
  job.check_in_s = check_in_s;
  job.nonbinding_margin = nonbinding_margin;
  return job;
}

int SimulationOptions::RecurrencesOf(const Workload& workload) const {
  return num_recurrences > 0 ? num_recurrences : DefaultRecurrences(workload);
}

double JobContext::Cost(double energy_j, double time_s) const {
  return ZeusCost(energy_j, time_s, eta, workload->max_power_w);
}

int DefaultRecurrences(const Workload& workload) {
  // In 64 bits: a trace of 46341 batch sizes and as many limits would
  // overflow an int.
  const uint64_t recurrences =
      uint64_t{2} * workload.batch_sizes.size() * workload.power_limits_w.size();
  return static_cast<int>(std::min<uint64_t>(recurrences, std::numeric_limits<int>::max()));
}

namespace {

// The exact rule (RunPlan::exact_cost_limit) of a plan's fixed limits: the
// run is judged at each epoch's report and at each check-in between them
// (every check_in_s of its time since its last report), as `zeus serve`
// judges a client that checks in. A judgment whose cost so far passes its
// whole limit stops the run there, and so does a report past the curve
// limit at its progress, or a check-in before its first report past the
// curve's first point. `end` epochs: the target (`reaches`) or max_epochs.
RunOutcome ExecuteLimitedRun(const JobContext& job, const RunPlan& plan,
                             const BatchSizeTrace& trace, size_t seed_run, const RunMeter& meter,
                             double end, bool reaches) {
  RunOutcome outcome;
  const bool track = (plan.record_progress || !plan.progress_limits.empty()) &&
                     end <= static_cast<double>(kMaxProgressPoints);
  const double whole = plan.cost_limit.value_or(std::numeric_limits<double>::infinity());
  // Progress after `e` epochs: the milestones reached by then, plus one at
  // the target when the run reaches it.
  const auto progress_after = [&](double e, bool reached) {
    double progress = 0.0;
    if (seed_run < trace.milestone_epochs.size()) {
      for (const std::optional<double>& at : trace.milestone_epochs[seed_run]) {
        progress += at.has_value() && *at <= e;
      }
    }
    return progress + (reached && e >= end ? 1.0 : 0.0);
  };
  double done = 0.0;  // Epochs reported.
  // The cost past which a check-in stops the run: before its first report,
  // its curve's too.
  const auto check_in_limit = [&] {
    if (done == 0.0 && track) {
      const std::optional<double> curve = ProgressBound(plan.progress_limits, kNoProgress, 1.0);
      if (curve.has_value()) return std::min(whole, *curve);
    }
    return whole;
  };
  const double check_in_s = job.check_in_s;
  double recorded = -1.0;
  std::optional<double> stop;  // Epochs at which it stopped.
  while (done < end && !stop.has_value()) {
    const double next = std::min(done + 1.0, end);
    const double c0 = meter.Cost(done);
    const double c1 = meter.Cost(next);
    const double t0 = meter.Time(done);
    const double t1 = meter.Time(next);
    // The first check-in of this epoch past its limit, if any.
    const double limit = check_in_limit();
    if (check_in_s > 0.0 && c1 > c0 && t1 > t0 && c1 > limit) {
      const double passes_s = c0 >= limit ? t0 : t0 + (limit - c0) / (c1 - c0) * (t1 - t0);
      const double at_s = t0 + (std::floor((passes_s - t0) / check_in_s) + 1.0) * check_in_s;
      if (at_s < t1) {
        stop = done + (at_s - t0) / (t1 - t0) * (next - done);
        outcome.stopped_at_check_in = true;
        break;
      }
    }
    // The report after epoch `next`.
    const bool at_target = reaches && next >= end;
    const double cost = c1;
    const double progress = progress_after(next, reaches);
    if (cost > whole) {
      stop = next;
      break;
    }
    if (!at_target && track) {
      const std::optional<double> curve = ProgressBound(plan.progress_limits, progress, 1.0);
      if (curve.has_value() && cost > *curve) {
        stop = next;
        break;
      }
    }
    if (plan.record_progress && track && progress > recorded) {
      outcome.progress.push_back({cost, progress});
      recorded = progress;
    }
    done = next;
  }
  const double epochs = stop.value_or(end);
  outcome.reached = reaches && !stop.has_value();
  outcome.cost = meter.Spent(epochs, &outcome.energy_j, &outcome.time_s);
  // A stopped run's last report is a point of its curve too (a check-in
  // tells no progress).
  if (plan.record_progress && track && !outcome.stopped_at_check_in &&
      (outcome.progress.empty() || outcome.progress.back().cost < outcome.cost)) {
    outcome.progress.push_back({outcome.cost, progress_after(epochs, outcome.reached)});
  }
  return outcome;
}

}  // namespace

RunOutcome ExecuteRun(const JobContext& job, const RunPlan& plan, Rng& rng) {
  const Workload& workload = *job.workload;
  const BatchSizeTrace* trace = workload.Find(plan.batch_size);
  ZEUS_CHECK(trace != nullptr);
  const PowerPoint* point = trace->At(plan.power_limit_w);
  ZEUS_CHECK(point != nullptr);
  const size_t seed_run = rng.UniformInt(trace->target_epochs.size());
  const std::optional<double>& target_epoch = trace->target_epochs[seed_run];

  double max_epochs = workload.job.max_epochs;
  const RunMeter meter = RunMeter::Of(job, *trace, *point, plan.profile_power);
  if (!plan.exact_cost_limit && plan.cost_limit.has_value()) {
    // The per-epoch cost weighs time at this batch size's maximum power limit
    // (as the original simulator does), not at the whole trace's.
    const double cost_per_epoch =
        ZeusCost(point->energy_per_epoch_j(), point->time_per_epoch_s, job.eta,
                 MaxPowerW(trace->max_power_limit_w(), /*num_gpus=*/1));
    max_epochs = std::min(std::floor(*plan.cost_limit / cost_per_epoch), max_epochs);
  }
  RunOutcome outcome;
  if (max_epochs <= 0) {
    outcome.ran = false;
    return outcome;
  }
  const bool reaches = target_epoch.has_value() && *target_epoch <= max_epochs;
  const double epochs = reaches ? *target_epoch : max_epochs;
  if (plan.exact_cost_limit || plan.record_progress || !plan.progress_limits.empty()) {
    RunPlan judged = plan;
    // (An approximate limit is in max_epochs already.)
    if (!plan.exact_cost_limit) judged.cost_limit.reset();
    return ExecuteLimitedRun(job, judged, *trace, seed_run, meter, epochs, reaches);
  }
  outcome.reached = reaches;
  outcome.cost = meter.Spent(epochs, &outcome.energy_j, &outcome.time_s);
  return outcome;
}

RunOutcome ExecuteRun(const Workload& workload, const RunPlan& plan, double eta, Rng& rng) {
  JobContext job;
  job.workload = &workload;
  job.eta = eta;
  return ExecuteRun(job, plan, rng);
}

void SubmissionTally::Add(bool reached_or_may_finish, int tries) {
  ++submissions;
  if (!reached_or_may_finish) ++abandoned;
  most_tries = std::max(most_tries, tries);
}

void SubmissionTally::Merge(const SubmissionTally& other) {
  submissions += other.submissions;
  abandoned += other.abandoned;
  most_tries = std::max(most_tries, other.most_tries);
}

StatusOr<std::vector<RunRecord>> SimulateRecurringJob(const Workload& workload, Policy& policy,
                                                      const SimulationOptions& options,
                                                      SubmissionTally* tally) {
  ZEUS_RETURN_IF_ERROR(options.Validate());
  ZEUS_RETURN_IF_ERROR(ValidateWorkload(workload));
  const JobContext job = options.ContextFor(workload);
  const int recurrences = options.RecurrencesOf(workload);
  // The run sampler's stream is kept apart from the policy's (same seed).
  Rng rng(options.seed ^ 0x5851f42d4c957f2dULL);
  std::vector<RunRecord> runs;
  runs.reserve(static_cast<size_t>(recurrences) + 8);
  for (int recurrence = 0; recurrence < recurrences; ++recurrence) {
    bool served = false;
    int tries = 0;
    for (int attempt = 0; attempt < options.max_tries; ++attempt) {
      const RunPlan plan = policy.Next(attempt + 1);
      ++tries;
      served = served || plan.may_finish;
      RunOutcome outcome;
      if (plan.judged) {
        ZEUS_ASSIGN_OR_RETURN(outcome, ExecuteJudgedRun(job, policy, plan, rng));
      } else {
        outcome = ExecuteRun(job, plan, rng);
      }
      // A run that ran on goes on under beta: it may finish.
      served = served || outcome.ran_on;
      ZEUS_RETURN_IF_ERROR(policy.Observe(plan, outcome));
      if (outcome.ran) {
        runs.push_back({recurrence, plan.batch_size, plan.power_limit_w, outcome.energy_j,
                        outcome.time_s, outcome.reached, outcome.cost, plan.kind, outcome.ran_on});
      }
      if (outcome.reached) {
        served = true;
        break;
      }
    }
    if (tally != nullptr) tally->Add(served, tries);
  }
  return runs;
}

std::optional<ExpectedRun> Expected(const JobContext& job, int batch_size, int power_limit_w) {
  const BatchSizeTrace* trace = job.workload->Find(batch_size);
  if (trace == nullptr) return std::nullopt;
  const PowerPoint* point = trace->At(power_limit_w);
  if (point == nullptr) return std::nullopt;
  double sum = 0.0;
  int reached = 0;
  for (const std::optional<double>& epoch : trace->target_epochs) {
    if (!epoch.has_value()) continue;
    sum += *epoch;
    ++reached;
  }
  if (reached == 0) return std::nullopt;
  const double epochs = sum / reached;
  ExpectedRun run;
  run.batch_size = batch_size;
  run.power_limit_w = power_limit_w;
  run.energy_j = epochs * point->energy_per_epoch_j();
  run.time_s = epochs * point->time_per_epoch_s;
  run.cost = job.Cost(run.energy_j, run.time_s);
  return run;
}

StatusOr<ExpectedRun> DefaultRun(const JobContext& job) {
  const Workload& workload = *job.workload;
  const BatchSizeTrace* trace = workload.Find(workload.default_batch_size);
  if (trace == nullptr) {
    return FailedPreconditionError(workload.job.dataset + ": default batch size " +
                                   std::to_string(workload.default_batch_size) +
                                   " is not in the traces");
  }
  std::optional<ExpectedRun> run =
      Expected(job, workload.default_batch_size, trace->max_power_limit_w());
  if (!run.has_value()) {
    return FailedPreconditionError(workload.job.dataset + ": no seed run of default batch size " +
                                   std::to_string(workload.default_batch_size) +
                                   " reaches the target");
  }
  return *run;
}

StatusOr<ExpectedRun> OracleRun(const JobContext& job) {
  const Workload& workload = *job.workload;
  std::optional<ExpectedRun> best_always;
  std::optional<ExpectedRun> best_any;
  for (const BatchSizeTrace& trace : workload.batch_sizes) {
    const bool always = std::all_of(trace.target_epochs.begin(), trace.target_epochs.end(),
                                    [](const std::optional<double>& e) { return e.has_value(); });
    for (const PowerPoint& point : trace.power) {
      std::optional<ExpectedRun> run = Expected(job, trace.batch_size, point.power_limit_w);
      if (!run.has_value()) continue;
      if (!best_any.has_value() || run->cost < best_any->cost) best_any = run;
      if (always && (!best_always.has_value() || run->cost < best_always->cost)) {
        best_always = run;
      }
    }
  }
  if (best_always.has_value()) return *best_always;
  if (best_any.has_value()) return *best_any;
  return FailedPreconditionError(workload.job.dataset + ": no batch size reaches the target");
}

StatusOr<ExpectedRun> OracleRun(const Workload& workload, double eta) {
  JobContext job;
  job.workload = &workload;
  job.eta = eta;
  return OracleRun(job);
}

void SettledConfiguration::Add(const std::vector<RunRecord>& runs) {
  for (size_t i = runs.size() > kLastRuns ? runs.size() - kLastRuns : 0; i < runs.size(); ++i) {
    ++batch_sizes_[runs[i].batch_size];
    ++power_limits_w_[runs[i].power_limit_w];
  }
}

int SettledConfiguration::Mode(const std::map<int, int>& counts) {
  int best = 0;
  int best_count = 0;
  for (const auto& [value, count] : counts) {
    if (count > best_count) {
      best = value;
      best_count = count;
    }
  }
  return best;
}

StatusOr<SimulationSummary> Summarize(const JobContext& job, const std::vector<RunRecord>& runs,
                                      int num_recurrences) {
  if (num_recurrences <= 0 || runs.empty()) {
    return InvalidArgumentError("summary: no runs to summarise");
  }
  SimulationSummary summary;
  ZEUS_ASSIGN_OR_RETURN(summary.default_run, DefaultRun(job));
  ZEUS_ASSIGN_OR_RETURN(summary.oracle_run, OracleRun(job));
  summary.num_recurrences = num_recurrences;
  summary.num_runs = static_cast<int>(runs.size());
  double last10_energy_j = 0.0;
  double last10_time_s = 0.0;
  const int last10_start = std::max(0, num_recurrences - 10);
  for (const RunRecord& run : runs) {
    summary.energy_j += run.energy_j;
    summary.time_s += run.time_s;
    summary.cost += run.cost;
    if (run.recurrence >= last10_start) {
      last10_energy_j += run.energy_j;
      last10_time_s += run.time_s;
    }
  }
  const double n = num_recurrences;
  const double last_n = num_recurrences - last10_start;
  summary.cost_ratio = summary.cost / (n * summary.default_run.cost);
  summary.energy_ratio = summary.energy_j / (n * summary.default_run.energy_j);
  summary.time_ratio = summary.time_s / (n * summary.default_run.time_s);
  summary.last10_energy_ratio = last10_energy_j / (last_n * summary.default_run.energy_j);
  summary.last10_time_ratio = last10_time_s / (last_n * summary.default_run.time_s);
  summary.regret = (summary.cost - n * summary.oracle_run.cost) / (n * summary.oracle_run.cost);
  SettledConfiguration settled;
  settled.Add(runs);
  summary.final_batch_size = settled.batch_size();
  summary.final_power_limit_w = settled.power_limit_w();
  return summary;
}

}  // namespace zeus
