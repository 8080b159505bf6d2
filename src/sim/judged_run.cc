#include "src/sim/judged_run.h"

#include <algorithm>
#include <cmath>

#include "zeus/optimizer/batch_size/progress_curve.h"
#include "zeus/status.h"

namespace zeus {

RunMeter RunMeter::Of(const JobContext& job, const BatchSizeTrace& trace, const PowerPoint& point,
                      bool profile) {
  RunMeter meter;
  meter.job = &job;
  meter.profile = profile;
  meter.energy_per_epoch_j = point.energy_per_epoch_j();
  meter.time_per_epoch_s = point.time_per_epoch_s;
  if (!profile) return meter;
  // JIT profiling: the first epoch spends an even share at each limit of
  // the trace; a limit the profile skips (it cannot bind) gives its share to
  // the run's own limit, as the real profiler moves on sooner.
  const std::vector<const PowerPoint*> profiled = trace.ProfiledPoints(job.nonbinding_margin);
  for (const PowerPoint* p : profiled) {
    meter.first_energy_j += p->energy_per_epoch_j();
    meter.first_time_s += p->time_per_epoch_s;
  }
  const double skipped = static_cast<double>(trace.power.size() - profiled.size());
  meter.first_energy_j += skipped * point.energy_per_epoch_j();
  meter.first_time_s += skipped * point.time_per_epoch_s;
  const double num_limits = static_cast<double>(trace.power.size());
  meter.first_energy_j /= num_limits;
  meter.first_time_s /= num_limits;
  return meter;
}

double RunMeter::Spent(double epochs, double* energy_j, double* time_s) const {
  if (profile && epochs < 1) {
    *energy_j = epochs * first_energy_j;
    *time_s = epochs * first_time_s;
  } else if (profile) {
    *energy_j = first_energy_j + (epochs - 1) * energy_per_epoch_j;
    *time_s = first_time_s + (epochs - 1) * time_per_epoch_s;
  } else {
    *energy_j = epochs * energy_per_epoch_j;
    *time_s = epochs * time_per_epoch_s;
  }
  return job->Cost(*energy_j, *time_s);
}

double RunMeter::Cost(double epochs) const {
  double energy_j = 0.0;
  double time_s = 0.0;
  return Spent(epochs, &energy_j, &time_s);
}

double RunMeter::Time(double epochs) const {
  double energy_j = 0.0;
  double time_s = 0.0;
  Spent(epochs, &energy_j, &time_s);
  return time_s;
}

double RunMeter::EpochsAt(double cost) const {
  if (!(cost > 0.0)) return 0.0;
  // Linear within the first epoch and after it.
  const double first = Cost(1.0);
  if (cost <= first || !profile) return first > 0.0 ? cost / first : 0.0;
  const double per_epoch = Cost(2.0) - first;
  return per_epoch > 0.0 ? 1.0 + (cost - first) / per_epoch : 1.0;
}

JudgedRun::JudgedRun(const JobContext& job, const RunPlan& plan, Rng& rng) : job_(&job) {
  trace_ = job.workload->Find(plan.batch_size);
  ZEUS_CHECK(trace_ != nullptr);
  const PowerPoint* point = trace_->At(plan.power_limit_w);
  ZEUS_CHECK(point != nullptr);
  seed_run_ = rng.UniformInt(trace_->target_epochs.size());
  const std::optional<double>& target_epoch = trace_->target_epochs[seed_run_];
  meter_ = RunMeter::Of(job, *trace_, *point, plan.profile_power);
  const double max_epochs = job.workload->job.max_epochs;
  reaches_ = target_epoch.has_value() && *target_epoch <= max_epochs;
  end_ = reaches_ ? *target_epoch : max_epochs;
}

double JudgedRun::ProgressAfter(double epochs) const {
  double progress = 0.0;
  if (seed_run_ < trace_->milestone_epochs.size()) {
    for (const std::optional<double>& at : trace_->milestone_epochs[seed_run_]) {
      progress += at.has_value() && *at <= epochs;
    }
  }
  return progress + (reaches_ && epochs >= end_ ? 1.0 : 0.0);
}

JudgedPoint JudgedRun::Report() const {
  JudgedPoint point;
  point.epochs = std::min(done_ + 1.0, end_);
  point.cost = meter_.Cost(point.epochs);
  point.time_s = meter_.Time(point.epochs);
  point.report = true;
  point.last = point.epochs >= end_;
  point.reached = reaches_ && point.last;
  if (!job_->workload->milestones.empty() && end_ <= static_cast<double>(kMaxProgressPoints)) {
    point.progress = ProgressAfter(point.epochs);
  }
  return point;
}

JudgedPoint JudgedRun::CheckInAt(double time_s) const {
  const double next = std::min(done_ + 1.0, end_);
  const double t0 = meter_.Time(done_);
  const double t1 = meter_.Time(next);
  JudgedPoint point;
  point.epochs = done_ + (time_s - t0) / (t1 - t0) * (next - done_);
  point.cost = meter_.Cost(point.epochs);
  point.time_s = time_s;
  return point;
}

JudgedPoint JudgedRun::Next() const { return NextAfter(judged_s_); }

JudgedPoint JudgedRun::NextAfter(double after_s) const {
  const double check_in_s = job_->check_in_s;
  const double next = std::min(done_ + 1.0, end_);
  const double t0 = meter_.Time(done_);
  const double t1 = meter_.Time(next);
  if (check_in_s > 0.0 && t1 > t0 && meter_.Cost(next) > meter_.Cost(done_)) {
    const double from_s = std::max({after_s, judged_s_, t0});
    const double at_s = t0 + (std::floor((from_s - t0) / check_in_s) + 1.0) * check_in_s;
    // (A check-in no later than where it is, in floating point, is none:
    // every point judged must move the run on.)
    if (at_s > from_s && at_s < t1) return CheckInAt(at_s);
  }
  return Report();
}

JudgedPoint JudgedRun::NextPast(const std::optional<double>& bound) const {
  if (!bound.has_value()) return Report();
  const double next = std::min(done_ + 1.0, end_);
  const double c0 = meter_.Cost(done_);
  const double c1 = meter_.Cost(next);
  if (!(c1 > *bound)) return Report();
  const double t0 = meter_.Time(done_);
  const double t1 = meter_.Time(next);
  const double passes_s = c0 >= *bound ? t0 : t0 + (*bound - c0) / (c1 - c0) * (t1 - t0);
  return NextAfter(passes_s);
}

void JudgedRun::MoveTo(const JudgedPoint& point) {
  judged_s_ = point.time_s;
  if (point.report) done_ = point.epochs;
}

RunOutcome JudgedRun::OutcomeAt(const JudgedPoint& point, bool reached) const {
  RunOutcome outcome;
  outcome.cost = meter_.Spent(point.epochs, &outcome.energy_j, &outcome.time_s);
  outcome.reached = reached;
  outcome.stopped_at_check_in = !point.report;
  return outcome;
}

Observation ObservationAt(const JudgedPoint& point) {
  Observation observation;
  observation.cost = point.cost;
  observation.check_in = !point.report;
  observation.progress = point.progress;
  observation.reached_target = point.reached;
  return observation;
}

StatusOr<RunOutcome> ExecuteJudgedRun(const JobContext& job, Policy& policy, const RunPlan& plan,
                                      Rng& rng) {
  JudgedRun run(job, plan, rng);
  bool ran_on = false;
  JudgedPoint point = run.Next();
  while (true) {
    ZEUS_ASSIGN_OR_RETURN(const Verdict verdict, policy.Judge(plan, ObservationAt(point)));
    run.MoveTo(point);
    ran_on = ran_on || verdict.ran_on_to.has_value();
    if (verdict.stops() || (point.report && point.last)) {
      RunOutcome outcome = run.OutcomeAt(point, point.reached && !verdict.stops());
      outcome.ran_on = ran_on;
      return outcome;
    }
    // After a report, or a verdict that changed the bounds, the next
    // check-in is judged afresh.
    point = point.report || verdict.state_changed ? run.Next() : run.NextPast(verdict.cost_bound);
  }
}

}  // namespace zeus
