// Gaussian Thompson sampling over a job's batch sizes (the bandit of Zeus).
//
// Reward = -cost. Each arm keeps its (windowed) observations; after every
// observation the arm's reward precision is re-estimated as 1 / population
// variance of those observations (variance 0 -> infinite precision: a sample
// is the mean) and the arm's belief is refitted from the prior. Predict()
// first explores arms with fewer than `num_explorations` observations, in a
// random order; otherwise it draws one normal sample per arm from its belief
// (standard deviation scaled by `sample_stddev_scale`) and returns the arm
// with the largest sampled reward. Arms known only from a
// censored run (see Predict) sample their bound instead. In unimodal mode
// (frugal) the sampling is limited to the best arm of each basin of costs
// and its neighbours, and one of them seen once may get a second run first
// (see Predict).
//
// Thread-safety: not thread-safe.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_GAUSSIAN_TS_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_GAUSSIAN_TS_H_

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/core/rng.h"
#include "zeus/status.h"

namespace zeus {

// One arm's belief, for observability. `precision` may be +infinity (all
// observations equal) or equal the prior precision (no observations).
struct ArmState {
  int batch_size = 0;
  // Observations inside the window (all of them when the window is 0).
  int num_observations = 0;
  // Posterior mean of the expected reward (-cost).
  double mean = 0.0;
  // Posterior precision of the expected reward.
  double precision = 0.0;
  // Reward precision estimated from the observations (1 / variance).
  double reward_precision = 0.0;
};

struct GaussianTsConfig {
  // Prior mean of every arm's expected reward. Default: 0.
  double prior_mean = 0.0;
  // Prior precision of every arm's expected reward. Default: 0 (flat).
  double prior_precision = 0.0;
  // Arms with fewer observations than this are explored before sampling.
  // Default: 2.
  int num_explorations = 2;
  // How many most recent observations of each arm are kept (0 = all).
  // Default: 0.
  int window_size = 0;
  // Treat cost as unimodal in the batch size (see Predict). Default: false
  // (Zeus).
  bool unimodal = false;
  // Unimodal mode: how far above the leader's dearest run, in standard
  // deviations of its runs, a candidate's one run may lie and still earn a
  // second run (see Predict). Default: 1.
  double second_look_sigmas = 1.0;
  // Each sample's standard deviation is the belief's times this (> 0): below
  // 1, the draws stay nearer each arm's posterior mean and the bandit tries
  // a close rival less often. Default: 1 (Zeus's Thompson sampling).
  double sample_stddev_scale = 1.0;
};

class GaussianTs {
 public:
  // Rewards (and so costs) are refused beyond this magnitude, so the sums and
  // squares of a refit cannot overflow: a belief is never NaN, its mean is
  // always finite.
  static constexpr double kMaxAbsReward = 1e100;

  // REQUIRES: `arms` non-empty and unique (checked by the caller's config
  // validation); window_size >= 0, num_explorations >= 0, prior_precision >= 0,
  // sample_stddev_scale > 0.
  GaussianTs(std::vector<int> arms, const GaussianTsConfig& config);

  const std::vector<int>& arms() const { return arms_; }
  bool HasArm(int batch_size) const { return observations_.count(batch_size) > 0; }

  // Records reward `reward` for `batch_size` and refits that arm.
  // kInvalidArgument for an unknown arm or a reward that is not finite or
  // exceeds kMaxAbsReward in magnitude.
  Status Observe(int batch_size, double reward);

  // The next arm to try, drawing from `rng`. `censored` (may be null) maps
  // arms to a cost their runs are known to exceed (a run stopped at that
  // bound before reaching the target): an arm in it with no observation is
  // not explored first and samples the reward -cost, the best its censored
  // run allows, so it is tried again once every other arm samples worse.
  //
  // Unimodal mode: the leader is the observed arm with the best posterior
  // mean; the candidates are the best arm of each basin of the posterior
  // means in batch-size order (an observed arm whose mean beats both nearest
  // observed arms'; the leader's basin is one, a second appears when costs
  // are not unimodal after all) and their neighbours. A candidate with
  // exactly one observation, no run in `pending` (may be null: the batch
  // sizes of runs handed out and not yet reported) and a cost within the
  // leader's own spread (its dearest run plus `second_look_sigmas` standard
  // deviations of its runs) is returned first, smaller batch size first:
  // one unlucky run is no proof against it. Otherwise the candidates are
  // sampled as above.
  int Predict(Rng& rng, const std::map<int, double>* censored = nullptr,
              const std::set<int>* pending = nullptr) const;

  ArmState Arm(int batch_size) const;
  std::vector<ArmState> ArmStates() const;

  // The arms and their windowed observations; beliefs are recomputed on load,
  // so a round trip is exact.
  nlohmann::json ToJson() const;
  // REQUIRES: the same config as the serialised bandit. kInvalidArgument for
  // a reward Observe() would refuse.
  static StatusOr<GaussianTs> FromJson(const nlohmann::json& json, const GaussianTsConfig& config);

 private:
  struct Belief {
    double mean = 0.0;
    double precision = 0.0;
    double reward_precision = 0.0;
  };
  // Validates `reward` and appends it to the arm's window without refitting.
  Status Append(int batch_size, double reward);
  void Refit(int batch_size);
  // The index in arms_ of the observed arm with the best posterior mean
  // (the first on ties); nullopt when no arm has an observation.
  std::optional<size_t> Leader() const;
  // Indices of the observed arms whose mean reward beats both nearest
  // observed arms' in batch-size order: the best arm of each basin.
  std::vector<size_t> LocalBests() const;
  // Unimodal mode: the arm of `candidates` (indices) owed a second run
  // (see Predict), or -1.
  int SecondLook(size_t leader, const std::set<size_t>& candidates,
                 const std::set<int>* pending) const;

  std::vector<int> arms_;
  GaussianTsConfig config_;
  std::map<int, std::deque<double>> observations_;
  std::map<int, Belief> beliefs_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_GAUSSIAN_TS_H_
