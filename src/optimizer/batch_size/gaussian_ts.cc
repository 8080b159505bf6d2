#include "zeus/optimizer/batch_size/gaussian_ts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "zeus/util/json.h"

namespace zeus {

GaussianTs::GaussianTs(std::vector<int> arms, const GaussianTsConfig& config)
    : arms_(std::move(arms)), config_(config) {
  for (int arm : arms_) {
    observations_[arm];
    Refit(arm);
  }
}

Status GaussianTs::Observe(int batch_size, double reward) {
  ZEUS_RETURN_IF_ERROR(Append(batch_size, reward));
  Refit(batch_size);
  return Status::Ok();
}

Status GaussianTs::Append(int batch_size, double reward) {
  auto it = observations_.find(batch_size);
  if (it == observations_.end()) {
    return InvalidArgumentError("GaussianTs: batch size " + std::to_string(batch_size) +
                                " is not an arm");
  }
  if (!std::isfinite(reward) || std::fabs(reward) > kMaxAbsReward) {
    return InvalidArgumentError("GaussianTs: reward " + std::to_string(reward) +
                                " for batch size " + std::to_string(batch_size) +
                                " is not finite or exceeds 1e100 in magnitude");
  }
  it->second.push_back(reward);
  if (config_.window_size > 0 && it->second.size() > static_cast<size_t>(config_.window_size)) {
    it->second.pop_front();
  }
  return Status::Ok();
}

void GaussianTs::Refit(int batch_size) {
  const std::deque<double>& rewards = observations_.at(batch_size);
  Belief& belief = beliefs_[batch_size];
  belief.mean = config_.prior_mean;
  belief.precision = config_.prior_precision;
  belief.reward_precision = 0.0;
  if (rewards.empty()) return;

  const double n = static_cast<double>(rewards.size());
  double sum = 0.0;
  for (double r : rewards) sum += r;
  const double mean = sum / n;
  double squares = 0.0;
  for (double r : rewards) squares += (r - mean) * (r - mean);
  const double variance = squares / n;

  if (variance == 0.0) {
    // Infinite reward precision: the belief collapses onto the sample mean.
    belief.reward_precision = std::numeric_limits<double>::infinity();
    belief.precision = std::numeric_limits<double>::infinity();
    belief.mean = mean;
    return;
  }
  belief.reward_precision = 1.0 / variance;
  belief.precision = config_.prior_precision + n * belief.reward_precision;
  if (std::isinf(belief.precision)) {
    // A variance so small that its inverse overflows: as variance 0.
    belief.reward_precision = std::numeric_limits<double>::infinity();
    belief.mean = mean;
    return;
  }
  belief.mean = (config_.prior_precision * config_.prior_mean + belief.reward_precision * sum) /
                belief.precision;
  if (!std::isfinite(belief.mean)) {
    // A product overflowed; the same mean as a weighted average of the prior
    // mean and the sample mean, with weights in [0, 1].
    belief.mean = config_.prior_precision / belief.precision * config_.prior_mean +
                  n * belief.reward_precision / belief.precision * mean;
  }
}

std::optional<size_t> GaussianTs::Leader() const {
  std::optional<size_t> leader;
  for (size_t i = 0; i < arms_.size(); ++i) {
    if (observations_.at(arms_[i]).empty()) continue;
    if (!leader.has_value() || beliefs_.at(arms_[i]).mean > beliefs_.at(arms_[*leader]).mean) {
      leader = i;
    }
  }
  return leader;
}

std::vector<size_t> GaussianTs::LocalBests() const {
  std::vector<size_t> observed;
  for (size_t i = 0; i < arms_.size(); ++i) {
    if (!observations_.at(arms_[i]).empty()) observed.push_back(i);
  }
  std::vector<size_t> bests;
  for (size_t k = 0; k < observed.size(); ++k) {
    const double mean = beliefs_.at(arms_[observed[k]]).mean;
    if ((k == 0 || mean > beliefs_.at(arms_[observed[k - 1]]).mean) &&
        (k + 1 == observed.size() || mean > beliefs_.at(arms_[observed[k + 1]]).mean)) {
      bests.push_back(observed[k]);
    }
  }
  return bests;
}

int GaussianTs::SecondLook(size_t leader, const std::set<size_t>& candidates,
                           const std::set<int>* pending) const {
  // Rewards are -cost: the dearest run has the smallest reward. Refit's
  // reward precision is 1 / the runs' population variance (infinite for
  // equal runs).
  const std::deque<double>& leader_rewards = observations_.at(arms_[leader]);
  const double reward_precision = beliefs_.at(arms_[leader]).reward_precision;
  const double stddev = std::isinf(reward_precision) ? 0.0 : 1.0 / std::sqrt(reward_precision);
  const double bound_reward = *std::min_element(leader_rewards.begin(), leader_rewards.end()) -
                              config_.second_look_sigmas * stddev;
  for (size_t i : candidates) {
    const int arm = arms_[i];
    if (observations_.at(arm).size() != 1) continue;
    if (pending != nullptr && pending->count(arm) > 0) continue;
    if (observations_.at(arm).front() >= bound_reward) return arm;
  }
  return -1;
}

int GaussianTs::Predict(Rng& rng, const std::map<int, double>* censored,
                        const std::set<int>* pending) const {
  // The censored bound of an arm with no observation, if any.
  auto censored_cost = [&](int arm) -> std::optional<double> {
    if (censored == nullptr || !observations_.at(arm).empty()) return std::nullopt;
    auto it = censored->find(arm);
    if (it == censored->end()) return std::nullopt;
    return it->second;
  };
  // Explore under-observed arms first, in a random order.
  for (size_t index : rng.Permutation(arms_.size())) {
    const int arm = arms_[index];
    if (censored_cost(arm).has_value()) continue;
    // A flat belief (no observations, no prior precision) cannot be sampled.
    if (observations_.at(arm).size() < static_cast<size_t>(config_.num_explorations) ||
        beliefs_.at(arm).precision == 0.0) {
      return arm;
    }
  }
  // The candidates: every arm, or in unimodal mode the best arm of each
  // basin of the posterior means (the leader's, and any other) with its
  // neighbours.
  std::vector<size_t> candidates(arms_.size());
  std::iota(candidates.begin(), candidates.end(), size_t{0});
  if (config_.unimodal) {
    if (std::optional<size_t> leader = Leader(); leader.has_value()) {
      std::set<size_t> near;
      std::vector<size_t> bests = LocalBests();
      bests.push_back(*leader);
      for (size_t best : bests) {
        for (size_t i = best == 0 ? 0 : best - 1; i <= std::min(best + 1, arms_.size() - 1); ++i) {
          near.insert(i);
        }
      }
      if (int arm = SecondLook(*leader, near, pending); arm >= 0) return arm;
      candidates.assign(near.begin(), near.end());
    }
  }
  int best_arm = arms_[candidates.front()];
  double best_sample = -std::numeric_limits<double>::infinity();
  for (size_t i : candidates) {
    const int arm = arms_[i];
    double sample = 0.0;
    if (std::optional<double> bound = censored_cost(arm); bound.has_value()) {
      sample = -*bound;
    } else {
      const Belief& belief = beliefs_.at(arm);
      const double stddev = std::isinf(belief.precision)
                                ? 0.0
                                : config_.sample_stddev_scale / std::sqrt(belief.precision);
      sample = rng.Normal(belief.mean, stddev);
    }
    if (sample > best_sample) {
      best_sample = sample;
      best_arm = arm;
    }
  }
  return best_arm;
}

ArmState GaussianTs::Arm(int batch_size) const {
  ArmState state;
  state.batch_size = batch_size;
  auto it = observations_.find(batch_size);
  if (it == observations_.end()) return state;
  const Belief& belief = beliefs_.at(batch_size);
  state.num_observations = static_cast<int>(it->second.size());
  state.mean = belief.mean;
  state.precision = belief.precision;
  state.reward_precision = belief.reward_precision;
  return state;
}

std::vector<ArmState> GaussianTs::ArmStates() const {
  std::vector<ArmState> states;
  states.reserve(arms_.size());
  for (int arm : arms_) states.push_back(Arm(arm));
  return states;
}

nlohmann::json GaussianTs::ToJson() const {
  nlohmann::json arms = nlohmann::json::array();
  for (int arm : arms_) {
    const std::deque<double>& rewards = observations_.at(arm);
    arms.push_back(
        {{"batch_size", arm}, {"rewards", std::vector<double>(rewards.begin(), rewards.end())}});
  }
  return {{"arms", arms}};
}

StatusOr<GaussianTs> GaussianTs::FromJson(const nlohmann::json& json,
                                          const GaussianTsConfig& config) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields f, JsonFields::Of(json, "bandit", {"arms"}));
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* arms_json, f.Array("arms"));
  if (arms_json->empty()) return f.Error("arms", "must not be empty");
  std::vector<int> arms;
  std::vector<std::vector<double>> rewards;
  for (size_t i = 0; i < arms_json->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields arm, f.Element("arms", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size,
                          arm.Int("batch_size", 1, std::numeric_limits<int>::max()));
    if (std::find(arms.begin(), arms.end(), batch_size) != arms.end()) {
      return arm.Error("batch_size", "duplicate arm " + std::to_string(batch_size));
    }
    arms.push_back(static_cast<int>(batch_size));
    ZEUS_ASSIGN_OR_RETURN(rewards.emplace_back(),
                          arm.DoubleArray("rewards", -kMaxAbsReward, kMaxAbsReward));
  }
  GaussianTs bandit(arms, config);
  // A belief depends only on the arm's final window: refit each arm once
  // (loading stays linear in the history, which the server does per request).
  for (size_t i = 0; i < arms.size(); ++i) {
    for (double r : rewards[i]) ZEUS_RETURN_IF_ERROR(bandit.Append(arms[i], r));
    bandit.Refit(arms[i]);
    const Belief& belief = bandit.beliefs_.at(arms[i]);
    if (!std::isfinite(belief.mean) || std::isnan(belief.precision)) {
      return InvalidArgumentError("bandit: arm " + std::to_string(arms[i]) +
                                  ": the rewards give a non-finite belief (mean " +
                                  nlohmann::json(belief.mean).dump() + ")");
    }
  }
  return bandit;
}

}  // namespace zeus
