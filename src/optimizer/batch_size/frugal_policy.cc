#include "src/optimizer/batch_size/frugal_policy.h"

#include <algorithm>
#include <limits>
#include <string>

#include "zeus/core/early_stop.h"

namespace zeus {

FrugalPolicy::FrugalPolicy(BatchSizeOptimizerConfig config)
    : FrugalPolicy(std::move(config),
                   WalkKnobs{FrugalKnobs::kNumPruningRounds, FrugalKnobs::kDirectionPatience,
                             FrugalKnobs::kExplorationBeta}) {}

FrugalPolicy::FrugalPolicy(BatchSizeOptimizerConfig config, const WalkKnobs& walk)
    : WalkBanditPolicy(std::move(config), walk) {}

std::unique_ptr<BatchSizePolicy> FrugalPolicy::Clone() const {
  return std::make_unique<FrugalPolicy>(*this);
}

GaussianTsConfig FrugalPolicy::BanditConfig() const {
  GaussianTsConfig bandit = WalkBanditPolicy::BanditConfig();
  bandit.num_explorations = FrugalKnobs::kNumExplorations;
  bandit.unimodal = true;
  bandit.second_look_sigmas = FrugalKnobs::kSecondLookSigmas;
  bandit.sample_stddev_scale = FrugalKnobs::kSampleStddevScale;
  return bandit;
}

bool FrugalPolicy::MayFinish(const InFlightTrial& trial) const {
  // Probes are held to the exploration bound and the learning curve.
  return trial.kind != TrialKind::kExploration && trial.kind != TrialKind::kSpeculative;
}

bool FrugalPolicy::MustFinish(int attempt) const { return attempt > kMaxStoppableTries; }

void FrugalPolicy::OnConcurrentHandOut(InFlightTrial& trial, bool must_finish) const {
  trial.min_cost_at_handout = min_cost_;
  trial.never_restarted = must_finish;
}

std::set<int> FrugalPolicy::PendingSizes() const {
  // The unimodal bandit does not send a second run to a size already out.
  std::set<int> pending;
  for (const auto& [number, trial] : in_flight_) pending.insert(trial.batch_size);
  return pending;
}

WalkBanditPolicy::StateKeeps FrugalPolicy::Keeps() const {
  StateKeeps keeps;
  keeps.curves = true;
  keeps.censored = true;
  keeps.concurrent_bounds = true;
  return keeps;
}

Status FrugalPolicy::TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                              bool reached_target, bool learned_slower) {
  // A size whose step stopped at its bound is a censored arm: one unlucky
  // run does not prune a size for good.
  if (exploration_trial_ == trial_number && !reached_target) {
    if (const std::optional<double> bound = EarlyStopThreshold(trial_number)) {
      censored_[batch_size] = *bound;
    }
  }
  return WalkBanditPolicy::TellWalk(trial_number, batch_size, kind, cost, reached_target,
                                    learned_slower);
}

std::optional<double> FrugalPolicy::ExplorationBound() const {
  if (!config_.beta.has_value()) return std::nullopt;
  return EarlyStopCostBound(std::min(*config_.beta, FrugalKnobs::kExplorationBeta), min_cost_);
}

std::optional<double> FrugalPolicy::EarlyStopThreshold(int64_t trial_number) const {
  auto it = in_flight_.find(trial_number);
  const bool speculative = it != in_flight_.end() && it->second.kind == TrialKind::kSpeculative;
  if ((exploration_trial_ != trial_number && !speculative) || !config_.beta.has_value()) {
    return WalkBanditPolicy::EarlyStopThreshold(trial_number);
  }
  return ExplorationBound();
}

std::optional<double> FrugalPolicy::EarlyStopThreshold(int64_t trial_number,
                                                       double progress) const {
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> curve =
      ratio.has_value() ? ProgressBound(ReferenceCurve(), progress, *ratio) : std::nullopt;
  if (!curve.has_value()) return bound;
  return bound.has_value() ? std::min(*bound, *curve) : curve;
}

std::optional<double> FrugalPolicy::CheckInThreshold(int64_t trial_number) const {
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

StatusOr<bool> FrugalPolicy::RecordProgress(int64_t trial_number, double cost, double progress) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) return NotInFlight(trial_number);
  // AppendProgress leaves the curve as it was when it refuses a point.
  Status appended = AppendProgress(it->second.progress, cost, progress);
  if (!appended.ok()) {
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": " + appended.message());
  }
  it->second.curve_at_report = CurveKeyOf(trial_number);
  return true;
}

std::optional<CurveKey> FrugalPolicy::CurveKeyOf(int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return std::nullopt;
  if (min_cost_.has_value()) return CurveKey{*min_cost_, *ratio};
  // A provisional curve changes at each report of its run, whose cost grows.
  return CurveKey{CurveOf(*provisional_reference()).back().cost, *ratio};
}

std::optional<int64_t> FrugalPolicy::provisional_reference() const { return std::nullopt; }

std::vector<ProgressPoint> FrugalPolicy::ReferenceCurve() const {
  if (min_cost_.has_value()) return reference_progress_;
  const std::optional<int64_t> provisional = provisional_reference();
  if (!provisional.has_value()) return {};
  std::vector<ProgressPoint> curve = CurveOf(*provisional);
  // Its target is still ahead: every point it reported bounds a probe.
  constexpr double kAhead = std::numeric_limits<double>::infinity();
  curve.push_back({kAhead, kAhead});
  return curve;
}

std::optional<double> FrugalPolicy::CurveRatio(int64_t trial_number) const {
  if (!min_cost_.has_value()) return std::nullopt;
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  if (reference_progress_.empty() || !bound.has_value() || !(*min_cost_ > 0.0)) {
    return std::nullopt;
  }
  // Only probes: concurrent and bandit runs go to sizes known to reach the
  // target, whose runs differ in early pace more than in cost.
  auto trial = in_flight_.find(trial_number);
  if (trial == in_flight_.end() || (trial->second.kind != TrialKind::kExploration &&
                                    trial->second.kind != TrialKind::kSpeculative)) {
    return std::nullopt;
  }
  return *bound / *min_cost_;
}

std::optional<double> FrugalPolicy::RunOnBound(int64_t trial_number, double progress) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> exploration = ExplorationBound();
  // Only a probe at the exploration bound: a probe held to another bound
  // (swarm's outbid step, orphaned speculation) does not run on.
  if (!ratio.has_value() || !bound.has_value() || !exploration.has_value() ||
      *bound != *exploration || ProgressBound(reference_progress_, progress, *ratio).has_value()) {
    return std::nullopt;
  }
  const std::optional<double> run_on = EarlyStopCostBound(config_.beta, min_cost_);
  if (!run_on.has_value() || !(*run_on > *bound)) return std::nullopt;
  return run_on;
}

std::vector<ProgressPoint> FrugalPolicy::ProgressLimits(int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return {};
  std::vector<ProgressPoint> limits = ReferenceCurve();
  for (ProgressPoint& point : limits) point.cost *= *ratio;
  return limits;
}

std::optional<double> FrugalPolicy::PaceOf(int64_t trial_number) const {
  const std::vector<ProgressPoint>& curve = CurveOf(trial_number);
  if (curve.empty()) return std::nullopt;
  const ProgressPoint& best = FirstAtBestProgress(curve);
  // No further than the reference's first point: one early point tells too
  // little of a pace.
  if (reference_progress_.empty() || best.progress <= reference_progress_.front().progress) {
    return std::nullopt;
  }
  const std::optional<double> reference =
      ProgressReachedBound(reference_progress_, best.progress, 1.0);
  if (!reference.has_value() || !(*reference > 0.0)) return std::nullopt;
  return best.cost / *reference;
}

}  // namespace zeus
