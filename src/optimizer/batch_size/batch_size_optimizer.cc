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
namespace {

constexpr int kStateVersion = 1;

Status FieldError(std::string_view field, std::string_view detail) {
  return InvalidArgumentError("batch size optimizer config: field '" + std::string(field) +
                              "': " + std::string(detail));
}

constexpr char kStateContext[] = "batch size optimizer state";
constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

bool IsBatchSize(const BatchSizeOptimizerConfig& config, int64_t batch_size) {
  return std::binary_search(config.batch_sizes.begin(), config.batch_sizes.end(), batch_size);
}

// The per-batch-size cost history of a stored state.
StatusOr<std::map<int, std::vector<double>>> ReadCosts(const JsonFields& state,
                                                       const BatchSizeOptimizerConfig& config) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("costs"));
  std::map<int, std::vector<double>> costs;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("costs", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size, entry.Int("batch_size", 1, kMaxInt));
    if (!IsBatchSize(config, batch_size)) {
      return entry.Error("batch_size", std::to_string(batch_size) + " is not one of batch_sizes");
    }
    ZEUS_ASSIGN_OR_RETURN(costs[static_cast<int>(batch_size)],
                          entry.DoubleArray("costs", 0.0, GaussianTs::kMaxAbsReward));
  }
  return costs;
}

// The trials handed out and not yet reported, by trial number; into
// `min_cost_at_handout` the lowest cost known when each concurrent trial that
// records it was handed out or ran on, and into `ran_on` the concurrent
// trials that ran on as near misses (frugal and swarm only), and into
// `finish_bound` the bounds of the probes that finish (swarm only).
StatusOr<std::map<int64_t, Trial>> ReadInFlight(const JsonFields& state,
                                                const BatchSizeOptimizerConfig& config,
                                                std::map<int64_t, double>* min_cost_at_handout,
                                                std::set<int64_t>* ran_on,
                                                std::map<int64_t, double>* finish_bound) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("in_flight"));
  std::map<int64_t, Trial> in_flight;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("in_flight", i));
    Trial trial;
    ZEUS_ASSIGN_OR_RETURN(trial.trial_number, entry.Int("trial_number", 1));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size, entry.Int("batch_size", 1, kMaxInt));
    if (!IsBatchSize(config, batch_size)) {
      return entry.Error("batch_size", "in-flight trial " + std::to_string(trial.trial_number) +
                                           " has batch size " + std::to_string(batch_size) +
                                           ", not one of batch_sizes");
    }
    trial.batch_size = static_cast<int>(batch_size);
    ZEUS_ASSIGN_OR_RETURN(std::string kind, entry.String("kind"));
    StatusOr<TrialKind> parsed = ParseTrialKind(kind);
    if (!parsed.ok()) return entry.Error("kind", parsed.status().message());
    trial.kind = *parsed;
    ZEUS_ASSIGN_OR_RETURN(
        std::optional<double> min_cost,
        entry.OptionalDouble("min_cost_at_handout", 0.0, GaussianTs::kMaxAbsReward));
    if (min_cost.has_value()) {
      if (trial.kind != TrialKind::kConcurrent || config.policy == BatchSizePolicy::kZeus) {
        return entry.Error("min_cost_at_handout",
                           "only a concurrent trial of frugal or swarm records it, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      (*min_cost_at_handout)[trial.trial_number] = *min_cost;
    }
    ZEUS_ASSIGN_OR_RETURN(std::optional<bool> near_miss, entry.OptionalBool("ran_on"));
    if (near_miss.value_or(false)) {
      if (trial.kind != TrialKind::kConcurrent || config.policy == BatchSizePolicy::kZeus) {
        return entry.Error("ran_on",
                           "only a concurrent trial of frugal or swarm runs on, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      ran_on->insert(trial.trial_number);
    }
    ZEUS_ASSIGN_OR_RETURN(std::optional<double> finish,
                          entry.OptionalDouble("finish_bound", 0.0, GaussianTs::kMaxAbsReward));
    if (finish.has_value()) {
      if (trial.kind == TrialKind::kConcurrent || config.policy != BatchSizePolicy::kSwarm) {
        return entry.Error("finish_bound",
                           "only a swarm trial that is not concurrent finishes, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      (*finish_bound)[trial.trial_number] = *finish;
    }

    if (!in_flight.emplace(trial.trial_number, trial).second) {
      return entry.Error("trial_number", std::to_string(trial.trial_number) + " appears twice");
    }
  }
  return in_flight;
}

// Frugal's censored sizes of a stored state: distinct batch sizes, each with
// a cost bound in [0, kMaxAbsReward]; once the bandit exists, each is one of
// its arms with no observation yet (a first observation removes it).
StatusOr<std::map<int, double>> ReadCensored(const JsonFields& state,
                                             const std::optional<GaussianTs>& bandit,
                                             const BatchSizeOptimizerConfig& config) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("censored"));
  std::map<int, double> censored;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("censored", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size, entry.Int("batch_size", 1, kMaxInt));
    if (!IsBatchSize(config, batch_size)) {
      return entry.Error("batch_size", std::to_string(batch_size) + " is not one of batch_sizes");
    }
    ZEUS_ASSIGN_OR_RETURN(double cost, entry.Double("cost", 0.0, GaussianTs::kMaxAbsReward));
    if (bandit.has_value()) {
      if (!bandit->HasArm(static_cast<int>(batch_size))) {
        return entry.Error(
            "batch_size", std::to_string(batch_size) + " is censored but not an arm of the bandit");
      }
      if (bandit->Arm(static_cast<int>(batch_size)).num_observations > 0) {
        return entry.Error(
            "batch_size", std::to_string(batch_size) + " is censored but already has observations");
      }
    }
    if (!censored.emplace(static_cast<int>(batch_size), cost).second) {
      return entry.Error("batch_size", std::to_string(batch_size) + " appears twice");
    }
  }
  return censored;
}

// swarm's speculative results of a stored state: distinct batch sizes, each
// with a cost in [0, kMaxAbsReward], whether its run reached the target and,
// optionally, whether the learning curve stopped it.
StatusOr<std::map<int, BatchSizeOptimizer::SpeculativeResult>> ReadSpeculative(
    const JsonFields& state, const BatchSizeOptimizerConfig& config) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("speculative_results"));
  std::map<int, BatchSizeOptimizer::SpeculativeResult> results;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("speculative_results", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size, entry.Int("batch_size", 1, kMaxInt));
    if (!IsBatchSize(config, batch_size)) {
      return entry.Error("batch_size", std::to_string(batch_size) + " is not one of batch_sizes");
    }
    BatchSizeOptimizer::SpeculativeResult result;
    ZEUS_ASSIGN_OR_RETURN(result.cost, entry.Double("cost", 0.0, GaussianTs::kMaxAbsReward));
    ZEUS_ASSIGN_OR_RETURN(result.reached_target, entry.Bool("reached_target"));
    ZEUS_ASSIGN_OR_RETURN(std::optional<bool> learned_slower, entry.OptionalBool("learned_slower"));
    result.learned_slower = learned_slower.value_or(false);
    if (result.learned_slower && result.reached_target) {
      return entry.Error("learned_slower",
                         "must be false for a run that reached the target (it was not stopped)");
    }
    if (!results.emplace(static_cast<int>(batch_size), result).second) {
      return entry.Error("batch_size", std::to_string(batch_size) + " appears twice");
    }
  }
  return results;
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

std::string_view BatchSizePolicyName(BatchSizePolicy policy) {
  switch (policy) {
    case BatchSizePolicy::kZeus:
      return "zeus";
    case BatchSizePolicy::kFrugal:
      return "frugal";
    case BatchSizePolicy::kSwarm:
      return "swarm";
  }
  return "unknown";
}

StatusOr<BatchSizePolicy> ParseBatchSizePolicy(std::string_view name) {
  for (BatchSizePolicy policy :
       {BatchSizePolicy::kZeus, BatchSizePolicy::kFrugal, BatchSizePolicy::kSwarm}) {
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
  if (policy != BatchSizePolicy::kZeus) json["policy"] = BatchSizePolicyName(policy);
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
    StatusOr<BatchSizePolicy> parsed = ParseBatchSizePolicy(*policy);
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
  auto curve = trial_progress_.find(trial_number);
  if (curve == trial_progress_.end() || curve->second.empty()) return std::nullopt;
  const ProgressPoint& best = FirstAtBestProgress(curve->second);
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

std::optional<double> BatchSizeOptimizer::ExplorationBound() const {
  if (!config_.beta.has_value()) return std::nullopt;
  return EarlyStopCostBound(std::min(*config_.beta, FrugalKnobs::kExplorationBeta), min_cost_);
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

Trial BatchSizeOptimizer::NextTrial() {
  // Only swarm's bookkeeping can fail here, and only on an explorer already
  // over, which AdvanceWalk never reports to.
  AdvanceWalk().IgnoreError();
  Trial trial;
  trial.trial_number = next_trial_number_++;
  if (!explorer_.done()) {
    std::optional<int> speculative;
    if (exploration_trial_.has_value() && config_.policy == BatchSizePolicy::kSwarm) {
      speculative = SpeculativeSize();
    }
    if (!exploration_trial_.has_value()) {
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
  in_flight_[trial.trial_number] = trial;
  if (frugal_like() && trial.kind == TrialKind::kConcurrent && min_cost_.has_value()) {
    min_cost_at_handout_[trial.trial_number] = *min_cost_;
  }
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
  auto progress = trial_progress_.find(trial_number);
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
        trial_number, progress != trial_progress_.end() && !progress->second.empty()
                          ? progress->second.back().progress
                          : kNoProgress);
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
  in_flight_.erase(it);
  min_cost_at_handout_.erase(trial_number);
  ran_on_.erase(trial_number);
  finish_bound_.erase(trial_number);
  if (!restarted) Observe(batch_size, observed);
  if (reached_target && (!min_cost_.has_value() || cost < *min_cost_)) {
    min_cost_ = cost;
    best_batch_size_ = batch_size;
    // The new reference, or none when this run recorded no curve.
    reference_progress_.clear();
    if (progress != trial_progress_.end()) reference_progress_ = std::move(progress->second);
  }
  if (progress != trial_progress_.end()) trial_progress_.erase(progress);
  curve_at_report_.erase(trial_number);
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
  min_cost_at_handout_.erase(trial_number);
  ran_on_.erase(trial_number);
  finish_bound_.erase(trial_number);
  trial_progress_.erase(trial_number);
  curve_at_report_.erase(trial_number);
  if (exploration_trial_ == trial_number) exploration_trial_.reset();
  return Status::Ok();
}

Status BatchSizeOptimizer::RecordProgress(int64_t trial_number, double cost, double progress) {
  if (in_flight_.count(trial_number) == 0) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  if (!frugal_like()) return Status::Ok();
  // AppendProgress leaves the curve as it was when it refuses a point.
  std::vector<ProgressPoint>& curve = trial_progress_[trial_number];
  Status appended = AppendProgress(curve, cost, progress);
  if (!appended.ok()) {
    if (curve.empty()) trial_progress_.erase(trial_number);
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": " + appended.message());
  }
  if (const std::optional<CurveKey> key = CurveKeyOf(trial_number)) {
    curve_at_report_[trial_number] = *key;
  } else {
    curve_at_report_.erase(trial_number);
  }
  return Status::Ok();
}

std::optional<double> BatchSizeOptimizer::CheckInThreshold(int64_t trial_number) const {
  auto progress = trial_progress_.find(trial_number);
  if (progress == trial_progress_.end() || progress->second.empty()) {
    return EarlyStopThreshold(trial_number, kNoProgress);
  }
  const std::optional<CurveKey> now = ChangedCurve(trial_number);
  if (!now.has_value()) return EarlyStopThreshold(trial_number);
  // A changed curve: only a run that got to its best progress slower than
  // it allows is held to it between reports; one on pace there may show
  // more progress at its next report.
  const double best = progress->second.back().progress;
  if (ReachedSlowerThan(ReferenceCurve(), progress->second, best, now->ratio)) {
    return EarlyStopThreshold(trial_number, best);
  }
  return EarlyStopThreshold(trial_number);
}

std::optional<BatchSizeOptimizer::CurveKey> BatchSizeOptimizer::CurveKeyOf(
    int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return std::nullopt;
  if (min_cost_.has_value()) return CurveKey{*min_cost_, *ratio};
  // A provisional curve changes at each report of its run, whose cost grows.
  return CurveKey{trial_progress_.at(*provisional_reference()).back().cost, *ratio};
}

std::optional<BatchSizeOptimizer::CurveKey> BatchSizeOptimizer::ChangedCurve(
    int64_t trial_number) const {
  const std::optional<CurveKey> now = CurveKeyOf(trial_number);
  auto then = curve_at_report_.find(trial_number);
  if (!now.has_value() || (then != curve_at_report_.end() && then->second == *now)) {
    return std::nullopt;
  }
  return now;
}

std::optional<int64_t> BatchSizeOptimizer::provisional_reference() const {
  if (config_.policy != BatchSizePolicy::kSwarm || min_cost_.has_value() ||
      !exploration_trial_.has_value()) {
    return std::nullopt;
  }
  auto curve = trial_progress_.find(*exploration_trial_);
  if (curve == trial_progress_.end() || curve->second.empty()) return std::nullopt;
  return *exploration_trial_;
}

std::vector<ProgressPoint> BatchSizeOptimizer::ReferenceCurve() const {
  if (min_cost_.has_value()) return reference_progress_;
  const std::optional<int64_t> provisional = provisional_reference();
  if (!provisional.has_value()) return {};
  std::vector<ProgressPoint> curve = trial_progress_.at(*provisional);
  // Its target is still ahead: every point it reported bounds a probe.
  constexpr double kAhead = std::numeric_limits<double>::infinity();
  curve.push_back({kAhead, kAhead});
  return curve;
}

std::optional<double> BatchSizeOptimizer::BestProgress(int64_t trial_number) const {
  auto it = trial_progress_.find(trial_number);
  if (it == trial_progress_.end() || it->second.empty()) return std::nullopt;
  return it->second.back().progress;
}

std::optional<double> BatchSizeOptimizer::CurveRatio(int64_t trial_number) const {
  if (finish_bound_.count(trial_number) > 0) return std::nullopt;
  if (!min_cost_.has_value()) {
    // The first wave: a speculative trial is held to the exploration bound's
    // multiple of the walk's step in flight, its provisional reference.
    auto trial = in_flight_.find(trial_number);
    if (!config_.beta.has_value() || !provisional_reference().has_value() ||
        trial == in_flight_.end() || trial->second.kind != TrialKind::kSpeculative ||
        Orphaned(trial->second.batch_size)) {
      return std::nullopt;
    }
    return std::min(*config_.beta, FrugalKnobs::kExplorationBeta);
  }
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  if (!frugal_like() || reference_progress_.empty() || !bound.has_value() || !(*min_cost_ > 0.0)) {
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

std::optional<double> BatchSizeOptimizer::RunOnBound(int64_t trial_number, double progress) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> exploration = ExplorationBound();
  // Only a probe at the exploration bound: an outbid step (beta) or an
  // orphaned speculative run (kOrphanBeta) does not run on.
  if (!ratio.has_value() || !bound.has_value() || !exploration.has_value() ||
      *bound != *exploration || ProgressBound(reference_progress_, progress, *ratio).has_value()) {
    return std::nullopt;
  }
  const std::optional<double> run_on = EarlyStopCostBound(config_.beta, min_cost_);
  if (!run_on.has_value() || !(*run_on > *bound)) return std::nullopt;
  return run_on;
}

std::optional<double> BatchSizeOptimizer::BestProgressWithin(int64_t trial_number,
                                                             double cost) const {
  auto curve = trial_progress_.find(trial_number);
  if (curve == trial_progress_.end()) return std::nullopt;
  std::optional<double> best;
  for (const ProgressPoint& point : curve->second) {
    if (point.cost > cost) break;
    best = point.progress;
  }
  return best;
}

Status BatchSizeOptimizer::RunOn(int64_t trial_number, double progress) {
  auto it = in_flight_.find(trial_number);
  if (it == in_flight_.end()) {
    return NotFoundError("batch size optimizer: trial " + std::to_string(trial_number) +
                         " is not in flight");
  }
  if (!RunOnBound(trial_number, progress).has_value()) {
    return FailedPreconditionError(
        "batch size optimizer: trial " + std::to_string(trial_number) +
        " cannot run on past its bound at progress " + nlohmann::json(progress).dump() +
        " (only a frugal or swarm probe held to the exploration bound that has got as far as "
        "the reference run's last level before the target)");
  }
  // The walk's failure here, as a run stopped at its bound would be; then a
  // concurrent run.
  ZEUS_RETURN_IF_ERROR(TellWalk(trial_number, it->second.batch_size, it->second.kind,
                                *EarlyStopThreshold(trial_number), false, false));
  it->second.kind = TrialKind::kConcurrent;
  min_cost_at_handout_[trial_number] = *min_cost_;
  ran_on_.insert(trial_number);
  return AdvanceWalk();
}

std::optional<double> BatchSizeOptimizer::FinishBound(int64_t trial_number,
                                                      const ProgressPoint& best,
                                                      double cost) const {
  auto it = in_flight_.find(trial_number);
  if (config_.policy != BatchSizePolicy::kSwarm || it == in_flight_.end() ||
      !UsableProbe(it->second) || finish_bound_.count(trial_number) > 0 || !min_cost_.has_value() ||
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
  finish_bound_[trial_number] = *finish;
  return Status::Ok();
}

std::optional<ProgressPoint> BatchSizeOptimizer::FinishCandidate(int64_t trial_number) const {
  auto curve = trial_progress_.find(trial_number);
  if (curve == trial_progress_.end() || curve->second.empty() ||
      !ChangedCurve(trial_number).has_value()) {
    return std::nullopt;
  }
  return FirstAtBestProgress(curve->second);
}

std::optional<double> BatchSizeOptimizer::RestartThreshold(int64_t trial_number) const {
  if (config_.policy != BatchSizePolicy::kSwarm || bandit_.has_value() || !min_cost_.has_value()) {
    return std::nullopt;
  }
  auto trial = in_flight_.find(trial_number);
  if (trial == in_flight_.end() || trial->second.kind != TrialKind::kConcurrent ||
      ran_on_.count(trial_number) > 0 || trial->second.batch_size == best_batch_size_) {
    return std::nullopt;
  }
  auto costs = costs_.find(trial->second.batch_size);
  if (costs == costs_.end() || costs->second.empty()) return std::nullopt;
  const double mean = std::accumulate(costs->second.begin(), costs->second.end(), 0.0) /
                      static_cast<double>(costs->second.size());
  if (!(mean > *min_cost_)) return std::nullopt;
  return mean - *min_cost_;
}

std::vector<ProgressPoint> BatchSizeOptimizer::ProgressLimits(int64_t trial_number) const {
  const std::optional<double> ratio = CurveRatio(trial_number);
  if (!ratio.has_value()) return {};
  std::vector<ProgressPoint> limits = ReferenceCurve();
  for (ProgressPoint& point : limits) point.cost *= *ratio;
  return limits;
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold(int64_t trial_number,
                                                             double progress) const {
  const std::optional<double> bound = EarlyStopThreshold(trial_number);
  const std::optional<double> ratio = CurveRatio(trial_number);
  const std::optional<double> curve =
      ratio.has_value() ? ProgressBound(ReferenceCurve(), progress, *ratio) : std::nullopt;
  if (!curve.has_value()) return bound;
  return bound.has_value() ? std::min(*bound, *curve) : curve;
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold() const {
  return EarlyStopCostBound(config_.beta, min_cost_);
}

std::optional<double> BatchSizeOptimizer::EarlyStopThreshold(int64_t trial_number) const {
  if (auto finish = finish_bound_.find(trial_number); finish != finish_bound_.end()) {
    return finish->second;
  }
  auto it = in_flight_.find(trial_number);
  const bool speculative = it != in_flight_.end() && it->second.kind == TrialKind::kSpeculative;
  if (!frugal_like() || (exploration_trial_ != trial_number && !speculative) ||
      !config_.beta.has_value()) {
    // A concurrent run went to the best size known then, to finish its
    // submission: a cheaper size found since does not tighten its bound
    // (stopping it would waste what it ran and cost a retry).
    auto handed = min_cost_at_handout_.find(trial_number);
    if (handed != min_cost_at_handout_.end()) {
      return EarlyStopCostBound(config_.beta, handed->second);
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

bool BatchSizeOptimizer::UsableProbe(const Trial& trial) const {
  return trial.kind == TrialKind::kExploration ||
         (trial.kind == TrialKind::kSpeculative && !Orphaned(trial.batch_size));
}

bool BatchSizeOptimizer::Orphaned(int batch_size) const {
  if (explorer_.done()) return bandit_.has_value() && !bandit_->HasArm(batch_size);
  return !explorer_.MayTry(batch_size);
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

nlohmann::json BatchSizeOptimizer::ToJson() const {
  nlohmann::json costs = nlohmann::json::array();
  for (const auto& [batch_size, values] : costs_) {
    costs.push_back({{"batch_size", batch_size}, {"costs", values}});
  }
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [number, trial] : in_flight_) {
    nlohmann::json entry = {{"trial_number", number},
                            {"batch_size", trial.batch_size},
                            {"kind", TrialKindName(trial.kind)}};
    auto handed = min_cost_at_handout_.find(number);
    if (handed != min_cost_at_handout_.end()) entry["min_cost_at_handout"] = handed->second;
    if (ran_on_.count(number) > 0) entry["ran_on"] = true;
    auto finish = finish_bound_.find(number);
    if (finish != finish_bound_.end()) entry["finish_bound"] = finish->second;
    in_flight.push_back(std::move(entry));
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
  // Written only when present, so a Zeus state reads as before.
  if (!censored_.empty()) {
    nlohmann::json censored = nlohmann::json::array();
    for (const auto& [batch_size, cost] : censored_) {
      censored.push_back({{"batch_size", batch_size}, {"cost", cost}});
    }
    json["censored"] = censored;
  }
  if (!speculative_results_.empty()) {
    nlohmann::json speculative = nlohmann::json::array();
    for (const auto& [batch_size, result] : speculative_results_) {
      nlohmann::json entry = {{"batch_size", batch_size},
                              {"cost", result.cost},
                              {"reached_target", result.reached_target}};
      if (result.learned_slower) entry["learned_slower"] = true;
      speculative.push_back(std::move(entry));
    }
    json["speculative_results"] = speculative;
  }
  if (!reference_progress_.empty())
    json["reference_progress"] = ProgressToJson(reference_progress_);
  if (!trial_progress_.empty()) {
    nlohmann::json curves = nlohmann::json::array();
    for (const auto& [number, curve] : trial_progress_) {
      nlohmann::json entry = {{"trial_number", number}, {"curve", ProgressToJson(curve)}};
      auto key = curve_at_report_.find(number);
      if (key != curve_at_report_.end()) {
        entry["curve_at_report"] = {key->second.min_cost, key->second.ratio};
      }
      curves.push_back(std::move(entry));
    }
    json["trial_progress"] = curves;
  }
  return json;
}

// The explorer waits on at most one trial: `exploration_trial`, in flight as
// an exploration of the size the explorer is on. Any other exploration in
// flight would report a cost for a size the explorer is not on.
Status BatchSizeOptimizer::ValidateExplorationTrial(const JsonFields& state) const {
  for (const auto& [number, trial] : in_flight_) {
    if (trial.kind == TrialKind::kExploration && exploration_trial_ != number) {
      return state.Error("in_flight", "exploration trial " + std::to_string(number) +
                                          " is not the explorer's exploration_trial");
    }
  }
  if (!exploration_trial_.has_value()) return Status::Ok();
  auto it = in_flight_.find(*exploration_trial_);
  if (it == in_flight_.end()) {
    return state.Error("exploration_trial",
                       std::to_string(*exploration_trial_) + " is not in flight");
  }
  if (explorer_.done()) {
    return state.Error("exploration_trial", "must be null once exploration is over");
  }
  if (it->second.kind != TrialKind::kExploration || it->second.batch_size != explorer_.Current()) {
    return state.Error("exploration_trial",
                       std::to_string(*exploration_trial_) +
                           " must be in flight as an exploration of batch size " +
                           std::to_string(explorer_.Current()));
  }
  return Status::Ok();
}

StatusOr<BatchSizeOptimizer> BatchSizeOptimizer::FromJson(const nlohmann::json& json) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields state, JsonFields::Of(json, kStateContext));
  ZEUS_ASSIGN_OR_RETURN(int64_t version, state.Int("version"));
  if (version != kStateVersion) {
    return state.Error("version", "expected " + std::to_string(kStateVersion) + ", got " +
                                      std::to_string(version));
  }
  ZEUS_ASSIGN_OR_RETURN(JsonFields config_json, state.Object("config"));
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizerConfig config,
                        BatchSizeOptimizerConfig::FromJson(config_json.object()));
  BatchSizeOptimizer optimizer(std::move(config));
  const BatchSizeOptimizerConfig& c = optimizer.config_;

  ZEUS_ASSIGN_OR_RETURN(JsonFields rng, state.Object("rng"));
  StatusOr<Rng> restored_rng = Rng::FromJson(rng.object());
  if (!restored_rng.ok()) return restored_rng.status().WithContext(kStateContext);
  optimizer.rng_ = *restored_rng;
  ZEUS_ASSIGN_OR_RETURN(JsonFields explorer, state.Object("explorer"));
  // The explorer only ever walks the job's own batch sizes (it checks its
  // walks against its candidates).
  ZEUS_ASSIGN_OR_RETURN(std::vector<int64_t> candidates, explorer.IntArray("candidates"));
  for (int64_t size : candidates) {
    if (!IsBatchSize(c, size)) {
      return explorer.Error("candidates", std::to_string(size) + " is not one of batch_sizes");
    }
  }
  StatusOr<PruningExplorer> restored_explorer = PruningExplorer::FromJson(explorer.object());
  if (!restored_explorer.ok()) return restored_explorer.status().WithContext(kStateContext);
  optimizer.explorer_ = std::move(*restored_explorer);

  ZEUS_ASSIGN_OR_RETURN(optimizer.costs_, ReadCosts(state, c));
  ZEUS_ASSIGN_OR_RETURN(optimizer.in_flight_,
                        ReadInFlight(state, c, &optimizer.min_cost_at_handout_, &optimizer.ran_on_,
                                     &optimizer.finish_bound_));
  ZEUS_ASSIGN_OR_RETURN(optimizer.next_trial_number_, state.Int("next_trial_number", 1));
  if (!optimizer.in_flight_.empty() &&
      optimizer.in_flight_.rbegin()->first >= optimizer.next_trial_number_) {
    return state.Error("next_trial_number", "must exceed every in-flight trial number");
  }
  ZEUS_ASSIGN_OR_RETURN(int64_t best, state.Int("best_batch_size", 1, kMaxInt));
  if (!IsBatchSize(c, best)) {
    return state.Error("best_batch_size", std::to_string(best) + " is not one of batch_sizes");
  }
  optimizer.best_batch_size_ = static_cast<int>(best);
  ZEUS_ASSIGN_OR_RETURN(optimizer.exploration_trial_, state.OptionalInt("exploration_trial", 1));
  ZEUS_RETURN_IF_ERROR(optimizer.ValidateExplorationTrial(state));
  ZEUS_ASSIGN_OR_RETURN(optimizer.min_cost_,
                        state.OptionalDouble("min_cost", 0.0, GaussianTs::kMaxAbsReward));
  if (state.Has("bandit")) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields bandit_json, state.Object("bandit"));
    StatusOr<GaussianTs> bandit =
        GaussianTs::FromJson(bandit_json.object(), optimizer.BanditConfig());
    if (!bandit.ok()) return bandit.status().WithContext(kStateContext);
    for (const ArmState& arm : bandit->ArmStates()) {
      if (!IsBatchSize(c, arm.batch_size)) {
        return state.Error("bandit",
                           "arm " + std::to_string(arm.batch_size) + " is not one of batch_sizes");
      }
    }
    optimizer.bandit_.emplace(std::move(*bandit));
  }
  if (optimizer.explorer_.done() != optimizer.bandit_.has_value()) {
    return state.Error("bandit", "must be present exactly when exploration is over");
  }
  if (state.Has("censored")) {
    if (c.policy == BatchSizePolicy::kZeus) {
      return state.Error("censored",
                         "only the frugal policy (and swarm, built on it) censors batch sizes");
    }
    ZEUS_ASSIGN_OR_RETURN(optimizer.censored_, ReadCensored(state, optimizer.bandit_, c));
  }
  for (const auto& [number, trial] : optimizer.in_flight_) {
    if (trial.kind == TrialKind::kSpeculative && c.policy != BatchSizePolicy::kSwarm) {
      return state.Error("in_flight", "speculative trial " + std::to_string(number) +
                                          ": only the swarm policy speculates");
    }
  }
  if (state.Has("speculative_results")) {
    if (c.policy != BatchSizePolicy::kSwarm) {
      return state.Error("speculative_results", "only the swarm policy speculates");
    }
    if (optimizer.explorer_.done()) {
      return state.Error("speculative_results", "must be absent once exploration is over");
    }
    ZEUS_ASSIGN_OR_RETURN(optimizer.speculative_results_, ReadSpeculative(state, c));
  }
  ZEUS_RETURN_IF_ERROR(optimizer.ReadProgress(state));
  return optimizer;
}

Status BatchSizeOptimizer::ReadProgress(const JsonFields& state) {
  const bool any = state.Has("reference_progress") || state.Has("trial_progress");
  if (any && !frugal_like()) {
    return state.Error(state.Has("reference_progress") ? "reference_progress" : "trial_progress",
                       "only the frugal policy (and swarm, built on it) keeps learning curves");
  }
  if (state.Has("reference_progress")) {
    if (!min_cost_.has_value()) {
      return state.Error("reference_progress", "must be absent while min_cost is null");
    }
    StatusOr<std::vector<ProgressPoint>> curve =
        ProgressFromJson(state.object().at("reference_progress"), "reference_progress");
    if (!curve.ok()) return curve.status().WithContext(kStateContext);
    reference_progress_ = std::move(*curve);
  }
  if (!state.Has("trial_progress")) return Status::Ok();
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* curves, state.Array("trial_progress"));
  for (size_t i = 0; i < curves->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("trial_progress", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t number, entry.Int("trial_number", 1));
    if (in_flight_.count(number) == 0) {
      return entry.Error("trial_number", std::to_string(number) + " is not in flight");
    }
    if (trial_progress_.count(number) > 0) {
      return entry.Error("trial_number", std::to_string(number) + " appears twice");
    }
    ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* points, entry.Array("curve"));
    StatusOr<std::vector<ProgressPoint>> curve = ProgressFromJson(*points, "trial_progress.curve");
    if (!curve.ok()) return curve.status().WithContext(kStateContext);
    trial_progress_[number] = std::move(*curve);
    if (entry.Has("curve_at_report")) {
      ZEUS_ASSIGN_OR_RETURN(std::vector<double> key,
                            entry.DoubleArray("curve_at_report", 0.0, GaussianTs::kMaxAbsReward));
      if (key.size() != 2 || !(key[1] > 0.0)) {
        return entry.Error("curve_at_report",
                           "expected [min_cost, ratio] with ratio > 0 (the curve trial " +
                               std::to_string(number) + " was held to at its last report)");
      }
      curve_at_report_[number] = {key[0], key[1]};
    }
  }
  return Status::Ok();
}

}  // namespace zeus
