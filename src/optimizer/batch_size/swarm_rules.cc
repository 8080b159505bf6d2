// swarm's rules for concurrent submissions: speculative trials ahead of the
// walk, the walk fed from their results, the size a concurrent trial
// follows, a probe that finishes, a concurrent run that restarts.

#include <algorithm>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/core/early_stop.h"
#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

namespace zeus {

std::optional<int> BatchSizeOptimizer::SpeculativeSize() const {
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

int BatchSizeOptimizer::ConcurrentSize() const {
  if (config_.policy != BatchSizePolicy::kSwarm) return best_batch_size_;
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

std::optional<double> BatchSizeOptimizer::PaceOf(int64_t trial_number) const {
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

bool BatchSizeOptimizer::PassedFurtherAlong() const {
  if (config_.policy != BatchSizePolicy::kSwarm) return false;
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

PruningExplorer::Miss BatchSizeOptimizer::MissOf(bool learned_slower) const {
  if (PassedFurtherAlong()) return PruningExplorer::Miss::kOutbid;
  return learned_slower ? PruningExplorer::Miss::kLearnedSlower : PruningExplorer::Miss::kCounts;
}

Status BatchSizeOptimizer::AdvanceWalk() {
  if (config_.policy != BatchSizePolicy::kSwarm) return Status::Ok();
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

std::optional<double> BatchSizeOptimizer::FinishBound(int64_t trial_number,
                                                      const ProgressPoint& best,
                                                      double cost) const {
  auto it = in_flight_.find(trial_number);
  if (config_.policy != BatchSizePolicy::kSwarm || it == in_flight_.end() ||
      !UsableProbe(it->second) || it->second.finish_bound.has_value() || !min_cost_.has_value() ||
      !(*min_cost_ > 0.0) || reference_progress_.size() < 2) {
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

Status BatchSizeOptimizer::Finish(int64_t trial_number, const ProgressPoint& best, double cost) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
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

std::optional<ProgressPoint> BatchSizeOptimizer::FinishCandidate(int64_t trial_number) const {
  const std::vector<ProgressPoint>& curve = CurveOf(trial_number);
  if (curve.empty() || !ChangedCurve(trial_number).has_value()) return std::nullopt;
  return FirstAtBestProgress(curve);
}

std::optional<double> BatchSizeOptimizer::RestartThreshold(int64_t trial_number) const {
  if (config_.policy != BatchSizePolicy::kSwarm || bandit_.has_value() || !min_cost_.has_value()) {
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

bool BatchSizeOptimizer::UsableProbe(const Trial& trial) const {
  return trial.kind == TrialKind::kExploration ||
         (trial.kind == TrialKind::kSpeculative && !Orphaned(trial.batch_size));
}

bool BatchSizeOptimizer::Orphaned(int batch_size) const {
  if (explorer_.done()) return bandit_.has_value() && !bandit_->HasArm(batch_size);
  return !explorer_.MayTry(batch_size);
}

}  // namespace zeus
