// frugal's and swarm's learning-curve bounds: the reference curve a probe
// is held to, check-ins, a near miss that runs on.

#include <algorithm>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/core/early_stop.h"
#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

namespace zeus {

const std::vector<ProgressPoint>& BatchSizeOptimizer::CurveOf(int64_t trial_number) const {
  static const std::vector<ProgressPoint> kNone;
  auto it = in_flight_.find(trial_number);
  return it == in_flight_.end() ? kNone : it->second.progress;
}

std::optional<double> BatchSizeOptimizer::CheckInThreshold(int64_t trial_number) const {
  const std::vector<ProgressPoint>& progress = CurveOf(trial_number);
  if (progress.empty()) return EarlyStopThreshold(trial_number, kNoProgress);
  const std::optional<CurveKey> now = ChangedCurve(trial_number);
  if (!now.has_value()) return EarlyStopThreshold(trial_number);
  // A changed curve: only a run that got to its best progress slower than
  // it allows is held to it between reports; one on pace there may show
  // more progress at its next report.
  const double best = progress.back().progress;
  if (ReachedSlowerThan(ReferenceCurve(), progress, best, now->ratio)) {
    return EarlyStopThreshold(trial_number, best);
  }
  return EarlyStopThreshold(trial_number);
}

std::optional<CurveKey> BatchSizeOptimizer::CurveKeyOf(int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return std::nullopt;
  if (min_cost_.has_value()) return CurveKey{*min_cost_, *ratio};
  // A provisional curve changes at each report of its run, whose cost grows.
  return CurveKey{CurveOf(*provisional_reference()).back().cost, *ratio};
}

std::optional<CurveKey> BatchSizeOptimizer::ChangedCurve(int64_t trial_number) const {
  const std::optional<CurveKey> now = CurveKeyOf(trial_number);
  auto it = in_flight_.find(trial_number);
  if (!now.has_value() || (it != in_flight_.end() && it->second.curve_at_report == now)) {
    return std::nullopt;
  }
  return now;
}

std::optional<int64_t> BatchSizeOptimizer::provisional_reference() const {
  if (config_.policy != BatchSizePolicy::kSwarm || min_cost_.has_value() ||
      !exploration_trial_.has_value()) {
    return std::nullopt;
  }
  if (CurveOf(*exploration_trial_).empty()) return std::nullopt;
  return *exploration_trial_;
}

std::vector<ProgressPoint> BatchSizeOptimizer::ReferenceCurve() const {
  if (min_cost_.has_value()) return reference_progress_;
  const std::optional<int64_t> provisional = provisional_reference();
  if (!provisional.has_value()) return {};
  std::vector<ProgressPoint> curve = CurveOf(*provisional);
  // Its target is still ahead: every point it reported bounds a probe.
  constexpr double kAhead = std::numeric_limits<double>::infinity();
  curve.push_back({kAhead, kAhead});
  return curve;
}

std::optional<double> BatchSizeOptimizer::BestProgress(int64_t trial_number) const {
  const std::vector<ProgressPoint>& curve = CurveOf(trial_number);
  if (curve.empty()) return std::nullopt;
  return curve.back().progress;
}

std::optional<double> BatchSizeOptimizer::CurveRatio(int64_t trial_number) const {
  auto trial = in_flight_.find(trial_number);
  if (trial != in_flight_.end() && trial->second.finish_bound.has_value()) return std::nullopt;
  if (!min_cost_.has_value()) {
    // The first wave: a speculative trial is held to the exploration bound's
    // multiple of the walk's step in flight, its provisional reference.
    if (!config_.beta.has_value() || !provisional_reference().has_value() ||
        trial == in_flight_.end() || trial->second.kind != TrialKind::kSpeculative ||
        Orphaned(trial->second.batch_size)) {
      return std::nullopt;
    }
    return std::min(*config_.beta, FrugalKnobs::kExplorationBeta);
  }
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  if (!frugal_like() || reference_progress_.empty() || !bound.has_value() || !(*min_cost_ > 0.0)) {
    return std::nullopt;
  }
  // Only probes: concurrent and bandit runs go to sizes known to reach the
  // target, whose runs differ in early pace more than in cost.
  if (trial == in_flight_.end() || (trial->second.kind != TrialKind::kExploration &&
                                    trial->second.kind != TrialKind::kSpeculative)) {
    return std::nullopt;
  }
  return *bound / *min_cost_;
}

std::optional<double> BatchSizeOptimizer::RunOnBound(int64_t trial_number, double progress) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> exploration = ExplorationBound();
  // Only a probe at the exploration bound: an outbid step (beta) or an
  // orphaned speculative run (kOrphanBeta) does not run on.
  if (!ratio.has_value() || !bound.has_value() || !exploration.has_value() ||
      *bound != *exploration || ProgressBound(reference_progress_, progress, *ratio).has_value()) {
    return std::nullopt;
  }
  const std::optional<double> run_on = EarlyStopCostBound(config_.beta, min_cost_);
  if (!run_on.has_value() || !(*run_on > *bound)) return std::nullopt;
  return run_on;
}

std::optional<double> BatchSizeOptimizer::BestProgressWithin(int64_t trial_number,
                                                             double cost) const {
  std::optional<double> best;
  for (const ProgressPoint& point : CurveOf(trial_number)) {
    if (point.cost > cost) break;
    best = point.progress;
  }
  return best;
}

Status BatchSizeOptimizer::RunOn(int64_t trial_number, double progress) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  if (!RunOnBound(trial_number, progress).has_value()) {
    return FailedPreconditionError(
        "batch size optimizer: trial " + std::to_string(trial_number) +
        " cannot run on past its bound at progress " + nlohmann::json(progress).dump() +
        " (only a frugal or swarm probe held to the exploration bound that has got as far as "
        "the reference run's last level before the target)");
  }
  // The walk's failure here, as a run stopped at its bound would be; then a
  // concurrent run.
  ZEUS_RETURN_IF_ERROR(TellWalk(trial_number, it->second.batch_size, it->second.kind,
                                *EarlyStopThreshold(trial_number), false, false));
  it->second.kind = TrialKind::kConcurrent;
  it->second.min_cost_at_handout = min_cost_;
  it->second.never_restarted = true;
  it->second.may_finish = MayFinish(it->second);
  return AdvanceWalk();
}

std::vector<ProgressPoint> BatchSizeOptimizer::ProgressLimits(int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return {};
  std::vector<ProgressPoint> limits = ReferenceCurve();
  for (ProgressPoint& point : limits) point.cost *= *ratio;
  return limits;
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold(int64_t trial_number,
                                                             double progress) const {
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> curve =
      ratio.has_value() ? ProgressBound(ReferenceCurve(), progress, *ratio) : std::nullopt;
  if (!curve.has_value()) return bound;
  return bound.has_value() ? std::min(*bound, *curve) : curve;
}

}  // namespace zeus
