// A job's batch-size settings (BatchSizeOptimizerConfig) and the names of
// the policies that explore them (docs/BATCH_SIZE_POLICY.md).

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_CONFIG_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

// Which policy explores a job's batch sizes (batch_size_policy.h).
enum class BatchSizePolicyKind {
  // The paper's Zeus, faithfully: `num_pruning_rounds` rounds of the pruning
  // walk under early stopping at beta x the lowest cost, then Gaussian
  // Thompson sampling that first tries each survivor `num_explorations` times.
  kZeus,
  // Zeus with cheaper exploration: one walk under a tighter bound, failed
  // sizes kept as censored arms, learning-curve stops, a narrower bandit
  // (src/optimizer/batch_size/frugal_policy.h). Ignores `num_pruning_rounds`
  // and `num_explorations`.
  kFrugal,
  // frugal plus speculative trials for concurrent submissions
  // (src/optimizer/batch_size/swarm_policy.h). With one trial at a time it
  // hands out exactly frugal's sequence.
  kSwarm,
};

// "zeus", "frugal" or "swarm".
std::string_view BatchSizePolicyName(BatchSizePolicyKind policy);
// kInvalidArgument naming the text and the known names otherwise.
StatusOr<BatchSizePolicyKind> ParseBatchSizePolicy(std::string_view name);

// Per-job settings. Plain struct; Validate() before use.
struct BatchSizeOptimizerConfig {
  // How the job explores. Default: kZeus. Stored as the config's "policy"
  // (written only when not zeus; a state without it is Zeus).
  BatchSizePolicyKind policy = BatchSizePolicyKind::kZeus;
  // Candidate batch sizes: positive, sorted ascending, unique. Default: none
  // (required).
  std::vector<int> batch_sizes;
  // Where exploration starts; one of `batch_sizes`. Default: 0 (required).
  int default_batch_size = 0;
  // Rounds of pruning exploration (0 = every batch size is an arm at once).
  // Default: 2.
  int num_pruning_rounds = 2;
  // Most recent observations per arm the bandit keeps (0 = all). Default: 0.
  int window_size = 0;
  // Prior mean of each arm's expected reward (-cost). Default: 0.
  double prior_mean = 0.0;
  // Prior precision of each arm's expected reward (>= 0). Default: 0.
  double prior_precision = 0.0;
  // Arms with fewer observations than this are explored (in a random order)
  // before Thompson sampling starts. Default: 2.
  int num_explorations = 2;
  // Seed of the job's random generator. Default: 123456 (the original's).
  uint64_t seed = 123456;
  // Early stopping: a run should stop before its cost passes beta x the lowest
  // cost of a run that reached the target. nullopt = no early stopping.
  // Must be > 0 and finite when set. Default: 2.0.
  std::optional<double> beta = 2.0;

  // kInvalidArgument naming the offending field and value.
  Status Validate() const;

  nlohmann::json ToJson() const;
  // Missing fields take their defaults; wrong types and unknown fields are
  // kInvalidArgument. Validates the result.
  static StatusOr<BatchSizeOptimizerConfig> FromJson(const nlohmann::json& json);

  friend bool operator==(const BatchSizeOptimizerConfig& a, const BatchSizeOptimizerConfig& b);
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_CONFIG_H_
