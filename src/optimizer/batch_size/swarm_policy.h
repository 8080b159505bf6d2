// swarm: frugal plus speculative trials for concurrent submissions
// (docs/BATCH_SIZE_POLICY.md, "Job groups"). With one trial at a time it
// hands out exactly frugal's sequence.
//   - While the walk's step is in flight, a further trial goes to a size the
//     walk may try next (PruningExplorer::Upcoming, SwarmKnobs' depths), one
//     run per size, held to the exploration bound. The walk consumes its
//     result when it reaches that size, judged against the lowest cost known
//     then; a run still out when the walk gets there becomes its step.
//   - Speculation starts with the first wave: before any run reached the
//     target, speculative runs are held to the step's curve so far
//     (provisional_reference()).
//   - A direction whose next size the learning curve stopped ends there, and
//     its depth goes to the other direction; once a step passed without
//     beating the best size known, nothing further along is speculated on.
//   - A speculative run the walk (or bandit) can no longer use is held to
//     kOrphanBeta; a step outbid by a speculative result further along is
//     held to beta as a concurrent run.
//   - A concurrent trial goes to the best size known, or to the probe in
//     flight that learns faster than the reference did (ConcurrentSize); it
//     restarts at a cheaper size while finishing would cost more than a fresh
//     run (RestartThreshold), unless it must finish.
//   - A probe the lowest cost overtook finishes when its curve projects that
//     to cost less than starting over (FinishBound).
//   - The size of the lowest cost known is a bandit arm even when the walk
//     did not reach it.
//
// Internal to the optimizer layer. Thread-safety: not thread-safe.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_SWARM_POLICY_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_SWARM_POLICY_H_

#include <memory>
#include <optional>
#include <vector>

#include "src/optimizer/batch_size/frugal_policy.h"

namespace zeus {

// swarm's fixed knobs beyond frugal's, chosen once on
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

class SwarmPolicy : public FrugalPolicy {
 public:
  // REQUIRES: `config` passes Validate().
  explicit SwarmPolicy(BatchSizeOptimizerConfig config);
  std::unique_ptr<BatchSizePolicy> Clone() const override;

  // frugal's bound, but a probe that finishes keeps its finish bound, an
  // orphaned speculative trial is held to min(beta, kOrphanBeta) x
  // min_cost(), and a step outbid from further along to beta.
  std::optional<double> EarlyStopThreshold(int64_t trial_number) const override;
  using FrugalPolicy::EarlyStopThreshold;
  // For a concurrent trial sent to a size that is no longer the cheapest
  // known, during the walk: its size's mean cost so far minus min_cost(),
  // when positive. Not for a trial that must finish or ran on.
  std::optional<double> RestartThreshold(int64_t trial_number) const override;
  // For a probe the walk can use, with a reference curve of two points or
  // more: `cost` + min_cost(), when its curve, scaled by its pace at
  // `best`, projects it to the target for less than that.
  std::optional<double> FinishBound(int64_t trial_number, const ProgressPoint& best,
                                    double cost) const override;
  // Before any run has reached the target: the walk's step in flight once
  // it has recorded progress. nullopt otherwise.
  std::optional<int64_t> provisional_reference() const override;

 protected:
  bool MayFinish(const InFlightTrial& trial) const override;
  std::optional<int> SpeculativeSize() const override;
  int ConcurrentSize() const override;
  Status TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                  bool reached_target, bool learned_slower) override;
  PruningExplorer::Miss MissOf(bool learned_slower) const override;
  Status AdvanceWalk() override;
  std::vector<int> BanditArms() const override;
  StateKeeps Keeps() const override;
  std::optional<double> CurveRatio(int64_t trial_number) const override;

 private:
  // A speculative result further along the walk's direction reached the
  // target within the exploration bound known now.
  bool PassedFurtherAlong() const;
  // The walk (or, once it is over, the bandit) can no longer use a run of
  // `batch_size`.
  bool Orphaned(int batch_size) const;
  // `trial` is the walk's step, or a speculative trial not orphaned.
  bool UsableProbe(const Trial& trial) const;
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_SWARM_POLICY_H_
