#include "zeus/optimizer/batch_size/pruning_explorer.h"

#include <algorithm>
#include <string>

namespace zeus {

PruningExplorer::PruningExplorer(std::vector<int> batch_sizes, int default_batch_size,
                                 int num_rounds)
    : num_rounds_(num_rounds), candidates_(std::move(batch_sizes)), default_(default_batch_size) {
  StartRound();
}

void PruningExplorer::StartRound() {
  down_.clear();
  up_.clear();
  good_.clear();
  best_cost_.reset();
  going_up_ = false;
  position_ = 0;
  auto it = std::find(candidates_.begin(), candidates_.end(), default_);
  if (round_ >= num_rounds_ || it == candidates_.end()) {
    // No rounds left, or nothing survived to start from.
    done_ = true;
    return;
  }
  // Down from the default (inclusive), then up from the next larger size.
  down_.assign(std::make_reverse_iterator(it + 1), candidates_.rend());
  up_.assign(it + 1, candidates_.end());
}

int PruningExplorer::Current() const {
  ZEUS_CHECK(!done_);
  return going_up_ ? up_[position_] : down_[position_];
}

Status PruningExplorer::Report(double cost, bool reached_target) {
  if (done_) return FailedPreconditionError("pruning explorer: exploration is already over");
  const int batch_size = Current();
  if (reached_target) {
    if (!best_cost_.has_value() || cost < *best_cost_) {
      best_cost_ = cost;
      default_ = batch_size;
    }
    good_.push_back(batch_size);
  }
  Advance(/*direction_over=*/!reached_target);
  return Status::Ok();
}

void PruningExplorer::Advance(bool direction_over) {
  ++position_;
  const std::vector<int>& walk = going_up_ ? up_ : down_;
  if (!direction_over && position_ < walk.size()) return;
  if (!going_up_ && !up_.empty()) {
    going_up_ = true;
    position_ = 0;
    return;
  }
  // The round is over: its survivors are the next round's candidates.
  std::sort(good_.begin(), good_.end());
  candidates_ = good_;
  ++round_;
  StartRound();
}

nlohmann::json PruningExplorer::ToJson() const {
  nlohmann::json json = {
      {"num_rounds", num_rounds_}, {"round", round_}, {"done", done_}, {"candidates", candidates_},
      {"default", default_},       {"down", down_},   {"up", up_},     {"going_up", going_up_},
      {"position", position_},     {"good", good_}};
  json["best_cost"] = best_cost_.has_value() ? nlohmann::json(*best_cost_) : nlohmann::json();
  return json;
}

namespace {

template <typename T>
Status ReadField(const nlohmann::json& json, const char* name, T* out) {
  if (!json.contains(name)) {
    return InvalidArgumentError(std::string("pruning explorer: missing field '") + name + "'");
  }
  try {
    *out = json.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("pruning explorer: field '") + name + "': " + e.what());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<PruningExplorer> PruningExplorer::FromJson(const nlohmann::json& json) {
  if (!json.is_object()) return InvalidArgumentError("pruning explorer: expected an object");
  PruningExplorer explorer;
  ZEUS_RETURN_IF_ERROR(ReadField(json, "num_rounds", &explorer.num_rounds_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "round", &explorer.round_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "done", &explorer.done_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "candidates", &explorer.candidates_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "default", &explorer.default_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "down", &explorer.down_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "up", &explorer.up_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "going_up", &explorer.going_up_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "position", &explorer.position_));
  ZEUS_RETURN_IF_ERROR(ReadField(json, "good", &explorer.good_));
  if (!json.contains("best_cost")) {
    return InvalidArgumentError("pruning explorer: missing field 'best_cost'");
  }
  if (json.at("best_cost").is_number()) {
    explorer.best_cost_ = json.at("best_cost").get<double>();
  } else if (!json.at("best_cost").is_null()) {
    return InvalidArgumentError("pruning explorer: field 'best_cost' must be a number or null");
  }
  if (!explorer.done_) {
    const std::vector<int>& walk = explorer.going_up_ ? explorer.up_ : explorer.down_;
    if (explorer.position_ >= walk.size()) {
      return InvalidArgumentError("pruning explorer: position " +
                                  std::to_string(explorer.position_) +
                                  " is outside the round's walk");
    }
  }
  return explorer;
}

}  // namespace zeus
