// How a simulated run spends, and where it is judged: its epochs drawn from
// the trace (RunMeter), and the points at which `zeus serve` would judge it
// (each epoch's report and the check-ins between them) for a policy that
// decides its stops itself (RunPlan::judged, Policy::Judge). The solo and
// the group simulations step a judged run through these points and ask
// the policy at each; they decide nothing themselves.
//
// Thread-safety: a JudgedRun is used by one simulation thread.

#ifndef ZEUS_SRC_SIM_JUDGED_RUN_H_
#define ZEUS_SRC_SIM_JUDGED_RUN_H_

#include <optional>

#include "zeus/core/rng.h"
#include "zeus/sim/job_context.h"
#include "zeus/sim/policy.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

// What a run has spent after `epochs` epochs (fractional: evenly within an
// epoch), its first epoch profiling the power limits when `profile`: an
// even share of it at each limit of the trace, the share of a limit the
// profile skips (BatchSizeTrace::ProfiledPoints) at the run's own limit.
struct RunMeter {
  const JobContext* job = nullptr;
  bool profile = false;
  // The first epoch's energy and time; 0 without `profile`.
  double first_energy_j = 0.0;
  double first_time_s = 0.0;
  double energy_per_epoch_j = 0.0;
  double time_per_epoch_s = 0.0;

  // The meter of `plan` on `trace` (its power limit's point).
  static RunMeter Of(const JobContext& job, const BatchSizeTrace& trace, const PowerPoint& point,
                     bool profile);
  double Spent(double epochs, double* energy_j, double* time_s) const;
  double Cost(double epochs) const;
  double Time(double epochs) const;
  // The epochs after which the run has spent `cost` (0 for cost <= 0).
  double EpochsAt(double cost) const;
};

// One point at which a judged run is judged.
struct JudgedPoint {
  // Epochs run (fractional at a check-in), and what they cost.
  double epochs = 0.0;
  double cost = 0.0;
  // The run's time there (trace seconds).
  double time_s = 0.0;
  // A report ends an epoch; a check-in falls between two.
  bool report = false;
  // At a report: the workload's milestones reached so far, plus one at the
  // target (progress_curve.h); nullopt when the workload has none or the
  // run is longer than kMaxProgressPoints epochs.
  std::optional<double> progress;
  // The report at which the run reaches its target.
  bool reached = false;
  // The run's last report (its target or max_epochs).
  bool last = false;
};

class JudgedRun {
 public:
  // Draws the run's seed run with `rng` (one draw, as ExecuteRun).
  // REQUIRES: the plan's configuration is in the job's workload.
  JudgedRun(const JobContext& job, const RunPlan& plan, Rng& rng);

  // The next point after the last one judged (MoveTo): the next check-in,
  // else the epoch's report.
  JudgedPoint Next() const;
  // The next point after run time `after_s` (and after the last judged):
  // the first check-in after it, else the report of the epoch it is in.
  JudgedPoint NextAfter(double after_s) const;
  // The next point at which a check-in could stop the run when its
  // check-ins are held to `bound` until the next report (nullopt: no bound):
  // the first check-in past the bound, else the epoch's report.
  JudgedPoint NextPast(const std::optional<double>& bound) const;
  // The run was judged at `point`.
  void MoveTo(const JudgedPoint& point);

  // Its outcome if it ends at `point`, reaching the target or not.
  RunOutcome OutcomeAt(const JudgedPoint& point, bool reached) const;
  // What it costs, and how long it runs, to its natural end (target or
  // max_epochs).
  double full_cost() const { return meter_.Cost(end_); }
  double full_time_s() const { return meter_.Time(end_); }
  // Run time after `epochs`.
  double TimeAt(double epochs) const { return meter_.Time(epochs); }
  const RunMeter& meter() const { return meter_; }

 private:
  double ProgressAfter(double epochs) const;
  JudgedPoint Report() const;
  JudgedPoint CheckInAt(double time_s) const;

  const JobContext* job_;
  const BatchSizeTrace* trace_;
  RunMeter meter_;
  size_t seed_run_ = 0;
  // Epochs to its natural end, and whether that is the target.
  double end_ = 0.0;
  bool reaches_ = false;
  // Epochs at its last report, and the run time of its last judgment.
  double done_ = 0.0;
  double judged_s_ = 0.0;
};

// What the policy is told at `point` (Policy::Judge).
Observation ObservationAt(const JudgedPoint& point);

// Runs judged `plan` (RunPlan::judged) of a solo job to its end: from one
// point to the next, asking `policy` at each (Policy::Judge) and moving on
// as its verdicts say. Between two reports, a check-in whose verdict changed
// nothing is followed by the first check-in past the bound it gave (the
// ones between would keep it going: nothing else changes the policy
// meanwhile). Errors are the policy's.
StatusOr<RunOutcome> ExecuteJudgedRun(const JobContext& job, Policy& policy, const RunPlan& plan,
                                      Rng& rng);

}  // namespace zeus

#endif  // ZEUS_SRC_SIM_JUDGED_RUN_H_
