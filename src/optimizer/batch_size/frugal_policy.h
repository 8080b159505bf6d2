// frugal: zeus with cheaper exploration (docs/BATCH_SIZE_POLICY.md).
//   - One walk, its runs stopped at min(beta, kExplorationBeta) x the lowest
//     cost: a size that cannot beat the best by much is cut early.
//   - A direction that found a size kExplorationBeta times cheaper than the
//     best at its start ends only after kDirectionPatience misses in a row;
//     the up direction is skipped when the down one found a size that much
//     cheaper than the default.
//   - A size whose walk run stopped at its bound is a censored arm (its cost
//     is known to exceed that bound), tried again once every other arm
//     samples a higher cost: one unlucky run does not prune a size for good.
//   - The run of the lowest cost records its learning curve; a probe (a walk
//     step) that spends its bound's multiple of that curve before getting as
//     far stops there (learned slower), and a probe that got as far as the
//     curve's last level before the target when its bound stopped it runs
//     on to beta as a concurrent run (a near miss).
//   - A concurrent trial keeps beta x the lowest cost at its hand-out.
//   - Thompson sampling over the best size of each basin of costs and its
//     neighbours, with narrower samples, kNumExplorations tries per survivor
//     first, and a second run for a candidate whose one run lies within the
//     leader's own spread.
//   - From try kMaxStoppableTries + 1 on, a submission's trial during the
//     walk is a concurrent one at the best size: it may finish.
//
// Internal to the optimizer layer. Thread-safety: not thread-safe.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_FRUGAL_POLICY_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_FRUGAL_POLICY_H_

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "src/optimizer/batch_size/walk_bandit_policy.h"

namespace zeus {

// frugal's fixed knobs, chosen once on the V100
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
  // The bandit samples only the best size of each basin of costs (the
  // leader's, and another when costs are not unimodal) and their
  // neighbours; one of them seen once gets a second run when its run cost
  // at most this many standard deviations above the leader's dearest run
  // (GaussianTsConfig::second_look_sigmas).
  static constexpr double kSecondLookSigmas = 1.0;
  // The bandit's Thompson samples are drawn with this x each arm's posterior
  // standard deviation (GaussianTsConfig::sample_stddev_scale): a job of tens
  // of recurrences cannot repay the exploration of full-width samples
  // between sizes whose costs differ by less than their runs' noise
  // (docs/BATCH_SIZE_POLICY.md, "Narrower Thompson samples").
  static constexpr double kSampleStddevScale = 0.6;
};

class FrugalPolicy : public WalkBanditPolicy {
 public:
  // REQUIRES: `config` passes Validate().
  explicit FrugalPolicy(BatchSizeOptimizerConfig config);
  std::unique_ptr<BatchSizePolicy> Clone() const override;

  std::optional<double> EarlyStopThreshold(int64_t trial_number) const override;
  // The whole bound, or for a probe held to a learning curve, the same
  // multiple of the reference's cost where it first got further than
  // `progress` (ProgressBound), when lower.
  std::optional<double> EarlyStopThreshold(int64_t trial_number, double progress) const override;
  using WalkBanditPolicy::EarlyStopThreshold;
  // Before the trial's first report, the curve's first point; after, the
  // curve at its best progress only when the curve it is held to changed
  // since its last report and it got there slower than that curve allows
  // (ProgressReachedBound); its whole bound otherwise.
  std::optional<double> CheckInThreshold(int64_t trial_number) const override;
  StatusOr<bool> RecordProgress(int64_t trial_number, double cost, double progress) override;
  // beta x min_cost() for a probe held to the exploration bound whose best
  // progress within it, `progress`, had got as far as the reference's last
  // level before the target, when that is above the exploration bound.
  std::optional<double> RunOnBound(int64_t trial_number, double progress) const override;
  // The trial's cost where it first reported its best progress over the
  // reference's cost where the reference first got as far (below 1: faster);
  // nullopt without a reference, until the trial got further than the
  // reference's first point, and past its last point before the target.
  std::optional<double> PaceOf(int64_t trial_number) const;
  // The reference curve scaled by the multiple the trial is held to; empty
  // when no curve bounds it.
  std::vector<ProgressPoint> ProgressLimits(int64_t trial_number) const;

 protected:
  FrugalPolicy(BatchSizeOptimizerConfig config, const WalkKnobs& walk);

  GaussianTsConfig BanditConfig() const override;
  bool MayFinish(const InFlightTrial& trial) const override;
  bool MustFinish(int attempt) const override;
  void OnConcurrentHandOut(InFlightTrial& trial, bool must_finish) const override;
  std::set<int> PendingSizes() const override;
  Status TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                  bool reached_target, bool learned_slower) override;
  std::optional<CurveKey> CurveKeyOf(int64_t trial_number) const override;
  StateKeeps Keeps() const override;

  // The multiple of the reference curve in-flight trial `trial_number` is
  // held to (its whole bound over min_cost()): probes only, once a
  // reference curve exists; nullopt otherwise.
  virtual std::optional<double> CurveRatio(int64_t trial_number) const;
  // The trial whose curve so far stands in for the reference before any run
  // has reached the target (swarm); nullopt here.
  virtual std::optional<int64_t> provisional_reference() const;
  // The curve probes are held to (times their multiple): the reference, or
  // the provisional reference's curve so far with a last point at infinity;
  // empty when none.
  std::vector<ProgressPoint> ReferenceCurve() const;
  // min(beta, kExplorationBeta) x min_cost(); nullopt without either.
  std::optional<double> ExplorationBound() const;
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_FRUGAL_POLICY_H_
