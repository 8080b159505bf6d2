#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "zeus/core/early_stop.h"
#include "zeus/util/strings.h"

namespace zeus {
namespace {

constexpr int kStateVersion = 1;

Status FieldError(std::string_view field, std::string_view detail) {
  return InvalidArgumentError("batch size optimizer config: field '" + std::string(field) +
                              "': " + std::string(detail));
}

template <typename T>
Status ReadState(const nlohmann::json& json, const char* name, T* out) {
  if (!json.contains(name)) {
    return InvalidArgumentError(std::string("batch size optimizer state: missing field '") + name +
                                "'");
  }
  try {
    *out = json.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("batch size optimizer state: field '") + name +
                                "': " + e.what());
  }
  return Status::Ok();
}

StatusOr<std::optional<double>> ReadOptionalDouble(const nlohmann::json& json, const char* name) {
  if (!json.contains(name)) {
    return InvalidArgumentError(std::string("batch size optimizer state: missing field '") + name +
                                "'");
  }
  const nlohmann::json& value = json.at(name);
  if (value.is_null()) return std::optional<double>();
  if (!value.is_number()) {
    return InvalidArgumentError(std::string("batch size optimizer state: field '") + name +
                                "' must be a number or null");
  }
  return std::optional<double>(value.get<double>());
}

// A cost ReportResult() would have accepted.
Status CheckStoredCost(const char* field, double cost) {
  if (std::isfinite(cost) && cost >= 0 && cost <= GaussianTs::kMaxAbsReward) return Status::Ok();
  return InvalidArgumentError(std::string("batch size optimizer state: field '") + field +
                              "': cost " + std::to_string(cost) +
                              " is not finite or outside [0, 1e100]");
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
  return json;
}

StatusOr<BatchSizeOptimizerConfig> BatchSizeOptimizerConfig::FromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return InvalidArgumentError("batch size optimizer config: expected a JSON object");
  }
  static const std::set<std::string> kKnown = {
      "batch_sizes", "default_batch_size", "num_pruning_rounds", "window_size",
      "prior_mean",  "prior_precision",    "num_explorations",   "seed",
      "beta"};
  for (const auto& item : json.items()) {
    if (kKnown.count(item.key()) == 0) return FieldError(item.key(), "unknown field");
  }
  BatchSizeOptimizerConfig config;
  auto read_int = [&json](const char* name, int* out) -> Status {
    if (!json.contains(name)) return Status::Ok();
    const nlohmann::json& v = json.at(name);
    if (!v.is_number_integer()) return FieldError(name, "expected an integer, got " + v.dump());
    *out = v.get<int>();
    return Status::Ok();
  };
  auto read_double = [&json](const char* name, double* out) -> Status {
    if (!json.contains(name)) return Status::Ok();
    const nlohmann::json& v = json.at(name);
    if (!v.is_number()) return FieldError(name, "expected a number, got " + v.dump());
    *out = v.get<double>();
    return Status::Ok();
  };
  if (json.contains("batch_sizes")) {
    const nlohmann::json& v = json.at("batch_sizes");
    if (!v.is_array()) return FieldError("batch_sizes", "expected an array, got " + v.dump());
    for (const nlohmann::json& b : v) {
      if (!b.is_number_integer()) {
        return FieldError("batch_sizes", "expected integers, got " + b.dump());
      }
      config.batch_sizes.push_back(b.get<int>());
    }
  }
  ZEUS_RETURN_IF_ERROR(read_int("default_batch_size", &config.default_batch_size));
  ZEUS_RETURN_IF_ERROR(read_int("num_pruning_rounds", &config.num_pruning_rounds));
  ZEUS_RETURN_IF_ERROR(read_int("window_size", &config.window_size));
  ZEUS_RETURN_IF_ERROR(read_double("prior_mean", &config.prior_mean));
  ZEUS_RETURN_IF_ERROR(read_double("prior_precision", &config.prior_precision));
  ZEUS_RETURN_IF_ERROR(read_int("num_explorations", &config.num_explorations));
  if (json.contains("seed")) {
    const nlohmann::json& v = json.at("seed");
    if (!v.is_number_unsigned()) {
      return FieldError("seed", "expected a non-negative integer, got " + v.dump());
    }
    config.seed = v.get<uint64_t>();
  }
  if (json.contains("beta")) {
    const nlohmann::json& v = json.at("beta");
    if (v.is_null()) {
      config.beta.reset();
    } else if (v.is_number()) {
      config.beta = v.get<double>();
    } else {
      return FieldError("beta", "expected a number or null, got " + v.dump());
    }
  }
  ZEUS_RETURN_IF_ERROR(config.Validate());
  return config;
}

bool operator==(const BatchSizeOptimizerConfig& a, const BatchSizeOptimizerConfig& b) {
  return a.batch_sizes == b.batch_sizes && a.default_batch_size == b.default_batch_size &&
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
  }
  return "unknown";
}

StatusOr<TrialKind> ParseTrialKind(std::string_view name) {
  for (TrialKind kind : {TrialKind::kExploration, TrialKind::kConcurrent, TrialKind::kBandit}) {
    if (name == TrialKindName(kind)) return kind;
  }
  return InvalidArgumentError("trial kind: expected exploration, concurrent or bandit, got '" +
                              std::string(name) + "'");
}

BatchSizeOptimizer::BatchSizeOptimizer(BatchSizeOptimizerConfig config)
    : config_(std::move(config)),
      rng_(config_.seed),
      explorer_(config_.batch_sizes, config_.default_batch_size, config_.num_pruning_rounds),
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
  bandit.num_explorations = config_.num_explorations;
  bandit.window_size = config_.window_size;
  return bandit;
}

bool BatchSizeOptimizer::exploring() const { return !explorer_.done(); }

Trial BatchSizeOptimizer::NextTrial() {
  Trial trial;
  trial.trial_number = next_trial_number_++;
  if (!explorer_.done()) {
    if (!exploration_trial_.has_value()) {
      trial.batch_size = explorer_.Current();
      trial.kind = TrialKind::kExploration;
      exploration_trial_ = trial.trial_number;
    } else {
      trial.batch_size = best_batch_size_;
      trial.kind = TrialKind::kConcurrent;
    }
  } else {
    trial.batch_size = bandit_->Predict(rng_);
    trial.kind = TrialKind::kBandit;
  }
  in_flight_[trial.trial_number] = trial;
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
                                std::to_string(cost));
  }
  const int batch_size = it->second.batch_size;
  in_flight_.erase(it);
  Observe(batch_size, cost);
  if (reached_target && (!min_cost_.has_value() || cost < *min_cost_)) {
    min_cost_ = cost;
    best_batch_size_ = batch_size;
  }
  if (exploration_trial_ == trial_number) {
    exploration_trial_.reset();
    ZEUS_RETURN_IF_ERROR(explorer_.Report(cost, reached_target));
    if (explorer_.done()) StartBandit();
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

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold() const {
  return EarlyStopCostBound(config_.beta, min_cost_);
}

void BatchSizeOptimizer::Observe(int batch_size, double cost) {
  if (bandit_.has_value()) {
    // Runs of batch sizes pruned away (concurrent trials) teach the bandit nothing.
    if (bandit_->HasArm(batch_size)) bandit_->Observe(batch_size, -cost).IgnoreError();
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
  if (arms.empty()) arms = {best_batch_size_};
  bandit_.emplace(arms, BanditConfig());
  for (int arm : arms) {
    auto it = costs_.find(arm);
    if (it == costs_.end()) continue;
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

nlohmann::json BatchSizeOptimizer::ToJson() const {
  nlohmann::json costs = nlohmann::json::array();
  for (const auto& [batch_size, values] : costs_) {
    costs.push_back({{"batch_size", batch_size}, {"costs", values}});
  }
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [number, trial] : in_flight_) {
    in_flight.push_back({{"trial_number", number},
                         {"batch_size", trial.batch_size},
                         {"kind", TrialKindName(trial.kind)}});
  }
  nlohmann::json json = {{"version", kStateVersion},
                         {"config", config_.ToJson()},
                         {"rng", rng_.ToJson()},
                         {"explorer", explorer_.ToJson()},
                         {"costs", costs},
                         {"in_flight", in_flight},
                         {"next_trial_number", next_trial_number_},
                         {"best_batch_size", best_batch_size_}};
  json["exploration_trial"] =
      exploration_trial_.has_value() ? nlohmann::json(*exploration_trial_) : nlohmann::json();
  json["bandit"] = bandit_.has_value() ? bandit_->ToJson() : nlohmann::json();
  json["min_cost"] = min_cost_.has_value() ? nlohmann::json(*min_cost_) : nlohmann::json();
  return json;
}

StatusOr<BatchSizeOptimizer> BatchSizeOptimizer::FromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return InvalidArgumentError("batch size optimizer state: expected a JSON object");
  }
  int version = 0;
  ZEUS_RETURN_IF_ERROR(ReadState(json, "version", &version));
  if (version != kStateVersion) {
    return InvalidArgumentError("batch size optimizer state: field 'version': expected " +
                                std::to_string(kStateVersion) + ", got " + std::to_string(version));
  }
  if (!json.contains("config")) {
    return InvalidArgumentError("batch size optimizer state: missing field 'config'");
  }
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizerConfig config,
                        BatchSizeOptimizerConfig::FromJson(json.at("config")));
  BatchSizeOptimizer optimizer(std::move(config));

  if (!json.contains("rng")) {
    return InvalidArgumentError("batch size optimizer state: missing field 'rng'");
  }
  ZEUS_ASSIGN_OR_RETURN(optimizer.rng_, Rng::FromJson(json.at("rng")));
  if (!json.contains("explorer")) {
    return InvalidArgumentError("batch size optimizer state: missing field 'explorer'");
  }
  ZEUS_ASSIGN_OR_RETURN(optimizer.explorer_, PruningExplorer::FromJson(json.at("explorer")));

  nlohmann::json costs;
  ZEUS_RETURN_IF_ERROR(ReadState(json, "costs", &costs));
  if (!costs.is_array()) {
    return InvalidArgumentError("batch size optimizer state: field 'costs' must be an array");
  }
  for (const nlohmann::json& entry : costs) {
    int batch_size = 0;
    std::vector<double> values;
    ZEUS_RETURN_IF_ERROR(ReadState(entry, "batch_size", &batch_size));
    ZEUS_RETURN_IF_ERROR(ReadState(entry, "costs", &values));
    for (double cost : values) ZEUS_RETURN_IF_ERROR(CheckStoredCost("costs", cost));
    optimizer.costs_[batch_size] = std::move(values);
  }

  nlohmann::json in_flight;
  ZEUS_RETURN_IF_ERROR(ReadState(json, "in_flight", &in_flight));
  if (!in_flight.is_array()) {
    return InvalidArgumentError("batch size optimizer state: field 'in_flight' must be an array");
  }
  for (const nlohmann::json& entry : in_flight) {
    Trial trial;
    std::string kind;
    ZEUS_RETURN_IF_ERROR(ReadState(entry, "trial_number", &trial.trial_number));
    ZEUS_RETURN_IF_ERROR(ReadState(entry, "batch_size", &trial.batch_size));
    ZEUS_RETURN_IF_ERROR(ReadState(entry, "kind", &kind));
    ZEUS_ASSIGN_OR_RETURN(trial.kind, ParseTrialKind(kind));
    if (!std::binary_search(optimizer.config_.batch_sizes.begin(),
                            optimizer.config_.batch_sizes.end(), trial.batch_size)) {
      return InvalidArgumentError("batch size optimizer state: in-flight trial " +
                                  std::to_string(trial.trial_number) + " has batch size " +
                                  std::to_string(trial.batch_size) + ", not one of batch_sizes");
    }
    optimizer.in_flight_[trial.trial_number] = trial;
  }
  ZEUS_RETURN_IF_ERROR(ReadState(json, "next_trial_number", &optimizer.next_trial_number_));
  if (!optimizer.in_flight_.empty() &&
      optimizer.in_flight_.rbegin()->first >= optimizer.next_trial_number_) {
    return InvalidArgumentError(
        "batch size optimizer state: field 'next_trial_number' must exceed every in-flight "
        "trial number");
  }
  ZEUS_RETURN_IF_ERROR(ReadState(json, "best_batch_size", &optimizer.best_batch_size_));
  if (!json.contains("exploration_trial")) {
    return InvalidArgumentError("batch size optimizer state: missing field 'exploration_trial'");
  }
  if (!json.at("exploration_trial").is_null()) {
    int64_t number = 0;
    ZEUS_RETURN_IF_ERROR(ReadState(json, "exploration_trial", &number));
    if (optimizer.in_flight_.count(number) == 0) {
      return InvalidArgumentError("batch size optimizer state: exploration trial " +
                                  std::to_string(number) + " is not in flight");
    }
    optimizer.exploration_trial_ = number;
  }
  ZEUS_ASSIGN_OR_RETURN(optimizer.min_cost_, ReadOptionalDouble(json, "min_cost"));
  if (optimizer.min_cost_) ZEUS_RETURN_IF_ERROR(CheckStoredCost("min_cost", *optimizer.min_cost_));
  if (!json.contains("bandit")) {
    return InvalidArgumentError("batch size optimizer state: missing field 'bandit'");
  }
  if (!json.at("bandit").is_null()) {
    ZEUS_ASSIGN_OR_RETURN(GaussianTs bandit,
                          GaussianTs::FromJson(json.at("bandit"), optimizer.BanditConfig()));
    optimizer.bandit_.emplace(std::move(bandit));
  }
  if (optimizer.explorer_.done() != optimizer.bandit_.has_value()) {
    return InvalidArgumentError(
        "batch size optimizer state: the bandit must exist exactly when exploration is over");
  }
  return optimizer;
}

}  // namespace zeus
