#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "zeus/core/early_stop.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

namespace zeus {

BatchSizeOptimizer::BatchSizeOptimizer(BatchSizeOptimizerConfig config)
    : config_(std::move(config)),
      rng_(config_.seed),
      explorer_(config_.batch_sizes, config_.default_batch_size,
                frugal_like() ? FrugalKnobs::kNumPruningRounds : config_.num_pruning_rounds,
                frugal_like() ? FrugalKnobs::kDirectionPatience : 1,
                frugal_like() ? FrugalKnobs::kExplorationBeta : 0.0),
      best_batch_size_(config_.default_batch_size) {}

StatusOr<BatchSizeOptimizer> BatchSizeOptimizer::Create(BatchSizeOptimizerConfig config) {
  ZEUS_RETURN_IF_ERROR(config.Validate());
  BatchSizeOptimizer optimizer(std::move(config));
  if (optimizer.explorer_.done()) optimizer.StartBandit();
  return optimizer;
}

GaussianTsConfig BatchSizeOptimizer::BanditConfig() const {
  GaussianTsConfig bandit;
  bandit.prior_mean = config_.prior_mean;
  bandit.prior_precision = config_.prior_precision;
  bandit.num_explorations =
      frugal_like() ? FrugalKnobs::kNumExplorations : config_.num_explorations;
  bandit.window_size = config_.window_size;
  bandit.unimodal = frugal_like();
  bandit.second_look_sigmas = FrugalKnobs::kSecondLookSigmas;
  if (frugal_like()) bandit.sample_stddev_scale = FrugalKnobs::kSampleStddevScale;
  return bandit;
}

bool BatchSizeOptimizer::exploring() const { return !explorer_.done(); }

std::optional<double> BatchSizeOptimizer::ExplorationBound() const {
  if (!config_.beta.has_value()) return std::nullopt;
  return EarlyStopCostBound(std::min(*config_.beta, FrugalKnobs::kExplorationBeta), min_cost_);
}

Trial BatchSizeOptimizer::NextTrial(int attempt) {
  // Only swarm's bookkeeping can fail here, and only on an explorer already
  // over, which AdvanceWalk never reports to.
  AdvanceWalk().IgnoreError();
  Trial trial;
  trial.trial_number = next_trial_number_++;
  // A submission stopped kMaxStoppableTries times goes to the cheapest size
  // known to reach the target, under the ordinary bound: it gets trained.
  const bool must_finish = frugal_like() && attempt > kMaxStoppableTries;
  if (!explorer_.done()) {
    std::optional<int> speculative;
    if (exploration_trial_.has_value() && config_.policy == BatchSizePolicy::kSwarm &&
        !must_finish) {
      speculative = SpeculativeSize();
    }
    if (must_finish) {
      trial.batch_size = best_batch_size_;
      trial.kind = TrialKind::kConcurrent;
    } else if (!exploration_trial_.has_value()) {
      trial.batch_size = explorer_.Current();
      trial.kind = TrialKind::kExploration;
      exploration_trial_ = trial.trial_number;
    } else if (speculative.has_value()) {
      trial.batch_size = *speculative;
      trial.kind = TrialKind::kSpeculative;
    } else {
      trial.batch_size = ConcurrentSize();
      trial.kind = TrialKind::kConcurrent;
    }
  } else {
    // Only frugal's unimodal bandit looks at the runs already out.
    std::set<int> pending;
    if (frugal_like()) {
      for (const auto& [number, in_flight] : in_flight_) pending.insert(in_flight.batch_size);
    }
    trial.batch_size = bandit_->Predict(rng_, &censored_, &pending);
    trial.kind = TrialKind::kBandit;
  }
  InFlightTrial record;
  static_cast<Trial&>(record) = trial;
  if (frugal_like() && trial.kind == TrialKind::kConcurrent) {
    record.min_cost_at_handout = min_cost_;
    record.never_restarted = must_finish;
  }
  record.may_finish = trial.may_finish = MayFinish(record);
  in_flight_[trial.trial_number] = std::move(record);
  return trial;
}

Status BatchSizeOptimizer::ReportResult(int64_t trial_number, double cost, bool reached_target) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  if (!std::isfinite(cost) || cost < 0 || cost > GaussianTs::kMaxAbsReward) {
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": cost must be finite and in [0, 1e100], got " +
                                nlohmann::json(cost).dump());
  }
  const int batch_size = it->second.batch_size;
  const TrialKind kind = it->second.kind;
  const std::vector<ProgressPoint>& progress = it->second.progress;
  // A run that the reference curve stopped (it had spent that curve's bound
  // before getting as far as the reference) is known only to be slower than
  // the reference: it counts as costing its whole bound, as a run that bound
  // stopped does.
  // (One that reported no progress is at kNoProgress: a check-in stopped it.)
  double observed = cost;
  bool learned_slower = false;
  if (!reached_target) {
    const std::optional<double> whole = EarlyStopThreshold(trial_number);
    const std::optional<double> at_progress = EarlyStopThreshold(
        trial_number, !progress.empty() ? progress.back().progress : kNoProgress);
    // (Held to a provisional curve, it has no whole bound yet: AdvanceWalk
    // censors it at the exploration bound once one is known.)
    if (at_progress.has_value() && (!whole.has_value() || *at_progress < *whole) &&
        cost > *at_progress) {
      observed = whole.has_value() ? std::max(cost, *whole) : cost;
      learned_slower = true;
    }
  }
  const std::optional<double> restart = RestartThreshold(trial_number);
  const bool restarted = !reached_target && restart.has_value() && cost < *restart;
  std::vector<ProgressPoint> curve = std::move(it->second.progress);
  in_flight_.erase(it);
  if (!restarted) Observe(batch_size, observed);
  if (reached_target && (!min_cost_.has_value() || cost < *min_cost_)) {
    min_cost_ = cost;
    best_batch_size_ = batch_size;
    // The new reference, or none when this run recorded no curve.
    reference_progress_ = std::move(curve);
  }
  ZEUS_RETURN_IF_ERROR(
      TellWalk(trial_number, batch_size, kind, observed, reached_target, learned_slower));
  return AdvanceWalk();
}

Status BatchSizeOptimizer::TellWalk(int64_t trial_number, int batch_size, TrialKind kind,
                                    double cost, bool reached_target, bool learned_slower) {
  if (exploration_trial_ == trial_number) {
    // Frugal keeps a size whose run stopped at the tight exploration bound as
    // a censored arm: one unlucky run does not prune a size for good.
    const std::optional<double> bound = EarlyStopThreshold(trial_number);
    if (frugal_like() && !reached_target && bound.has_value()) {
      censored_[batch_size] = *bound;
    }
    exploration_trial_.reset();
    ZEUS_RETURN_IF_ERROR(explorer_.Report(cost, reached_target, MissOf(learned_slower)));
    if (explorer_.done()) StartBandit();
  } else if (kind == TrialKind::kSpeculative && !explorer_.done()) {
    speculative_results_[batch_size] = {cost, reached_target, learned_slower};
  }
  return Status::Ok();
}

Status BatchSizeOptimizer::ReportFailure(int64_t trial_number) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  in_flight_.erase(it);
  if (exploration_trial_ == trial_number) exploration_trial_.reset();
  return Status::Ok();
}

Status BatchSizeOptimizer::RecordProgress(int64_t trial_number, double cost, double progress) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  if (!frugal_like()) return Status::Ok();
  // AppendProgress leaves the curve as it was when it refuses a point.
  Status appended = AppendProgress(it->second.progress, cost, progress);
  if (!appended.ok()) {
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": " + appended.message());
  }
  it->second.curve_at_report = CurveKeyOf(trial_number);
  return Status::Ok();
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold() const {
  return EarlyStopCostBound(config_.beta, min_cost_);
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold(int64_t trial_number) const {
  auto it = in_flight_.find(trial_number);
  if (it != in_flight_.end() && it->second.finish_bound.has_value()) {
    return *it->second.finish_bound;
  }
  const bool speculative = it != in_flight_.end() && it->second.kind == TrialKind::kSpeculative;
  if (!frugal_like() || (exploration_trial_ != trial_number && !speculative) ||
      !config_.beta.has_value()) {
    // A concurrent run went to the best size known then, to finish its
    // submission: a cheaper size found since does not tighten its bound
    // (stopping it would waste what it ran and cost a retry).
    if (it != in_flight_.end() && it->second.min_cost_at_handout.has_value()) {
      return EarlyStopCostBound(config_.beta, *it->second.min_cost_at_handout);
    }
    return EarlyStopThreshold();
  }
  if (speculative && Orphaned(it->second.batch_size)) {
    return EarlyStopCostBound(std::min(*config_.beta, SwarmKnobs::kOrphanBeta), min_cost_);
  }
  // A walk step outbid from further along tells the walk nothing more (its
  // failure would not end the direction): it is only a submission that
  // needs to finish, held to beta as a concurrent run is.
  if (exploration_trial_ == trial_number && PassedFurtherAlong()) return EarlyStopThreshold();
  return EarlyStopCostBound(std::min(*config_.beta, FrugalKnobs::kExplorationBeta), min_cost_);
}

bool BatchSizeOptimizer::MayFinish(const InFlightTrial& trial) const {
  switch (trial.kind) {
    case TrialKind::kBandit:
      return true;
    case TrialKind::kConcurrent:
      // Only swarm restarts a concurrent run, unless it ran on or must finish.
      return config_.policy != BatchSizePolicy::kSwarm || trial.never_restarted;
    case TrialKind::kExploration:
    case TrialKind::kSpeculative:
      return !frugal_like();
  }
  return false;
}

void BatchSizeOptimizer::Observe(int batch_size, double cost) {
  if (bandit_.has_value()) {
    // Runs of batch sizes pruned away (concurrent trials) teach the bandit nothing.
    if (bandit_->HasArm(batch_size)) {
      bandit_->Observe(batch_size, -cost).IgnoreError();
      censored_.erase(batch_size);
    }
    return;
  }
  std::vector<double>& costs = costs_[batch_size];
  costs.push_back(cost);
  if (config_.window_size > 0 && costs.size() > static_cast<size_t>(config_.window_size)) {
    costs.erase(costs.begin());
  }
}

void BatchSizeOptimizer::StartBandit() {
  std::vector<int> arms = explorer_.survivors();
  // Swarm: the size of the lowest cost known is an arm even when the walk
  // did not keep it (its result came from a size the walk never reached).
  // Zeus and frugal walk every size they hand out before the bandit.
  if (arms.empty() || (config_.policy == BatchSizePolicy::kSwarm &&
                       std::find(arms.begin(), arms.end(), best_batch_size_) == arms.end())) {
    arms.push_back(best_batch_size_);
  }
  // Censored sizes join as arms without their failed run (its cost is only a
  // bound); a size that is also an arm otherwise keeps its observations.
  for (auto it = censored_.begin(); it != censored_.end();) {
    if (std::find(arms.begin(), arms.end(), it->first) != arms.end()) {
      it = censored_.erase(it);
    } else {
      arms.push_back(it->first);
      ++it;
    }
  }
  std::sort(arms.begin(), arms.end());
  speculative_results_.clear();
  bandit_.emplace(arms, BanditConfig());
  for (int arm : arms) {
    auto it = costs_.find(arm);
    if (it == costs_.end() || censored_.count(arm) > 0) continue;
    // Costs are finite (checked on report), so Observe cannot fail.
    for (double cost : it->second) bandit_->Observe(arm, -cost).IgnoreError();
  }
  costs_.clear();
}

std::vector<ArmState> BatchSizeOptimizer::ArmStates() const {
  if (bandit_.has_value()) return bandit_->ArmStates();
  GaussianTs view(config_.batch_sizes, BanditConfig());
  for (const auto& [batch_size, costs] : costs_) {
    for (double cost : costs) view.Observe(batch_size, -cost).IgnoreError();
  }
  return view.ArmStates();
}

}  // namespace zeus
