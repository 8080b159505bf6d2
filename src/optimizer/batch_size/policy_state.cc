// A batch-size policy's state as JSON (WalkBanditPolicy::ToJson,
// LoadBatchSizePolicy): the schema a stored job is kept in. Version 1; a
// state written by any release that wrote version 1 loads
// (tests/optimizer/batch_size/testdata).

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "zeus/optimizer/batch_size/batch_size_policy.h"
#include "zeus/util/json.h"

#include "src/optimizer/batch_size/int_range.h"
#include "src/optimizer/batch_size/policy_registry.h"
#include "src/optimizer/batch_size/walk_bandit_policy.h"

namespace zeus {
namespace {

constexpr int kStateVersion = 1;

constexpr char kStateContext[] = "batch size optimizer state";
using batch_size_internal::kMaxInt;

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

// The trials handed out and not yet reported, by trial number, with what
// each records: the lowest cost known when a concurrent trial was handed
// out or ran on, whether it is never restarted ("ran_on", frugal and swarm
// only), and the bound of a probe that finishes (swarm only). Their curves
// are ReadProgress's.
StatusOr<std::map<int64_t, InFlightTrial>> ReadInFlight(const JsonFields& state,
                                                        const BatchSizeOptimizerConfig& config,
                                                        const WalkBanditPolicy::StateKeeps& keeps) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("in_flight"));
  std::map<int64_t, InFlightTrial> in_flight;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("in_flight", i));
    InFlightTrial trial;
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
      if (trial.kind != TrialKind::kConcurrent || !keeps.concurrent_bounds) {
        return entry.Error("min_cost_at_handout",
                           "only a concurrent trial of frugal or swarm records it, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      trial.min_cost_at_handout = *min_cost;
    }
    ZEUS_ASSIGN_OR_RETURN(std::optional<bool> near_miss, entry.OptionalBool("ran_on"));
    if (near_miss.value_or(false)) {
      if (trial.kind != TrialKind::kConcurrent || !keeps.concurrent_bounds) {
        return entry.Error("ran_on",
                           "only a concurrent trial of frugal or swarm runs on, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      trial.never_restarted = true;
    }
    ZEUS_ASSIGN_OR_RETURN(std::optional<double> finish,
                          entry.OptionalDouble("finish_bound", 0.0, GaussianTs::kMaxAbsReward));
    if (finish.has_value()) {
      if (trial.kind == TrialKind::kConcurrent || !keeps.finishes) {
        return entry.Error("finish_bound",
                           "only a swarm trial that is not concurrent finishes, not trial " +
                               std::to_string(trial.trial_number) + " (" + kind + ")");
      }
      trial.finish_bound = *finish;
    }

    if (trial.kind == TrialKind::kSpeculative && !keeps.speculation) {
      return state.Error("in_flight", "speculative trial " + std::to_string(trial.trial_number) +
                                          ": only the swarm policy speculates");
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
StatusOr<std::map<int, SpeculativeResult>> ReadSpeculative(const JsonFields& state,
                                                           const BatchSizeOptimizerConfig& config) {
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* entries, state.Array("speculative_results"));
  std::map<int, SpeculativeResult> results;
  for (size_t i = 0; i < entries->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("speculative_results", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t batch_size, entry.Int("batch_size", 1, kMaxInt));
    if (!IsBatchSize(config, batch_size)) {
      return entry.Error("batch_size", std::to_string(batch_size) + " is not one of batch_sizes");
    }
    SpeculativeResult result;
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

nlohmann::json WalkBanditPolicy::ToJson() const {
  nlohmann::json costs = nlohmann::json::array();
  for (const auto& [batch_size, values] : costs_) {
    costs.push_back({{"batch_size", batch_size}, {"costs", values}});
  }
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [number, trial] : in_flight_) {
    nlohmann::json entry = {{"trial_number", number},
                            {"batch_size", trial.batch_size},
                            {"kind", TrialKindName(trial.kind)}};
    if (trial.min_cost_at_handout) entry["min_cost_at_handout"] = *trial.min_cost_at_handout;
    // (Named for the first way a trial came to be never restarted.)
    if (trial.never_restarted) entry["ran_on"] = true;
    if (trial.finish_bound) entry["finish_bound"] = *trial.finish_bound;
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
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& [number, trial] : in_flight_) {
    if (trial.progress.empty()) continue;
    nlohmann::json entry = {{"trial_number", number}, {"curve", ProgressToJson(trial.progress)}};
    if (trial.curve_at_report) {
      entry["curve_at_report"] = {trial.curve_at_report->min_cost, trial.curve_at_report->ratio};
    }
    curves.push_back(std::move(entry));
  }
  if (!curves.empty()) json["trial_progress"] = curves;
  return json;
}

// The explorer waits on at most one trial: `exploration_trial`, in flight as
// an exploration of the size the explorer is on. Any other exploration in
// flight would report a cost for a size the explorer is not on.
Status WalkBanditPolicy::ValidateExplorationTrial(const JsonFields& state) const {
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

StatusOr<std::unique_ptr<BatchSizePolicy>> LoadBatchSizePolicy(const nlohmann::json& json) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields state, JsonFields::Of(json, kStateContext));
  ZEUS_ASSIGN_OR_RETURN(int64_t version, state.Int("version"));
  if (version != kStateVersion) {
    return state.Error("version", "expected " + std::to_string(kStateVersion) + ", got " +
                                      std::to_string(version));
  }
  ZEUS_ASSIGN_OR_RETURN(JsonFields config_json, state.Object("config"));
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizerConfig config,
                        BatchSizeOptimizerConfig::FromJson(config_json.object()));
  std::unique_ptr<WalkBanditPolicy> policy = batch_size_internal::NewPolicy(std::move(config));
  ZEUS_RETURN_IF_ERROR(policy->LoadState(state));
  return std::unique_ptr<BatchSizePolicy>(std::move(policy));
}

Status WalkBanditPolicy::LoadState(const JsonFields& state) {
  const BatchSizeOptimizerConfig& c = config_;
  const StateKeeps keeps = Keeps();
  ZEUS_ASSIGN_OR_RETURN(JsonFields rng, state.Object("rng"));
  StatusOr<Rng> restored_rng = Rng::FromJson(rng.object());
  if (!restored_rng.ok()) return restored_rng.status().WithContext(kStateContext);
  rng_ = *restored_rng;
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
  explorer_ = std::move(*restored_explorer);

  ZEUS_ASSIGN_OR_RETURN(costs_, ReadCosts(state, c));
  ZEUS_ASSIGN_OR_RETURN(in_flight_, ReadInFlight(state, c, keeps));
  for (auto& [number, trial] : in_flight_) trial.may_finish = MayFinish(trial);
  ZEUS_ASSIGN_OR_RETURN(next_trial_number_, state.Int("next_trial_number", 1));
  if (!in_flight_.empty() && in_flight_.rbegin()->first >= next_trial_number_) {
    return state.Error("next_trial_number", "must exceed every in-flight trial number");
  }
  ZEUS_ASSIGN_OR_RETURN(int64_t best, state.Int("best_batch_size", 1, kMaxInt));
  if (!IsBatchSize(c, best)) {
    return state.Error("best_batch_size", std::to_string(best) + " is not one of batch_sizes");
  }
  best_batch_size_ = static_cast<int>(best);
  ZEUS_ASSIGN_OR_RETURN(exploration_trial_, state.OptionalInt("exploration_trial", 1));
  ZEUS_RETURN_IF_ERROR(ValidateExplorationTrial(state));
  ZEUS_ASSIGN_OR_RETURN(min_cost_,
                        state.OptionalDouble("min_cost", 0.0, GaussianTs::kMaxAbsReward));
  if (state.Has("bandit")) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields bandit_json, state.Object("bandit"));
    StatusOr<GaussianTs> bandit = GaussianTs::FromJson(bandit_json.object(), BanditConfig());
    if (!bandit.ok()) return bandit.status().WithContext(kStateContext);
    for (const ArmState& arm : bandit->ArmStates()) {
      if (!IsBatchSize(c, arm.batch_size)) {
        return state.Error("bandit",
                           "arm " + std::to_string(arm.batch_size) + " is not one of batch_sizes");
      }
    }
    bandit_.emplace(std::move(*bandit));
  }
  if (explorer_.done() != bandit_.has_value()) {
    return state.Error("bandit", "must be present exactly when exploration is over");
  }
  if (state.Has("censored")) {
    if (!keeps.censored) {
      return state.Error("censored",
                         "only the frugal policy (and swarm, built on it) censors batch sizes");
    }
    ZEUS_ASSIGN_OR_RETURN(censored_, ReadCensored(state, bandit_, c));
  }
  if (state.Has("speculative_results")) {
    if (!keeps.speculation) {
      return state.Error("speculative_results", "only the swarm policy speculates");
    }
    if (explorer_.done()) {
      return state.Error("speculative_results", "must be absent once exploration is over");
    }
    ZEUS_ASSIGN_OR_RETURN(speculative_results_, ReadSpeculative(state, c));
  }
  return ReadProgress(state);
}

Status WalkBanditPolicy::ReadProgress(const JsonFields& state) {
  const bool any = state.Has("reference_progress") || state.Has("trial_progress");
  if (any && !Keeps().curves) {
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
  std::set<int64_t> seen;
  for (size_t i = 0; i < curves->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields entry, state.Element("trial_progress", i));
    ZEUS_ASSIGN_OR_RETURN(int64_t number, entry.Int("trial_number", 1));
    auto trial = in_flight_.find(number);
    if (trial == in_flight_.end()) {
      return entry.Error("trial_number", std::to_string(number) + " is not in flight");
    }
    if (!seen.insert(number).second) {
      return entry.Error("trial_number", std::to_string(number) + " appears twice");
    }
    ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* points, entry.Array("curve"));
    StatusOr<std::vector<ProgressPoint>> curve = ProgressFromJson(*points, "trial_progress.curve");
    if (!curve.ok()) return curve.status().WithContext(kStateContext);
    trial->second.progress = std::move(*curve);
    if (entry.Has("curve_at_report")) {
      ZEUS_ASSIGN_OR_RETURN(std::vector<double> key,
                            entry.DoubleArray("curve_at_report", 0.0, GaussianTs::kMaxAbsReward));
      if (key.size() != 2 || !(key[1] > 0.0)) {
        return entry.Error("curve_at_report",
                           "expected [min_cost, ratio] with ratio > 0 (the curve trial " +
                               std::to_string(number) + " was held to at its last report)");
      }
      trial->second.curve_at_report = CurveKey{key[0], key[1]};
    }
  }
  return Status::Ok();
}

}  // namespace zeus
