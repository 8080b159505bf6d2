#include "src/optimizer/batch_size/swarm_policy.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "zeus/core/early_stop.h"

namespace zeus {

SwarmPolicy::SwarmPolicy(BatchSizeOptimizerConfig config)
    : FrugalPolicy(std::move(config),
                   WalkKnobs{FrugalKnobs::kNumPruningRounds, FrugalKnobs::kDirectionPatience,
                             FrugalKnobs::kExplorationBeta}) {}

std::unique_ptr<BatchSizePolicy> SwarmPolicy::Clone() const {
  return std::make_unique<SwarmPolicy>(*this);
}

WalkBanditPolicy::StateKeeps SwarmPolicy::Keeps() const {
  StateKeeps keeps = FrugalPolicy::Keeps();
  keeps.finishes = true;
  keeps.speculation = true;
  return keeps;
}

bool SwarmPolicy::MayFinish(const InFlightTrial& trial) const {
  // A concurrent run may be restarted unless it ran on or must finish.
  if (trial.kind == TrialKind::kConcurrent) return trial.never_restarted;
  return FrugalPolicy::MayFinish(trial);
}

std::vector<int> SwarmPolicy::BanditArms() const {
  // The size of the lowest cost known is an arm even when the walk did not
  // keep it (its result came from a size the walk never reached).
  std::vector<int> arms = explorer_.survivors();
  if (std::find(arms.begin(), arms.end(), best_batch_size_) == arms.end()) {
    arms.push_back(best_batch_size_);
  }
  return arms;
}

Status SwarmPolicy::TellWalk(int64_t trial_number, int batch_size, TrialKind kind, double cost,
                             bool reached_target, bool learned_slower) {
  // A speculative result waits until the walk reaches its size.
  if (exploration_trial_ != trial_number && kind == TrialKind::kSpeculative && !explorer_.done()) {
    speculative_results_[batch_size] = {cost, reached_target, learned_slower};
  }
  return FrugalPolicy::TellWalk(trial_number, batch_size, kind, cost, reached_target,
                                learned_slower);
}

std::optional<double> SwarmPolicy::EarlyStopThreshold(int64_t trial_number) const {
  // (Also asked of the walk's step just reported, no longer in flight.)
  auto it = in_flight_.find(trial_number);
  if (it != in_flight_.end() && it->second.finish_bound.has_value()) {
    return *it->second.finish_bound;
  }
  const bool speculative = it != in_flight_.end() && it->second.kind == TrialKind::kSpeculative;
  if ((exploration_trial_ == trial_number || speculative) && config_.beta.has_value()) {
    if (speculative && Orphaned(it->second.batch_size)) {
      return EarlyStopCostBound(std::min(*config_.beta, SwarmKnobs::kOrphanBeta), min_cost_);
    }
    // A step outbid from further along tells the walk nothing more (its
    // failure would not end the direction): it is only a submission that
    // needs to finish, held to beta as a concurrent run is.
    if (exploration_trial_ == trial_number && PassedFurtherAlong()) return EarlyStopThreshold();
  }
  return FrugalPolicy::EarlyStopThreshold(trial_number);
}

std::optional<int64_t> SwarmPolicy::provisional_reference() const {
  if (min_cost_.has_value() || !exploration_trial_.has_value()) return std::nullopt;
  if (CurveOf(*exploration_trial_).empty()) return std::nullopt;
  return *exploration_trial_;
}

std::optional<double> SwarmPolicy::CurveRatio(int64_t trial_number) const {
  auto trial = in_flight_.find(trial_number);
  if (trial != in_flight_.end() && trial->second.finish_bound.has_value()) return std::nullopt;
  if (min_cost_.has_value()) return FrugalPolicy::CurveRatio(trial_number);
  // The first wave: a speculative trial is held to the exploration bound's
  // multiple of the walk's step in flight, its provisional reference.
  if (!config_.beta.has_value() || !provisional_reference().has_value() ||
      trial == in_flight_.end() || trial->second.kind != TrialKind::kSpeculative ||
      Orphaned(trial->second.batch_size)) {
    return std::nullopt;
  }
  return std::min(*config_.beta, FrugalKnobs::kExplorationBeta);
}

std::optional<int> SwarmPolicy::SpeculativeSize() const {
  // Without early stopping a speculative run of a bad size runs to its end.
  // Before any run has reached the target (the first wave) a speculative run
  // has no whole bound yet, only the walk's step's curve so far
  // (provisional_reference); it is held to the exploration bound from its
  // first report after a run has reached (bounds are read at report time).
  if (!config_.beta.has_value()) return std::nullopt;
  // Once a walk step has passed without beating the best size known (now
  // two or more sizes behind the step in flight), the walk is at or past
  // the optimum of costs unimodal in the batch size: no speculation further
  // along its direction.
  const bool walk_improving = explorer_.StepsBehind(best_batch_size_) < 2;
  const std::vector<int> ahead = explorer_.AheadInDirection();
  // A direction whose next size the learning curve stopped ends there
  // (patience 1): its depth goes to the other direction.
  const auto ends_next = [this](const std::vector<int>& next) {
    if (next.empty()) return false;
    auto result = speculative_results_.find(next.front());
    return result != speculative_results_.end() && result->second.learned_slower;
  };
  size_t down_depth = SwarmKnobs::kDownSpeculationDepth;
  size_t up_depth = SwarmKnobs::kUpSpeculationDepth;
  const bool down_ends = ends_next(explorer_.Upcoming(1, 0));
  const bool up_ends = ends_next(explorer_.Upcoming(0, 1));
  if (down_ends != up_ends) {
    if (down_ends) {
      up_depth += down_depth;
      down_depth = 0;
    } else {
      down_depth += up_depth;
      up_depth = 0;
    }
  }
  for (int size : explorer_.Upcoming(down_depth, up_depth)) {
    if (!walk_improving && std::find(ahead.begin(), ahead.end(), size) != ahead.end()) continue;
    if (speculative_results_.count(size) > 0) continue;
    const bool out = std::any_of(in_flight_.begin(), in_flight_.end(), [size](const auto& entry) {
      return entry.second.batch_size == size;
    });
    if (!out) return size;
  }
  return std::nullopt;
}

int SwarmPolicy::ConcurrentSize() const {
  // A probe that got as far as it has for less than the run of the lowest
  // cost did is a better bet for a run that must reach the target than that
  // size: it is likely cheaper, and its run observes it once more.
  int size = best_batch_size_;
  double fastest = 1.0;
  for (const auto& [number, trial] : in_flight_) {
    if (!UsableProbe(trial)) continue;
    const std::optional<double> pace = PaceOf(number);
    if (pace.has_value() && *pace < fastest) {
      fastest = *pace;
      size = trial.batch_size;
    }
  }
  return size;
}

bool SwarmPolicy::PassedFurtherAlong() const {
  const std::optional<double> bound = ExplorationBound();
  for (int size : explorer_.AheadInDirection()) {
    auto it = speculative_results_.find(size);
    if (it != speculative_results_.end() && it->second.reached_target &&
        (!bound.has_value() || it->second.cost <= *bound || size == best_batch_size_)) {
      return true;
    }
  }
  return false;
}

PruningExplorer::Miss SwarmPolicy::MissOf(bool learned_slower) const {
  if (PassedFurtherAlong()) return PruningExplorer::Miss::kOutbid;
  return FrugalPolicy::MissOf(learned_slower);
}

Status SwarmPolicy::AdvanceWalk() {
  while (!explorer_.done() && !exploration_trial_.has_value()) {
    const int size = explorer_.Current();
    auto result = speculative_results_.find(size);
    if (result != speculative_results_.end()) {
      // Judged against the lowest cost known now, as the walk's own step
      // would be: above the exploration bound is a failure.
      const SpeculativeResult r = result->second;
      speculative_results_.erase(result);
      const std::optional<double> bound = ExplorationBound();
      // The size of the lowest cost known (its concurrent runs' or its own)
      // passes whatever this run cost.
      const bool passed =
          r.reached_target && (!bound.has_value() || r.cost <= *bound || size == best_batch_size_);
      // A run that stopped short is censored at what it spent (its cost is
      // known to exceed that); a run that reached above the bound keeps its
      // observation and is pruned.
      // (One the learning curve stopped is known to be slower than the
      // reference: at least the exploration bound, for a run stopped by a
      // provisional curve before that bound existed.)
      if (!r.reached_target && config_.beta.has_value()) {
        censored_[size] = r.learned_slower && bound.has_value() ? std::max(r.cost, *bound) : r.cost;
      }
      ZEUS_RETURN_IF_ERROR(explorer_.Report(r.cost, passed, MissOf(r.learned_slower)));
      continue;
    }
    for (auto& [number, trial] : in_flight_) {
      if (trial.kind == TrialKind::kSpeculative && trial.batch_size == size) {
        trial.kind = TrialKind::kExploration;
        exploration_trial_ = number;
        break;
      }
    }
    break;
  }
  if (explorer_.done() && !bandit_.has_value()) StartBandit();
  return Status::Ok();
}

std::optional<double> SwarmPolicy::FinishBound(int64_t trial_number, const ProgressPoint& best,
                                               double cost) const {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end() || !UsableProbe(it->second) || it->second.finish_bound.has_value() ||
      !min_cost_.has_value() || !(*min_cost_ > 0.0) || reference_progress_.size() < 2) {
    return std::nullopt;
  }
  // Where the reference first got as far, else its last point before the
  // target.
  const double reference_cost =
      ProgressReachedBound(reference_progress_, best.progress, 1.0)
          .value_or(reference_progress_[reference_progress_.size() - 2].cost);
  if (!(reference_cost > 0.0)) return std::nullopt;
  const double projected = best.cost / reference_cost * *min_cost_;
  if (!(projected - cost < *min_cost_)) return std::nullopt;
  return cost + *min_cost_;
}

std::optional<double> SwarmPolicy::RestartThreshold(int64_t trial_number) const {
  if (bandit_.has_value() || !min_cost_.has_value()) {
    return std::nullopt;
  }
  auto trial = in_flight_.find(trial_number);
  if (trial == in_flight_.end() || trial->second.kind != TrialKind::kConcurrent ||
      trial->second.never_restarted || trial->second.batch_size == best_batch_size_) {
    return std::nullopt;
  }
  auto costs = costs_.find(trial->second.batch_size);
  if (costs == costs_.end() || costs->second.empty()) return std::nullopt;
  const double mean = std::accumulate(costs->second.begin(), costs->second.end(), 0.0) /
                      static_cast<double>(costs->second.size());
  if (!(mean > *min_cost_)) return std::nullopt;
  return mean - *min_cost_;
}

bool SwarmPolicy::UsableProbe(const Trial& trial) const {
  return trial.kind == TrialKind::kExploration ||
         (trial.kind == TrialKind::kSpeculative && !Orphaned(trial.batch_size));
}

bool SwarmPolicy::Orphaned(int batch_size) const {
  if (explorer_.done()) return bandit_.has_value() && !bandit_->HasArm(batch_size);
  return !explorer_.MayTry(batch_size);
}

}  // namespace zeus
