// The batch-size optimizer of one recurring job: pruning exploration, then
// Gaussian Thompson sampling, with early stopping and concurrent submissions.
//
// One implementation shared by the simulator (src/sim) and the batch-size
// server (src/server). Each time the job recurs, the caller asks NextTrial()
// for the batch size to use, runs it, and reports the trial's final outcome by
// trial number with ReportResult() (or ReportFailure() when the run was
// abandoned). Several trials may be in flight at once and their results may
// arrive in any order:
//   - while an exploration trial is in flight, further trials are
//     `kConcurrent` and use the best batch size known so far (the cheapest
//     one that reached the target; the default before any did);
//   - only the result of the exploration trial advances the pruning walk, so
//     out-of-order results cannot derail the exploration order;
//   - every reported result (reached or not) is an observation for the
//     bandit, including those gathered during exploration, except (frugal)
//     the failed exploration run of a censored arm, which is kept as a bound.
// An abandoned exploration trial is handed out again (same batch size, new
// trial number) by the next NextTrial(). When pruning leaves no batch size
// that reached the target, the bandit's only arm is best_batch_size().
//
// The complete state, random generator included, round-trips through JSON
// exactly, so a process restarted from ToJson() continues the same sequence.
//
// Thread-safety: not thread-safe. The server serialises a job's requests
// (row lock in its database); the simulator is single-threaded.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/core/cost.h"
#include "zeus/core/rng.h"
#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/optimizer/batch_size/progress_curve.h"
#include "zeus/optimizer/batch_size/pruning_explorer.h"
#include "zeus/optimizer/batch_size/trial.h"
#include "zeus/optimizer/batch_size/verdict.h"
#include "zeus/status.h"

namespace zeus {

// How a job explores its batch sizes.
enum class BatchSizePolicy {
  // The paper's Zeus, faithfully: `num_pruning_rounds` rounds of the pruning
  // walk under early stopping at beta x the lowest cost, then Gaussian
  // Thompson sampling that first tries each survivor `num_explorations` times.
  kZeus,
  // `frugal` (docs/BATCH_SIZE_POLICY.md): one pruning round whose runs stop at
  // min(beta, FrugalKnobs::kExplorationBeta) x the lowest cost (when early
  // stopping is on); a direction that has found a size kExplorationBeta times
  // cheaper than the best at its start ends only after
  // FrugalKnobs::kDirectionPatience failures in a row; the up direction is
  // skipped when the down one found a size kExplorationBeta times cheaper
  // than the default; then Thompson sampling over the survivors with
  // FrugalKnobs::kNumExplorations tries each first. A size whose exploration
  // run stopped at the tight bound is not dropped: it joins the bandit as a
  // censored arm (its cost is known to exceed that bound) and is tried again
  // once every other arm samples a higher cost. Ignores
  // `num_pruning_rounds` and `num_explorations`.
  kFrugal,
  // `swarm` (docs/BATCH_SIZE_POLICY.md, "Job groups"): frugal, plus
  // speculative steps. While a walk step is in flight, a further trial does
  // not go to the best size known but to a size the walk may try next
  // (PruningExplorer::Upcoming with SwarmKnobs' depths), one run
  // per size. Its result is kept and the walk consumes it when it reaches
  // that size, judged against the lowest cost known then: a run that did not
  // reach the target, or did above min(beta, kExplorationBeta) x the lowest
  // cost, is the walk's failure there (a run that did not reach becomes a
  // censored arm bounded by its cost, as frugal's). When the walk reaches a
  // size whose speculative run is still out, that run becomes the walk's
  // step. Speculation starts with the first wave: while the default's own
  // step is in flight, both directions are speculated on, held to the
  // step's curve so far until a run has reached the target
  // (provisional_reference()). A direction whose next size the learning
  // curve stopped ends there, and its speculation depth goes to the other
  // direction. Once a step has passed without beating the best size known,
  // nothing further along its direction is speculated on; the size of the
  // lowest cost known passes the walk and is a bandit arm. A further trial
  // (concurrent) goes to the best size known, or to the probe in flight
  // that so far learns faster than the run of the lowest cost did
  // (ConcurrentSize). With one trial at a time it hands out exactly
  // frugal's sequence.
  kSwarm,
};

// The fixed knobs of BatchSizePolicy::kFrugal: chosen once on the V100
// traces (seeds 11-60), the same for every GPU and workload
// (docs/BATCH_SIZE_POLICY.md).
struct FrugalKnobs {
  // One walk: a second round re-runs every survivor, the costliest part of
  // Zeus's regret.
  static constexpr int kNumPruningRounds = 1;
  // An exploration run stops at this x the lowest cost so far (Zeus: beta,
  // 2): a size that cannot beat the best by much is cut early. Also the
  // ratio default cost / best cost above which the up direction is skipped.
  static constexpr double kExplorationBeta = 1.25;
  // Failures in a row that end a direction once it has found a size
  // kExplorationBeta times cheaper than the best at its start (any other
  // direction ends at its first failure).
  static constexpr int kDirectionPatience = 2;
  // Tries per survivor before Thompson sampling (Zeus: 2).
  static constexpr int kNumExplorations = 1;
  // The bandit samples only the leader and its neighbours; a neighbour seen
  // once gets a second run when its run cost at most the leader's dearest
  // run and at most this many standard deviations above the leader's mean
  // (GaussianTsConfig::second_look_sigmas).
  static constexpr double kSecondLookSigmas = 1.0;
  // The bandit's Thompson samples are drawn with this x each arm's posterior
  // standard deviation (GaussianTsConfig::sample_stddev_scale): a job of tens
  // of recurrences cannot repay the exploration of full-width samples
  // between sizes whose costs differ by less than their runs' noise
  // (docs/BATCH_SIZE_POLICY.md, "Narrower Thompson samples").
  static constexpr double kSampleStddevScale = 0.6;
};

// The fixed knob of BatchSizePolicy::kSwarm beyond frugal's, chosen once on
// the V100 traces in generated job groups (docs/BATCH_SIZE_POLICY.md).
struct SwarmKnobs {
  // How far ahead of the walk's step in flight speculative trials go
  // (PruningExplorer::Upcoming): the next kDownSpeculationDepth sizes while
  // walking down, and kUpSpeculationDepth sizes of the up direction (its
  // first ones while walking down, the next ones while walking up). Further
  // concurrent trials go to the best size known.
  static constexpr size_t kDownSpeculationDepth = 2;
  static constexpr size_t kUpSpeculationDepth = 3;
  // A speculative trial whose size the walk can no longer try (nor, once
  // the walk is over, the bandit as an arm) is held to min(beta, this) x
  // the lowest cost: 0 stops it at its next report (docs/BATCH_SIZE_POLICY.md,
  // "Stopping speculative runs the walk cannot use").
  static constexpr double kOrphanBeta = 0.0;
};

// "zeus", "frugal" or "swarm".
std::string_view BatchSizePolicyName(BatchSizePolicy policy);
// kInvalidArgument naming the text and the known names otherwise.
StatusOr<BatchSizePolicy> ParseBatchSizePolicy(std::string_view name);

// Per-job settings. Plain struct; Validate() before use.
struct BatchSizeOptimizerConfig {
  // How the job explores. Default: kZeus. Stored as the config's "policy"
  // (written only when not zeus; a state without it is Zeus).
  BatchSizePolicy policy = BatchSizePolicy::kZeus;
  // Candidate batch sizes: positive, sorted ascending, unique. Default: none
  // (required).
  std::vector<int> batch_sizes;
  // Where exploration starts; one of `batch_sizes`. Default: 0 (required).
  int default_batch_size = 0;
  // Rounds of pruning exploration (0 = every batch size is an arm at once).
  // Default: 2.
  int num_pruning_rounds = 2;
  // Most recent observations per arm the bandit keeps (0 = all). Default: 0.
  int window_size = 0;
  // Prior mean of each arm's expected reward (-cost). Default: 0.
  double prior_mean = 0.0;
  // Prior precision of each arm's expected reward (>= 0). Default: 0.
  double prior_precision = 0.0;
  // Arms with fewer observations than this are explored (in a random order)
  // before Thompson sampling starts. Default: 2.
  int num_explorations = 2;
  // Seed of the job's random generator. Default: 123456 (the original's).
  uint64_t seed = 123456;
  // Early stopping: a run should stop before its cost passes beta x the lowest
  // cost of a run that reached the target. nullopt = no early stopping.
  // Must be > 0 and finite when set. Default: 2.0.
  std::optional<double> beta = 2.0;

  // kInvalidArgument naming the offending field and value.
  Status Validate() const;

  nlohmann::json ToJson() const;
  // Missing fields take their defaults; wrong types and unknown fields are
  // kInvalidArgument. Validates the result.
  static StatusOr<BatchSizeOptimizerConfig> FromJson(const nlohmann::json& json);

  friend bool operator==(const BatchSizeOptimizerConfig& a, const BatchSizeOptimizerConfig& b);
};

class BatchSizeOptimizer {
 public:
  // kInvalidArgument when `config` fails Validate().
  static StatusOr<BatchSizeOptimizer> Create(BatchSizeOptimizerConfig config);

  const BatchSizeOptimizerConfig& config() const { return config_; }

  // Hands out the next trial and records it as in flight. `attempt`: 1 for
  // a submission's first try, n + 1 for the try after its n-th ended without
  // reaching the target. From attempt kMaxStoppableTries + 1 on, the trial
  // may finish: during the walk, a concurrent trial at best_batch_size()
  // that is never restarted; after it, the bandit's choice.
  Trial NextTrial(int attempt = 1);

  // The final outcome of in-flight trial `trial_number`: its cost (ZeusCost of
  // the whole run, early-stopped runs included) and whether it reached the
  // target. kNotFound for a trial never handed out or no longer in flight;
  // kInvalidArgument for a cost that is negative, not finite or above
  // GaussianTs::kMaxAbsReward (the trial stays in flight).
  Status ReportResult(int64_t trial_number, double cost, bool reached_target);

  // Trial `trial_number` was abandoned (client died): no observation. An
  // abandoned exploration step is handed out again. kNotFound as above.
  Status ReportFailure(int64_t trial_number);

  // Judges in-flight trial `trial_number` at a per-epoch report (with its
  // progress) or a check-in (without): the one rule every caller applies.
  // Records the report's progress point, and a run on or a finish when the
  // verdict is one (Verdict::state_changed); the caller ends a run the
  // verdict stops (or that reached the target, or max epochs) with
  // ReportResult(cost, reached_target && the verdict did not stop it).
  // kNotFound when not in flight; kInvalidArgument for a cost ReportResult
  // would refuse (nothing recorded).
  StatusOr<Verdict> Judge(int64_t trial_number, const Observation& observation);

  // frugal and swarm: in-flight trial `trial_number` after another epoch,
  // with its cost so far and its validation metric oriented so that higher
  // is better (progress_curve.h). Kept until the trial's result; the curve
  // of the run that sets a new lowest cost becomes the reference that
  // EarlyStopThreshold(trial_number, progress) holds runs to. No-op under
  // zeus. kNotFound as above; kInvalidArgument as AppendProgress (nothing
  // recorded).
  Status RecordProgress(int64_t trial_number, double cost, double progress);

  // True while the pruning walk is not over.
  bool exploring() const;
  // The lowest cost of a run that reached the target; nullopt before any did.
  std::optional<double> min_cost() const { return min_cost_; }
  // beta x min_cost() (EarlyStopCostBound): a run whose cost would pass this
  // should stop early. nullopt without early stopping or before any run
  // reached the target.
  std::optional<double> EarlyStopThreshold() const;
  // The bound for in-flight trial `trial_number`: EarlyStopThreshold(), but
  // for frugal's and swarm's exploration step, and swarm's speculative
  // trials, the tighter min(beta, FrugalKnobs::kExplorationBeta) x
  // min_cost(), and for swarm's speculative trials the walk can no longer
  // use, min(beta, SwarmKnobs::kOrphanBeta) x min_cost(). Swarm's
  // exploration step, once a speculative run further along its direction
  // has reached the target within the exploration bound, is held to
  // EarlyStopThreshold() again. Frugal's and swarm's concurrent trials
  // keep the bound they were handed out with: beta x the lowest cost known
  // then (EarlyStopThreshold() when none was). Equal to EarlyStopThreshold()
  // under kZeus and for trials not in flight.
  std::optional<double> EarlyStopThreshold(int64_t trial_number) const;
  // The bound for in-flight trial `trial_number` whose best progress so far
  // is `progress`: EarlyStopThreshold(trial_number), and under frugal and
  // swarm, for a probe (an exploration step or a speculative trial) once
  // the run of the lowest cost known recorded its curve, also the same
  // multiple of that curve's cost where it first got further than
  // `progress` (ProgressBound): a probe that learns slower than the
  // reference stops as soon as it has spent that much, not only at the
  // whole bound. Concurrent and bandit runs (sizes known to reach the
  // target) are held to the whole bound only. Before any run has reached
  // the target (swarm's first wave), a speculative trial the walk can use is
  // held to min(beta, kExplorationBeta) x the curve of the walk's step in
  // flight so far (provisional_reference()), every point of it, and has no
  // whole bound (docs/BATCH_SIZE_POLICY.md, "Fourteenth round").
  std::optional<double> EarlyStopThreshold(int64_t trial_number, double progress) const;
  // The bound a check-in (a run's spend between two of its reports) holds
  // in-flight trial `trial_number` to: EarlyStopThreshold(trial_number, p)
  // with p its best progress so far, while its curve is still to be judged
  // between reports: before its first report (p = kNoProgress: it has shown
  // none, so it is held to the reference's first point), and when the curve
  // it is held to changed since its last report (a new reference or a new
  // multiple: its progress then was not judged against it) and the run got
  // to p slower than that curve allows (its cost when it first recorded p
  // is above ProgressReachedBound). EarlyStopThreshold(trial_number)
  // otherwise: a report alone tells progress past what the run was judged
  // at, and a run on pace at p may show more at its next report
  // (docs/BATCH_SIZE_POLICY.md, "Twelfth round", "Thirteenth round").
  std::optional<double> CheckInThreshold(int64_t trial_number) const;
  // In-flight trial `trial_number`'s cost where it first reported its best
  // progress over the reference's cost where the reference first got as far
  // (below 1: it got there for less); nullopt without a reference curve,
  // until the trial got further than the reference's first point (one early
  // point tells too little of a pace), and past the reference's last point
  // before the target.
  std::optional<double> PaceOf(int64_t trial_number) const;
  // The best progress in-flight trial `trial_number` has recorded; nullopt
  // when it recorded none (and under zeus).
  std::optional<double> BestProgress(int64_t trial_number) const;
  // The reference curve with its costs scaled by the multiple in-flight
  // trial `trial_number` is held to: ProgressBound(ProgressLimits(t), p, 1)
  // is the curve's part of EarlyStopThreshold(t, p). A provisional curve's
  // last point is at infinity (ReferenceCurve). Empty when no curve
  // bounds the trial (zeus, not a probe, no reference yet, no early
  // stopping).
  std::vector<ProgressPoint> ProgressLimits(int64_t trial_number) const;
  // frugal and swarm: a near miss runs on. The bound a probe runs on to once
  // its cost passes EarlyStopThreshold(trial), when `progress` is its best
  // progress at its last report within that bound: beta x min_cost(), when
  // the trial is a probe held to the exploration bound (an exploration step
  // not outbid, or a speculative trial the walk can still use), a reference
  // curve exists, `progress` had got as far as the reference's last level
  // before the target (ProgressBound is nullopt: the curve no longer bounded
  // it) and that bound is above the exploration bound. nullopt otherwise:
  // the probe stops at its bound (docs/BATCH_SIZE_POLICY.md, "Ninth round").
  std::optional<double> RunOnBound(int64_t trial_number, double progress) const;
  // The probe `trial_number`, past its exploration bound as a near miss at
  // `progress` (RunOnBound), runs on: the walk takes it as its failure there
  // now (as if stopped at that bound: censored at it, or kept as a
  // speculative result until the walk gets there), and the trial becomes a
  // concurrent run of its submission, held to beta x the lowest cost known
  // now whatever that does meanwhile. Its report is then an observation of
  // its size, as a concurrent run's. kNotFound when not in flight;
  // kFailedPrecondition when RunOnBound(trial, progress) is nullopt.
  Status RunOn(int64_t trial_number, double progress);
  // swarm: a probe the lowest cost overtook finishes when that is cheaper
  // than starting over. For in-flight probe `trial_number` (an exploration
  // step, or a speculative trial the walk can still use) that bounds
  // changed since its last report stop at a judgment at cost `cost` (the
  // caller knows: FinishCandidate), where `best` is the point of its curve
  // before that judgment at which it first reported its best progress so
  // far: when its curve projects it to the target for less than min_cost()
  // more, `cost` + min_cost(). The projection scales the reference curve by
  // the run's pace at `best`: it reaches the target at best.cost x
  // min_cost() / the reference's cost where it first got as far (its last
  // point before the target when it never did). nullopt otherwise, and
  // before a reference curve with a point before the target exists
  // (docs/BATCH_SIZE_POLICY.md, "Fifteenth round").
  std::optional<double> FinishBound(int64_t trial_number, const ProgressPoint& best,
                                    double cost) const;
  // Trial `trial_number` finishes (FinishBound(trial, best, cost)): from
  // now on it is held to that bound alone, whatever the lowest cost does
  // meanwhile (no learning curve), and its report is the walk's as any
  // probe's (docs/BATCH_SIZE_POLICY.md, "Fifteenth round"). kNotFound when
  // not in flight; kFailedPrecondition when FinishBound is nullopt.
  Status Finish(int64_t trial_number, const ProgressPoint& best, double cost);
  // What FinishBound needs of in-flight trial `trial_number`, judged before
  // its next report is recorded: the point of its curve where it first
  // reported its best progress, when the curve it is held to changed since
  // its last report (CheckInThreshold's test: a new lowest cost, or a new
  // multiple); nullopt otherwise and before its first report. The server
  // asks this before recording a report's point.
  std::optional<ProgressPoint> FinishCandidate(int64_t trial_number) const;
  // The best progress trial `trial_number` had recorded at its last point
  // whose cost was at most `cost` (RecordProgress); nullopt when none.
  std::optional<double> BestProgressWithin(int64_t trial_number, double cost) const;
  // swarm: a concurrent run restarts at a cheaper size. For in-flight
  // concurrent trial `trial_number` (sent to the size of the lowest cost
  // known when it was handed out; not one that ran on as a near miss, which
  // is nearly done) while the walk is not over: its size's mean cost so far
  // minus min_cost(), when the lowest cost is now another size's and that is
  // positive. A report whose cost so far is below it stops the run:
  // finishing it is expected to cost more than a fresh run at the cheaper
  // size, so its submission is better restarted. Such a failure is not an
  // observation of the size (it says nothing of what a whole run costs).
  // nullopt otherwise (frugal, zeus, other kinds, once the bandit runs)
  // (docs/BATCH_SIZE_POLICY.md, "Tenth round").
  std::optional<double> RestartThreshold(int64_t trial_number) const;
  // The curve of the run of the lowest cost known; empty before one
  // recorded its progress, and under zeus.
  const std::vector<ProgressPoint>& reference_progress() const { return reference_progress_; }
  // swarm, before any run has reached the target: the walk's step in flight
  // once it has recorded progress, whose curve so far bounds the speculative
  // trials (EarlyStopThreshold(trial, progress)). nullopt otherwise.
  std::optional<int64_t> provisional_reference() const;
  // The cheapest batch size that reached the target so far, else the default.
  int best_batch_size() const { return best_batch_size_; }

  // Trials handed out and not yet reported, by trial number.
  const std::map<int64_t, InFlightTrial>& in_flight() const { return in_flight_; }
  // Frugal's censored sizes: batch size -> the early-stop bound its failed
  // exploration run stopped at (its cost is known to exceed it). A size leaves
  // the map at its first observation as a bandit arm. Empty under kZeus.
  const std::map<int, double>& censored() const { return censored_; }
  // The bandit's arms (survivors of pruning, and frugal's censored sizes)
  // once exploration is over; during exploration, every batch size with its
  // observations so far.
  std::vector<ArmState> ArmStates() const;

  // swarm: the speculative results the walk has not reached yet, by batch
  // size. Empty once exploration is over, and under zeus and frugal.
  struct SpeculativeResult {
    double cost = 0.0;
    bool reached_target = false;
    // Stopped by the learning curve (PruningExplorer::Miss::kLearnedSlower).
    bool learned_slower = false;
  };
  const std::map<int, SpeculativeResult>& speculative_results() const {
    return speculative_results_;
  }

  // Complete state: config, exploration progress, observations, in-flight
  // trials, min cost, next trial number and the generator state.
  nlohmann::json ToJson() const;
  // Restores ToJson()'s output exactly. kInvalidArgument naming the field for
  // malformed or inconsistent state, and for any cost or reward that
  // ReportResult would refuse (non-finite, negative, above
  // GaussianTs::kMaxAbsReward).
  static StatusOr<BatchSizeOptimizer> FromJson(const nlohmann::json& json);

 private:
  explicit BatchSizeOptimizer(BatchSizeOptimizerConfig config);
  // Builds the bandit from the survivors once the walk is done.
  void StartBandit();
  // Adds one observation to the per-batch-size history (and the bandit).
  void Observe(int batch_size, double cost);
  GaussianTsConfig BanditConfig() const;
  // Whether the policy is frugal or builds on it (swarm).
  bool frugal_like() const { return config_.policy != BatchSizePolicy::kZeus; }
  // swarm: while no exploration step is in flight, feeds the walk the
  // speculative results of the sizes it reaches and adopts a speculative
  // trial in flight at its current size as its step; starts the bandit when
  // the walk ends. No-op for zeus and frugal (nothing is speculative).
  Status AdvanceWalk();
  // swarm: the size for a speculative trial, or nullopt when every size
  // within reach is in flight or already has a result.
  std::optional<int> SpeculativeSize() const;
  // The size for a concurrent trial: under swarm, once the reference curve
  // exists, the size of the probe in flight (the walk's step, or a
  // speculative trial the walk can still use) that learns fastest relative
  // to the reference (PaceOf), when it learns faster than the reference
  // did; the best size known otherwise (docs/BATCH_SIZE_POLICY.md,
  // "Sixteenth round").
  int ConcurrentSize() const;
  // swarm: whether a speculative result further along the walk's current
  // direction reached the target within the exploration bound known now; a
  // failure of the walk's step then does not end the direction.
  bool PassedFurtherAlong() const;
  // How the walk's step failing now bears on its direction: outbid
  // (PassedFurtherAlong), learned slower than the reference, or a miss.
  PruningExplorer::Miss MissOf(bool learned_slower) const;
  // Gives the walk the outcome of trial `trial_number` (`batch_size`, handed
  // out as `kind`) when it is the walk's step (frugal censors a step that did
  // not reach at its bound) or, under swarm, a speculative trial (kept until
  // the walk reaches its size). Before AdvanceWalk; the trial's own bound
  // must still be the one it ran under.
  Status TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                  bool reached_target, bool learned_slower);
  // The multiple of the reference curve that in-flight trial `trial_number`
  // is held to (its bound over min_cost()); nullopt when no curve bounds it
  // (see ProgressLimits).
  std::optional<double> CurveRatio(int64_t trial_number) const;
  // The curve probes are held to (times their multiple): the reference;
  // before any run reached the target, the provisional reference's curve
  // so far with a last point at infinity (its target is still ahead, so
  // ProgressBound counts every point it reported); empty when none.
  std::vector<ProgressPoint> ReferenceCurve() const;
  // Which curve in-flight trial `trial_number` is held to (CurveKey);
  // nullopt when none.
  std::optional<CurveKey> CurveKeyOf(int64_t trial_number) const;
  // CurveKeyOf(trial_number) when it differs from the key at the trial's
  // last report (or it had none then): the curve it is held to changed
  // since; nullopt otherwise.
  std::optional<CurveKey> ChangedCurve(int64_t trial_number) const;
  // min(beta, kExplorationBeta) x min_cost(); nullopt without either.
  std::optional<double> ExplorationBound() const;
  // swarm: whether a speculative trial of `batch_size` can no longer serve
  // the walk (PruningExplorer::MayTry is false for it) or, once
  // the walk is over, the bandit (not an arm).
  bool Orphaned(int batch_size) const;
  // Trial::may_finish of `trial`, as it is handed out.
  bool MayFinish(const InFlightTrial& trial) const;
  // In-flight `trial` is a probe the walk can still use: its step, or a
  // speculative trial that is not orphaned.
  bool UsableProbe(const Trial& trial) const;
  // FromJson's reader of reference_progress and trial_progress (after
  // in_flight and min_cost); kInvalidArgument naming the field at fault.
  Status ReadProgress(const JsonFields& state);
  // FromJson's check that the in-flight explorations match the explorer;
  // kInvalidArgument naming the field of `state` at fault.
  Status ValidateExplorationTrial(const JsonFields& state) const;

  BatchSizeOptimizerConfig config_;
  Rng rng_;
  PruningExplorer explorer_;
  // Trial number of the exploration step in flight, if any.
  std::optional<int64_t> exploration_trial_;
  // All costs observed per batch size (windowed to config_.window_size).
  std::map<int, std::vector<double>> costs_;
  // Present once exploration is over.
  std::optional<GaussianTs> bandit_;
  std::map<int64_t, InFlightTrial> in_flight_;
  int64_t next_trial_number_ = 1;
  std::optional<double> min_cost_;
  int best_batch_size_ = 0;
  // See censored().
  std::map<int, double> censored_;
  // See speculative_results().
  std::map<int, SpeculativeResult> speculative_results_;
  // The learning curve of in-flight trial `trial_number`; empty when it
  // recorded none or is not in flight.
  const std::vector<ProgressPoint>& CurveOf(int64_t trial_number) const;
  // See reference_progress().
  std::vector<ProgressPoint> reference_progress_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_
