// What the batch-size optimizer tells a running trial at each of its
// reports and check-ins (BatchSizePolicy::Judge): the one place where a
// run is continued, stopped, restarted elsewhere, run on or finished. The
// service and the simulator act on a Verdict; neither decides a stop itself.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_VERDICT_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_VERDICT_H_

#include <optional>

namespace zeus {

// One judgment of an in-flight trial.
struct Observation {
  // The run's cost so far (ZeusCost of its energy and time so far, J).
  double cost = 0.0;
  // A check-in between two per-epoch reports (it tells no progress).
  bool check_in = false;
  // At a report, its validation metric oriented so that higher is better
  // (progress_curve.h); nullopt when the report tells none.
  std::optional<double> progress;
  // The metric reached the target at this report.
  bool reached_target = false;
};

struct Verdict {
  enum class Action {
    // Keep training (or, when reached_target, the run is done and converged).
    kContinue,
    // Stop: the run passed its bound (whole_bound or, when curve_bound,
    // the learning curve's at its progress).
    kStop,
    // Stop so that the submission restarts at a cheaper size
    // (restart_below).
    kRestart,
  };
  Action action = Action::kContinue;
  // The trial's whole bound, and the bound this judgment held it to (the
  // curve's where lower). nullopt: none.
  std::optional<double> whole_bound;
  std::optional<double> cost_bound;
  // cost_bound is the learning curve's.
  bool curve_bound = false;
  // The trial's best progress before this judgment; nullopt when none.
  std::optional<double> best_progress;
  // A probe past its whole bound as a near miss runs on, held to this
  // (WalkBanditPolicy::RunOn); nullopt when it did not.
  std::optional<double> ran_on_to;
  // A probe the lowest cost overtook finishes, held to this
  // (WalkBanditPolicy::Finish); nullopt when it did not.
  std::optional<double> finishes_under;
  // swarm's restart threshold for the trial; nullopt when none.
  std::optional<double> restart_below;
  // The judgment changed the optimizer's state (a progress point, a run
  // on, a finish): the caller stores it.
  bool state_changed = false;

  bool stops() const { return action != Action::kContinue; }
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_VERDICT_H_
