#include "src/optimizer/batch_size/walk_bandit_policy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "zeus/core/early_stop.h"

namespace zeus {

WalkBanditPolicy::WalkBanditPolicy(BatchSizeOptimizerConfig config, const WalkKnobs& walk)
    : config_(std::move(config)),
      rng_(config_.seed),
      explorer_(config_.batch_sizes, config_.default_batch_size, walk.num_pruning_rounds,
                walk.direction_patience, walk.decisive_ratio),
      best_batch_size_(config_.default_batch_size) {}

void WalkBanditPolicy::StartIfWalked() {
  if (explorer_.done()) StartBandit();
}

Status WalkBanditPolicy::NotInFlight(int64_t trial_number) const {
  return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                       " is not in flight");
}

// --- Zeus's rules (the hooks' defaults). ---

GaussianTsConfig WalkBanditPolicy::BanditConfig() const {
  GaussianTsConfig bandit;
  bandit.prior_mean = config_.prior_mean;
  bandit.prior_precision = config_.prior_precision;
  bandit.num_explorations = config_.num_explorations;
  bandit.window_size = config_.window_size;
  return bandit;
}

bool WalkBanditPolicy::MayFinish(const InFlightTrial&) const { return true; }
bool WalkBanditPolicy::MustFinish(int) const { return false; }
std::optional<int> WalkBanditPolicy::SpeculativeSize() const { return std::nullopt; }
int WalkBanditPolicy::ConcurrentSize() const { return best_batch_size_; }
void WalkBanditPolicy::OnConcurrentHandOut(InFlightTrial&, bool) const {}
std::set<int> WalkBanditPolicy::PendingSizes() const { return {}; }
Status WalkBanditPolicy::AdvanceWalk() { return Status::Ok(); }
std::optional<double> WalkBanditPolicy::RestartThreshold(int64_t) const { return std::nullopt; }
std::optional<double> WalkBanditPolicy::RunOnBound(int64_t, double) const { return std::nullopt; }
std::optional<double> WalkBanditPolicy::FinishBound(int64_t, const ProgressPoint&, double) const {
  return std::nullopt;
}
std::optional<CurveKey> WalkBanditPolicy::CurveKeyOf(int64_t) const { return std::nullopt; }
WalkBanditPolicy::StateKeeps WalkBanditPolicy::Keeps() const { return {}; }

PruningExplorer::Miss WalkBanditPolicy::MissOf(bool learned_slower) const {
  return learned_slower ? PruningExplorer::Miss::kLearnedSlower : PruningExplorer::Miss::kCounts;
}

std::vector<int> WalkBanditPolicy::BanditArms() const {
  std::vector<int> arms = explorer_.survivors();
  if (arms.empty()) arms.push_back(best_batch_size_);
  return arms;
}

Status WalkBanditPolicy::TellWalk(int64_t trial_number, int /*batch_size*/, TrialKind /*kind*/,
                                  double cost, bool reached_target, bool learned_slower) {
  if (exploration_trial_ != trial_number) return Status::Ok();
  exploration_trial_.reset();
  ZEUS_RETURN_IF_ERROR(explorer_.Report(cost, reached_target, MissOf(learned_slower)));
  if (explorer_.done()) StartBandit();
  return Status::Ok();
}

std::optional<double> WalkBanditPolicy::EarlyStopThreshold() const {
  return EarlyStopCostBound(config_.beta, min_cost_);
}

std::optional<double> WalkBanditPolicy::EarlyStopThreshold(int64_t trial_number) const {
  // A concurrent run went to the best size known then, to finish its
  // submission: a cheaper size found since does not tighten its bound.
  auto it = in_flight_.find(trial_number);
  if (it != in_flight_.end() && it->second.min_cost_at_handout.has_value()) {
    return EarlyStopCostBound(config_.beta, *it->second.min_cost_at_handout);
  }
  return EarlyStopThreshold();
}

std::optional<double> WalkBanditPolicy::EarlyStopThreshold(int64_t trial_number, double) const {
  return EarlyStopThreshold(trial_number);
}

std::optional<double> WalkBanditPolicy::CheckInThreshold(int64_t trial_number) const {
  return EarlyStopThreshold(trial_number, kNoProgress);
}

StatusOr<bool> WalkBanditPolicy::RecordProgress(int64_t trial_number, double, double) {
  if (in_flight_.count(trial_number) == 0) return NotInFlight(trial_number);
  return false;
}

// --- The skeleton. ---

Trial WalkBanditPolicy::NextTrial(int attempt) {
  // Only speculative bookkeeping can fail here, and only on an explorer
  // already over, which AdvanceWalk never reports to.
  AdvanceWalk().IgnoreError();
  Trial trial;
  trial.trial_number = next_trial_number_++;
  // A submission stopped kMaxStoppableTries times goes to the cheapest size
  // known to reach the target, under the ordinary bound: it gets trained.
  const bool must_finish = MustFinish(attempt);
  if (!explorer_.done()) {
    std::optional<int> speculative;
    if (exploration_trial_.has_value() && !must_finish) speculative = SpeculativeSize();
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
    const std::set<int> pending = PendingSizes();
    trial.batch_size = bandit_->Predict(rng_, &censored_, &pending);
    trial.kind = TrialKind::kBandit;
  }
  InFlightTrial record;
  static_cast<Trial&>(record) = trial;
  if (trial.kind == TrialKind::kConcurrent) OnConcurrentHandOut(record, must_finish);
  record.may_finish = trial.may_finish = MayFinish(record);
  in_flight_[trial.trial_number] = std::move(record);
  return trial;
}

Status WalkBanditPolicy::ReportResult(int64_t trial_number, double cost, bool reached_target) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) return NotInFlight(trial_number);
  if (!std::isfinite(cost) || cost < 0 || cost > GaussianTs::kMaxAbsReward) {
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": cost must be finite and in [0, 1e100], got " +
                                nlohmann::json(cost).dump());
  }
  const int batch_size = it->second.batch_size;
  const TrialKind kind = it->second.kind;
  const std::vector<ProgressPoint>& progress = it->second.progress;
  // A run a learning curve stopped (it had spent that curve's bound before
  // getting as far as the reference) is known only to be slower than the
  // reference: it counts as costing its whole bound, as a run that bound
  // stopped does. (One that reported no progress is at kNoProgress.)
  double observed = cost;
  bool learned_slower = false;
  if (!reached_target) {
    const std::optional<double> whole = EarlyStopThreshold(trial_number);
    const std::optional<double> at_progress = EarlyStopThreshold(
        trial_number, !progress.empty() ? progress.back().progress : kNoProgress);
    // (Held to a provisional curve, it has no whole bound yet: the walk
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
  // A restarted run says nothing of what a whole run of its size costs.
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

Status WalkBanditPolicy::ReportFailure(int64_t trial_number) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) return NotInFlight(trial_number);
  in_flight_.erase(it);
  if (exploration_trial_ == trial_number) exploration_trial_.reset();
  return Status::Ok();
}

const std::vector<ProgressPoint>& WalkBanditPolicy::CurveOf(int64_t trial_number) const {
  static const std::vector<ProgressPoint> kNone;
  auto it = in_flight_.find(trial_number);
  return it == in_flight_.end() ? kNone : it->second.progress;
}

std::optional<double> WalkBanditPolicy::BestProgress(int64_t trial_number) const {
  const std::vector<ProgressPoint>& curve = CurveOf(trial_number);
  if (curve.empty()) return std::nullopt;
  return curve.back().progress;
}

std::optional<double> WalkBanditPolicy::BestProgressWithin(int64_t trial_number,
                                                           double cost) const {
  std::optional<double> best;
  for (const ProgressPoint& point : CurveOf(trial_number)) {
    if (point.cost > cost) break;
    best = point.progress;
  }
  return best;
}

std::optional<CurveKey> WalkBanditPolicy::ChangedCurve(int64_t trial_number) const {
  const std::optional<CurveKey> now = CurveKeyOf(trial_number);
  auto it = in_flight_.find(trial_number);
  if (!now.has_value() || (it != in_flight_.end() && it->second.curve_at_report == now)) {
    return std::nullopt;
  }
  return now;
}

std::optional<ProgressPoint> WalkBanditPolicy::FinishCandidate(int64_t trial_number) const {
  const std::vector<ProgressPoint>& curve = CurveOf(trial_number);
  if (curve.empty() || !ChangedCurve(trial_number).has_value()) return std::nullopt;
  return FirstAtBestProgress(curve);
}

Status WalkBanditPolicy::RunOn(int64_t trial_number, double progress) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) return NotInFlight(trial_number);
  if (!RunOnBound(trial_number, progress).has_value()) {
    return FailedPreconditionError(
        "batch size optimizer: trial " + std::to_string(trial_number) +
        " cannot run on past its bound at progress " + nlohmann::json(progress).dump() +
        " (only a frugal or swarm probe held to the exploration bound that has got as far as "
        "the reference run's last level before the target)");
  }
  // The walk's failure here, as a run stopped at its bound would be; then a
  // concurrent run, held to beta x the lowest cost known now.
  ZEUS_RETURN_IF_ERROR(TellWalk(trial_number, it->second.batch_size, it->second.kind,
                                *EarlyStopThreshold(trial_number), false, false));
  it->second.kind = TrialKind::kConcurrent;
  it->second.min_cost_at_handout = min_cost_;
  it->second.never_restarted = true;
  it->second.may_finish = MayFinish(it->second);
  return AdvanceWalk();
}

Status WalkBanditPolicy::Finish(int64_t trial_number, const ProgressPoint& best, double cost) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) return NotInFlight(trial_number);
  const std::optional<double> finish = FinishBound(trial_number, best, cost);
  if (!finish.has_value()) {
    return FailedPreconditionError(
        "batch size optimizer: trial " + std::to_string(trial_number) + " cannot finish at cost " +
        nlohmann::json(cost).dump() + " from its point at cost " +
        nlohmann::json(best.cost).dump() +
        " (only a swarm probe the walk can use, with a reference curve, whose curve projects it "
        "to the target for less than the lowest cost more)");
  }
  // Its result, when it comes, is the walk's as any probe's.
  it->second.finish_bound = *finish;
  return Status::Ok();
}

void WalkBanditPolicy::Observe(int batch_size, double cost) {
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

void WalkBanditPolicy::StartBandit() {
  std::vector<int> arms = BanditArms();
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

std::vector<ArmState> WalkBanditPolicy::ArmStates() const {
  if (bandit_.has_value()) return bandit_->ArmStates();
  GaussianTs view(config_.batch_sizes, BanditConfig());
  for (const auto& [batch_size, costs] : costs_) {
    for (double cost : costs) view.Observe(batch_size, -cost).IgnoreError();
  }
  return view.ArmStates();
}

BatchSizeSearchView WalkBanditPolicy::View() const {
  BatchSizeSearchView view;
  view.exploring = exploring();
  view.min_cost = min_cost_;
  view.early_stop_threshold = EarlyStopThreshold();
  view.best_batch_size = best_batch_size_;
  return view;
}

}  // namespace zeus
