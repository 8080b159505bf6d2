// BatchSizeOptimizerConfig and the names of policies and trial kinds.

#include "zeus/optimizer/batch_size/batch_size_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "zeus/optimizer/batch_size/trial.h"
#include "zeus/util/json.h"

#include "src/optimizer/batch_size/int_range.h"

namespace zeus {
namespace {

using batch_size_internal::kMaxInt;

Status FieldError(std::string_view field, std::string_view detail) {
  return InvalidArgumentError("batch size optimizer config: field '" + std::string(field) +
                              "': " + std::string(detail));
}

}  // namespace

Status BatchSizeOptimizerConfig::Validate() const {
  if (batch_sizes.empty()) return FieldError("batch_sizes", "must not be empty");
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    if (batch_sizes[i] <= 0) {
      return FieldError("batch_sizes", "must be positive, got " + std::to_string(batch_sizes[i]));
    }
    if (i > 0 && batch_sizes[i] <= batch_sizes[i - 1]) {
      return FieldError("batch_sizes", "must be sorted ascending and unique, got " +
                                           std::to_string(batch_sizes[i - 1]) + " before " +
                                           std::to_string(batch_sizes[i]));
    }
  }
  if (!std::binary_search(batch_sizes.begin(), batch_sizes.end(), default_batch_size)) {
    return FieldError("default_batch_size",
                      std::to_string(default_batch_size) + " is not one of batch_sizes");
  }
  if (num_pruning_rounds < 0) {
    return FieldError("num_pruning_rounds",
                      "must be >= 0, got " + std::to_string(num_pruning_rounds));
  }
  if (window_size < 0) {
    return FieldError("window_size", "must be >= 0, got " + std::to_string(window_size));
  }
  if (!std::isfinite(prior_mean)) return FieldError("prior_mean", "must be finite");
  if (!std::isfinite(prior_precision) || prior_precision < 0) {
    return FieldError("prior_precision", "must be finite and >= 0");
  }
  if (num_explorations < 0) {
    return FieldError("num_explorations", "must be >= 0, got " + std::to_string(num_explorations));
  }
  if (beta.has_value() && !(std::isfinite(*beta) && *beta > 0)) {
    return FieldError("beta", "must be finite and > 0 (or null to disable early stopping)");
  }
  return Status::Ok();
}

std::string_view BatchSizePolicyName(BatchSizePolicyKind policy) {
  switch (policy) {
    case BatchSizePolicyKind::kZeus:
      return "zeus";
    case BatchSizePolicyKind::kFrugal:
      return "frugal";
    case BatchSizePolicyKind::kSwarm:
      return "swarm";
  }
  return "unknown";
}

StatusOr<BatchSizePolicyKind> ParseBatchSizePolicy(std::string_view name) {
  for (BatchSizePolicyKind policy :
       {BatchSizePolicyKind::kZeus, BatchSizePolicyKind::kFrugal, BatchSizePolicyKind::kSwarm}) {
    if (name == BatchSizePolicyName(policy)) return policy;
  }
  return InvalidArgumentError("batch size policy: expected zeus, frugal or swarm, got '" +
                              std::string(name) + "'");
}

nlohmann::json BatchSizeOptimizerConfig::ToJson() const {
  nlohmann::json json = {{"batch_sizes", batch_sizes},
                         {"default_batch_size", default_batch_size},
                         {"num_pruning_rounds", num_pruning_rounds},
                         {"window_size", window_size},
                         {"prior_mean", prior_mean},
                         {"prior_precision", prior_precision},
                         {"num_explorations", num_explorations},
                         {"seed", seed}};
  json["beta"] = beta.has_value() ? nlohmann::json(*beta) : nlohmann::json();
  if (policy != BatchSizePolicyKind::kZeus) json["policy"] = BatchSizePolicyName(policy);
  return json;
}

StatusOr<BatchSizeOptimizerConfig> BatchSizeOptimizerConfig::FromJson(const nlohmann::json& json) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields f,
                        JsonFields::Of(json, "batch size optimizer config",
                                       {"batch_sizes", "default_batch_size", "num_pruning_rounds",
                                        "window_size", "prior_mean", "prior_precision",
                                        "num_explorations", "seed", "beta", "policy"}));
  BatchSizeOptimizerConfig config;
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> policy, f.OptionalString("policy"));
  if (policy.has_value()) {
    StatusOr<BatchSizePolicyKind> parsed = ParseBatchSizePolicy(*policy);
    if (!parsed.ok()) return f.Error("policy", parsed.status().message());
    config.policy = *parsed;
  }
  if (f.Has("batch_sizes")) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, f.IntArray("batch_sizes", 1, kMaxInt));
    config.batch_sizes.assign(sizes.begin(), sizes.end());
  }
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("default_batch_size", 1, kMaxInt), &config.default_batch_size));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("num_pruning_rounds", 0, kMaxInt), &config.num_pruning_rounds));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("window_size", 0, kMaxInt), &config.window_size));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("num_explorations", 0, kMaxInt), &config.num_explorations));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("prior_mean"), &config.prior_mean));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("prior_precision", 0.0), &config.prior_precision));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalUint64("seed"), &config.seed));
  if (json.contains("beta")) {  // An explicit null turns early stopping off.
    ZEUS_ASSIGN_OR_RETURN(config.beta, f.OptionalDouble("beta"));
  }
  ZEUS_RETURN_IF_ERROR(config.Validate());
  return config;
}

bool operator==(const BatchSizeOptimizerConfig& a, const BatchSizeOptimizerConfig& b) {
  return a.policy == b.policy && a.batch_sizes == b.batch_sizes &&
         a.default_batch_size == b.default_batch_size &&
         a.num_pruning_rounds == b.num_pruning_rounds && a.window_size == b.window_size &&
         a.prior_mean == b.prior_mean && a.prior_precision == b.prior_precision &&
         a.num_explorations == b.num_explorations && a.seed == b.seed && a.beta == b.beta;
}

std::string_view TrialKindName(TrialKind kind) {
  switch (kind) {
    case TrialKind::kExploration:
      return "exploration";
    case TrialKind::kConcurrent:
      return "concurrent";
    case TrialKind::kBandit:
      return "bandit";
    case TrialKind::kSpeculative:
      return "speculative";
  }
  return "unknown";
}

StatusOr<TrialKind> ParseTrialKind(std::string_view name) {
  for (TrialKind kind : {TrialKind::kExploration, TrialKind::kConcurrent, TrialKind::kBandit,
                         TrialKind::kSpeculative}) {
    if (name == TrialKindName(kind)) return kind;
  }
  return InvalidArgumentError(
      "trial kind: expected exploration, concurrent, bandit or speculative, got '" +
      std::string(name) + "'");
}

}  // namespace zeus
