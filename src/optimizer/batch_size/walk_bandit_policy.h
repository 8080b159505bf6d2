// The walk-then-bandit engine every batch-size policy is built on: one
// record of a job's search (the pruning walk, the bandit, the trials in
// flight, the lowest cost and its learning curve) and the skeleton of each
// BatchSizePolicy call, whose rules are the protected hooks below. The
// hooks' defaults are the paper's Zeus (zeus_policy.h); frugal_policy.h and
// swarm_policy.h override them.
//
// Zeus's skeleton, which every policy keeps:
//   - while the walk's step (an exploration trial) is in flight, further
//     trials are concurrent and go to the best batch size known (the
//     cheapest one that reached the target; the default before any did);
//   - only the step's result advances the walk, so out-of-order results
//     cannot derail the exploration order;
//   - every reported result is an observation of its size for the bandit;
//   - an abandoned step is handed out again by the next NextTrial();
//   - when pruning leaves no size that reached the target, the bandit's
//     only arm is the best size known.
//
// Internal to the optimizer layer (tests may use it); callers outside it use
// BatchSizeOptimizer. Thread-safety: not thread-safe.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_WALK_BANDIT_POLICY_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_WALK_BANDIT_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "zeus/core/rng.h"
#include "zeus/optimizer/batch_size/batch_size_policy.h"
#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/optimizer/batch_size/progress_curve.h"
#include "zeus/optimizer/batch_size/pruning_explorer.h"
#include "zeus/util/json.h"

namespace zeus {

// How a policy walks: PruningExplorer's knobs.
struct WalkKnobs {
  int num_pruning_rounds = 2;
  // Failures in a row that end a direction that found a cheaper size.
  int direction_patience = 1;
  // A direction ends on a miss unless it found a size this many times
  // cheaper than the best at its start (0: never).
  double decisive_ratio = 0.0;
};

// A speculative result the walk has not reached yet (swarm).
struct SpeculativeResult {
  double cost = 0.0;
  bool reached_target = false;
  // Stopped by the learning curve (PruningExplorer::Miss::kLearnedSlower).
  bool learned_slower = false;
};

class WalkBanditPolicy : public BatchSizePolicy {
 public:
  const BatchSizeOptimizerConfig& config() const override { return config_; }
  Trial NextTrial(int attempt = 1) override;
  StatusOr<Verdict> Judge(int64_t trial_number, const Observation& observation) override;
  Status ReportResult(int64_t trial_number, double cost, bool reached_target) override;
  Status ReportFailure(int64_t trial_number) override;
  const std::map<int64_t, InFlightTrial>& in_flight() const override { return in_flight_; }
  BatchSizeSearchView View() const override;
  std::vector<ArmState> ArmStates() const override;
  nlohmann::json ToJson() const override;

  // The state's fields after "version" and "config" (policy_state.cc):
  // kInvalidArgument naming the field at fault, including state that this
  // policy does not keep (CheckKeeps).
  Status LoadState(const JsonFields& state);
  // A fresh policy's start: the bandit, when the walk is over before it
  // began (one size, or no pruning rounds).
  void StartIfWalked();

  // The state a policy keeps beyond zeus's; LoadState refuses the rest.
  struct StateKeeps {
    // Learning curves: the reference and each trial's (frugal).
    bool curves = false;
    // Censored sizes (frugal).
    bool censored = false;
    // A concurrent trial's lowest cost at hand-out, and never-restarted
    // concurrent trials (frugal).
    bool concurrent_bounds = false;
    // Probes that finish (swarm).
    bool finishes = false;
    // Speculative trials and results (swarm).
    bool speculation = false;
  };

  // --- The rules, readable for tests and the judge. ---

  // True while the pruning walk is not over.
  bool exploring() const { return !explorer_.done(); }
  std::optional<double> min_cost() const { return min_cost_; }
  int best_batch_size() const { return best_batch_size_; }
  // beta x min_cost() (EarlyStopCostBound); nullopt without early stopping
  // or before any run reached the target.
  std::optional<double> EarlyStopThreshold() const;
  // The whole bound of in-flight trial `trial_number`. zeus: a concurrent
  // trial handed out with a lowest cost keeps beta x that cost
  // (min_cost_at_handout); every other trial EarlyStopThreshold().
  virtual std::optional<double> EarlyStopThreshold(int64_t trial_number) const;
  // The bound of in-flight trial `trial_number` whose best progress so far
  // is `progress`: the whole bound, or lower where a learning curve bounds
  // it (frugal). zeus: the whole bound.
  virtual std::optional<double> EarlyStopThreshold(int64_t trial_number, double progress) const;
  // The bound a check-in (spend between two reports) holds the trial to.
  // zeus: EarlyStopThreshold(trial_number, kNoProgress).
  virtual std::optional<double> CheckInThreshold(int64_t trial_number) const;
  // A report's progress point for in-flight trial `trial_number`: true when
  // the policy keeps it (zeus keeps none). kNotFound when not in flight;
  // kInvalidArgument as AppendProgress (nothing recorded).
  virtual StatusOr<bool> RecordProgress(int64_t trial_number, double cost, double progress);
  // The best progress the trial has recorded; nullopt when none.
  std::optional<double> BestProgress(int64_t trial_number) const;
  // The best progress the trial had recorded at its last point whose cost
  // was at most `cost`; nullopt when none.
  std::optional<double> BestProgressWithin(int64_t trial_number, double cost) const;
  // A concurrent run restarts at a cheaper size when its report's cost is
  // below this (swarm); nullopt: never (zeus, frugal).
  virtual std::optional<double> RestartThreshold(int64_t trial_number) const;
  // A probe past its whole bound as a near miss at `progress` runs on to
  // this (frugal); nullopt: it stops (zeus).
  virtual std::optional<double> RunOnBound(int64_t trial_number, double progress) const;
  // The near miss runs on (RunOnBound). kNotFound when not in flight;
  // kFailedPrecondition when RunOnBound is nullopt.
  Status RunOn(int64_t trial_number, double progress);
  // A probe the lowest cost overtook finishes under this bound (swarm),
  // judged from `best`, the point of its curve where it first reported its
  // best progress, at cost `cost`; nullopt: it stops (zeus, frugal).
  virtual std::optional<double> FinishBound(int64_t trial_number, const ProgressPoint& best,
                                            double cost) const;
  // The probe finishes (FinishBound). kNotFound when not in flight;
  // kFailedPrecondition when FinishBound is nullopt.
  Status Finish(int64_t trial_number, const ProgressPoint& best, double cost);
  // What FinishBound is judged from, taken before a report's point is
  // recorded: the point where the trial first reported its best progress,
  // when the curve it is held to changed since its last report; nullopt
  // otherwise (and under zeus, which holds no trial to a curve).
  std::optional<ProgressPoint> FinishCandidate(int64_t trial_number) const;
  // The curve of the run of the lowest cost known; empty before one
  // recorded its progress, and under zeus.
  const std::vector<ProgressPoint>& reference_progress() const { return reference_progress_; }
  // Sizes whose failed run is only a bound on their cost: batch size -> the
  // bound (frugal). A size leaves at its first observation as a bandit arm.
  const std::map<int, double>& censored() const { return censored_; }
  // Speculative results the walk has not reached yet, by batch size (swarm).
  const std::map<int, SpeculativeResult>& speculative_results() const {
    return speculative_results_;
  }

 protected:
  WalkBanditPolicy(BatchSizeOptimizerConfig config, const WalkKnobs& walk);

  // --- Hooks: zeus's rules by default. ---

  // The bandit's settings.
  virtual GaussianTsConfig BanditConfig() const;
  // Trial::may_finish of `trial` as it is handed out. zeus: every trial.
  virtual bool MayFinish(const InFlightTrial& trial) const;
  // A submission on try `attempt` must get a trial that may finish now,
  // during the walk (zeus: every trial may finish already).
  virtual bool MustFinish(int attempt) const;
  // During the walk, with its step in flight: a size for a speculative
  // trial (swarm); nullopt: the trial is concurrent.
  virtual std::optional<int> SpeculativeSize() const;
  // The size a concurrent trial goes to. zeus: best_batch_size().
  virtual int ConcurrentSize() const;
  // What a concurrent trial records as it is handed out (`must_finish`:
  // MustFinish was true). zeus: nothing.
  virtual void OnConcurrentHandOut(InFlightTrial& trial, bool must_finish) const;
  // Sizes the bandit should treat as being tried already (frugal). zeus: none.
  virtual std::set<int> PendingSizes() const;
  // Gives the walk the outcome of trial `trial_number` (`batch_size`, handed
  // out as `kind`) at `cost` (its observed cost). zeus: only the walk's
  // step's result counts. The trial's own bound must still be the one it
  // ran under.
  virtual Status TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                          bool reached_target, bool learned_slower);
  // How the walk's step failing now bears on its direction.
  virtual PruningExplorer::Miss MissOf(bool learned_slower) const;
  // Feeds the walk what it can take without a trial (swarm). zeus: nothing.
  virtual Status AdvanceWalk();
  // The bandit's arms when the walk ends (before censored sizes join).
  virtual std::vector<int> BanditArms() const;
  // Which curve in-flight trial `trial_number` is held to; nullopt when
  // none (zeus holds no trial to a curve).
  virtual std::optional<CurveKey> CurveKeyOf(int64_t trial_number) const;
  // The state a policy keeps beyond zeus's (StateKeeps).
  virtual StateKeeps Keeps() const;

  // --- Shared helpers. ---

  Status NotInFlight(int64_t trial_number) const;
  // The learning curve of in-flight trial `trial_number`; empty when none.
  const std::vector<ProgressPoint>& CurveOf(int64_t trial_number) const;
  // Adds one observation to the per-batch-size history (and the bandit).
  void Observe(int batch_size, double cost);
  // CurveKeyOf(trial_number) when it differs from the key at the trial's
  // last report (or it had none then); nullopt otherwise.
  std::optional<CurveKey> ChangedCurve(int64_t trial_number) const;
  // Builds the bandit from BanditArms() and the censored sizes.
  void StartBandit();

  // The job's one record (serialised by policy_state.cc).
  BatchSizeOptimizerConfig config_;
  Rng rng_;
  PruningExplorer explorer_;
  // Trial number of the walk's step in flight, if any.
  std::optional<int64_t> exploration_trial_;
  // All costs observed per batch size during the walk (windowed).
  std::map<int, std::vector<double>> costs_;
  // Present once the walk is over.
  std::optional<GaussianTs> bandit_;
  std::map<int64_t, InFlightTrial> in_flight_;
  int64_t next_trial_number_ = 1;
  std::optional<double> min_cost_;
  int best_batch_size_ = 0;
  std::map<int, double> censored_;
  std::map<int, SpeculativeResult> speculative_results_;
  std::vector<ProgressPoint> reference_progress_;

 private:
  // LoadState's check that the in-flight explorations match the explorer.
  Status ValidateExplorationTrial(const JsonFields& state) const;
  // LoadState's reader of reference_progress and trial_progress.
  Status ReadProgress(const JsonFields& state);
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_WALK_BANDIT_POLICY_H_
