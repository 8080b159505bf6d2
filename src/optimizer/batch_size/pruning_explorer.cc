#include "zeus/optimizer/batch_size/pruning_explorer.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/util/json.h"

namespace zeus {

PruningExplorer::PruningExplorer(std::vector<int> batch_sizes, int default_batch_size,
                                 int num_rounds, int direction_patience, double decisive_ratio)
    : num_rounds_(num_rounds),
      direction_patience_(direction_patience),
      decisive_ratio_(decisive_ratio),
      candidates_(std::move(batch_sizes)),
      default_(default_batch_size) {
  StartRound();
}

void PruningExplorer::StartRound() {
  down_.clear();
  up_.clear();
  good_.clear();
  best_cost_.reset();
  going_up_ = false;
  position_ = 0;
  misses_in_a_row_ = 0;
  improved_in_direction_ = false;
  start_cost_.reset();
  up_start_cost_.reset();
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

std::vector<int> PruningExplorer::Upcoming(size_t down_depth, size_t up_depth) const {
  std::vector<int> upcoming;
  if (done_) return upcoming;
  if (going_up_) {
    for (size_t i = position_ + 1; i < up_.size() && i <= position_ + up_depth; ++i) {
      upcoming.push_back(up_[i]);
    }
    return upcoming;
  }
  const bool list_up = UpIsLikely();
  for (size_t i = 0; i < std::max(down_depth, up_depth); ++i) {
    if (i < down_depth && position_ + 1 + i < down_.size()) {
      upcoming.push_back(down_[position_ + 1 + i]);
    }
    if (list_up && i < up_depth && i < up_.size()) upcoming.push_back(up_[i]);
  }
  return upcoming;
}

std::vector<int> PruningExplorer::AheadInDirection() const {
  if (done_) return {};
  const std::vector<int>& walk = going_up_ ? up_ : down_;
  return std::vector<int>(walk.begin() + static_cast<std::ptrdiff_t>(position_) + 1, walk.end());
}

int PruningExplorer::StepsBehind(int batch_size) const {
  if (done_) return 0;
  const auto current = std::find(candidates_.begin(), candidates_.end(), Current());
  const auto other = std::find(candidates_.begin(), candidates_.end(), batch_size);
  if (current == candidates_.end() || other == candidates_.end()) return 0;
  const auto larger_by = static_cast<int>(other - current);
  return going_up_ ? -larger_by : larger_by;
}

bool PruningExplorer::MayTry(int batch_size) const {
  if (done_) return false;
  const std::vector<int>& walk = going_up_ ? up_ : down_;
  if (std::find(walk.begin() + static_cast<std::ptrdiff_t>(position_), walk.end(), batch_size) !=
      walk.end()) {
    return true;
  }
  // A decisive down walk stays decisive (the best cost only falls): the up
  // direction will be skipped.
  return !going_up_ && !DownWasDecisive() &&
         std::find(up_.begin(), up_.end(), batch_size) != up_.end();
}

Status PruningExplorer::Report(double cost, bool reached_target, Miss miss) {
  if (done_) return FailedPreconditionError("pruning explorer: exploration is already over");
  const int batch_size = Current();
  if (reached_target && !going_up_ && position_ == 0) start_cost_ = cost;
  if (reached_target) {
    if (!best_cost_.has_value() || cost < *best_cost_) {
      if (best_cost_.has_value()) improved_in_direction_ = true;
      best_cost_ = cost;
      default_ = batch_size;
    }
    good_.push_back(batch_size);
    misses_in_a_row_ = 0;
  } else if (miss != Miss::kOutbid) {
    ++misses_in_a_row_;
  }
  int patience = DirectionEarnedPatience() ? direction_patience_ : 1;
  if (!reached_target && miss == Miss::kLearnedSlower) patience = 1;
  Advance(/*direction_over=*/misses_in_a_row_ >= patience);
  return Status::Ok();
}

void PruningExplorer::Advance(bool direction_over) {
  ++position_;
  const std::vector<int>& walk = going_up_ ? up_ : down_;
  if (!direction_over && position_ < walk.size()) return;
  if (!going_up_ && !up_.empty() && !DownWasDecisive()) {
    going_up_ = true;
    up_start_cost_ = best_cost_;
    position_ = 0;
    misses_in_a_row_ = 0;
    improved_in_direction_ = false;
    return;
  }
  // The round is over: its survivors are the next round's candidates.
  std::sort(good_.begin(), good_.end());
  candidates_ = good_;
  ++round_;
  StartRound();
}

bool PruningExplorer::DirectionEarnedPatience() const {
  if (decisive_ratio_ <= 0) return improved_in_direction_;
  const std::optional<double>& start = going_up_ ? up_start_cost_ : start_cost_;
  return start.has_value() && best_cost_.has_value() && *start > decisive_ratio_ * *best_cost_;
}

bool PruningExplorer::UpIsLikely() const {
  if (decisive_ratio_ <= 0) return true;
  // The round's first step has not reported: nothing favours either
  // direction yet.
  if (!going_up_ && position_ == 0) return true;
  // Costs unimodal in the batch size: once a size below the start is cheaper
  // than the start, the optimum is not above it.
  return start_cost_.has_value() && best_cost_.has_value() && !(*best_cost_ < *start_cost_);
}

bool PruningExplorer::DownWasDecisive() const {
  return decisive_ratio_ > 0 && start_cost_.has_value() && best_cost_.has_value() &&
         *start_cost_ > decisive_ratio_ * *best_cost_;
}

nlohmann::json PruningExplorer::ToJson() const {
  nlohmann::json json = {
      {"num_rounds", num_rounds_}, {"round", round_}, {"done", done_}, {"candidates", candidates_},
      {"default", default_},       {"down", down_},   {"up", up_},     {"going_up", going_up_},
      {"position", position_},     {"good", good_}};
  json["best_cost"] = best_cost_.has_value() ? nlohmann::json(*best_cost_) : nlohmann::json();
  if (direction_patience_ != 1) {
    json["direction_patience"] = direction_patience_;
    json["misses_in_a_row"] = misses_in_a_row_;
    json["improved_in_direction"] = improved_in_direction_;
  }
  if (decisive_ratio_ != 0) {
    json["decisive_ratio"] = decisive_ratio_;
    json["start_cost"] = start_cost_.has_value() ? nlohmann::json(*start_cost_) : nlohmann::json();
    json["up_start_cost"] =
        up_start_cost_.has_value() ? nlohmann::json(*up_start_cost_) : nlohmann::json();
  }
  return json;
}

namespace {

// A list of batch sizes, each in [1, INT_MAX].
Status ReadSizes(const JsonFields& f, const char* field, std::vector<int>* out) {
  ZEUS_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                        f.IntArray(field, 1, std::numeric_limits<int>::max()));
  out->assign(sizes.begin(), sizes.end());
  return Status::Ok();
}

}  // namespace

// A round in progress is exactly what StartRound and Report build: the walks
// split the candidates at the round's starting size, the position is inside
// the current walk, the survivors are distinct sizes already walked, and the
// best cost and default follow from them. A state that breaks any of this
// would hand out sizes twice or save a state that no longer loads.
Status PruningExplorer::ValidateRound(const JsonFields& f) const {
  std::vector<int> walks(down_.rbegin(), down_.rend());
  walks.insert(walks.end(), up_.begin(), up_.end());
  if (down_.empty() || walks != candidates_) {
    return f.Error("down",
                   "with 'up', must split the candidates at the round's starting size "
                   "(down descending from it, up ascending above it)");
  }
  const std::vector<int>& walk = going_up_ ? up_ : down_;
  if (position_ >= walk.size()) {
    return f.Error("position", std::to_string(position_) + " is outside the round's walk of " +
                                   std::to_string(walk.size()) + " sizes");
  }
  std::vector<int> walked(down_.begin(), going_up_ ? down_.end() : down_.begin() + position_);
  if (going_up_) walked.insert(walked.end(), up_.begin(), up_.begin() + position_);
  std::vector<int> seen;
  for (int size : good_) {
    if (std::find(walked.begin(), walked.end(), size) == walked.end()) {
      return f.Error("good", std::to_string(size) + " has not been walked yet this round");
    }
    if (std::find(seen.begin(), seen.end(), size) != seen.end()) {
      return f.Error("good", std::to_string(size) + " appears twice");
    }
    seen.push_back(size);
  }
  if (good_.empty()) {
    if (best_cost_.has_value()) return f.Error("best_cost", "must be null while 'good' is empty");
    if (default_ != down_.front()) {
      return f.Error("default", std::to_string(default_) + " must be the round's starting size " +
                                    std::to_string(down_.front()) +
                                    " until a size reaches the target");
    }
  } else {
    if (!best_cost_.has_value())
      return f.Error("best_cost", "must be set once 'good' is not empty");
    if (std::find(good_.begin(), good_.end(), default_) == good_.end()) {
      return f.Error("default", std::to_string(default_) + " must be one of 'good'");
    }
  }
  return Status::Ok();
}

StatusOr<PruningExplorer> PruningExplorer::FromJson(const nlohmann::json& json) {
  constexpr double kMaxDecisiveRatio = 1e6;
  ZEUS_ASSIGN_OR_RETURN(JsonFields f, JsonFields::Of(json, "pruning explorer"));
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  PruningExplorer explorer;
  ZEUS_ASSIGN_OR_RETURN(int64_t num_rounds, f.Int("num_rounds", 0, kMaxInt));
  explorer.num_rounds_ = static_cast<int>(num_rounds);
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("direction_patience", 1, kMaxInt), &explorer.direction_patience_));
  // A direction ends on reaching the patience, so a stored count is below it.
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("misses_in_a_row", 0, explorer.direction_patience_ - 1),
                   &explorer.misses_in_a_row_));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("improved_in_direction"), &explorer.improved_in_direction_));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("decisive_ratio", 0.0, kMaxDecisiveRatio),
                                    &explorer.decisive_ratio_));
  ZEUS_ASSIGN_OR_RETURN(explorer.start_cost_,
                        f.OptionalDouble("start_cost", 0.0, GaussianTs::kMaxAbsReward));
  ZEUS_ASSIGN_OR_RETURN(explorer.up_start_cost_,
                        f.OptionalDouble("up_start_cost", 0.0, GaussianTs::kMaxAbsReward));
  ZEUS_ASSIGN_OR_RETURN(int64_t round, f.Int("round", 0, num_rounds));
  explorer.round_ = static_cast<int>(round);
  ZEUS_ASSIGN_OR_RETURN(explorer.done_, f.Bool("done"));
  // StartRound ends exploration once round reaches num_rounds.
  if (!explorer.done_ && explorer.round_ >= explorer.num_rounds_) {
    return f.Error("round", std::to_string(round) + " while still exploring, but num_rounds is " +
                                std::to_string(num_rounds));
  }
  ZEUS_RETURN_IF_ERROR(ReadSizes(f, "candidates", &explorer.candidates_));
  ZEUS_ASSIGN_OR_RETURN(int64_t default_size, f.Int("default", 1, kMaxInt));
  explorer.default_ = static_cast<int>(default_size);
  ZEUS_RETURN_IF_ERROR(ReadSizes(f, "down", &explorer.down_));
  ZEUS_RETURN_IF_ERROR(ReadSizes(f, "up", &explorer.up_));
  ZEUS_ASSIGN_OR_RETURN(explorer.going_up_, f.Bool("going_up"));
  ZEUS_ASSIGN_OR_RETURN(int64_t position, f.Int("position", 0));
  explorer.position_ = static_cast<size_t>(position);
  ZEUS_RETURN_IF_ERROR(ReadSizes(f, "good", &explorer.good_));
  // Costs are bounded as BatchSizeOptimizer bounds them (finite, [0, kMaxAbsReward]).
  ZEUS_ASSIGN_OR_RETURN(explorer.best_cost_,
                        f.OptionalDouble("best_cost", 0.0, GaussianTs::kMaxAbsReward));
  // The walks, the survivors and (while exploring) the default are drawn from
  // the candidates; a state that breaks this would hand out batch sizes the
  // job never listed.
  const std::vector<int>& candidates = explorer.candidates_;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i - 1] >= candidates[i]) {
      return f.Error("candidates", "must be strictly ascending, got " +
                                       std::to_string(candidates[i - 1]) + " before " +
                                       std::to_string(candidates[i]));
    }
  }
  auto is_candidate = [&candidates](int size) {
    return std::binary_search(candidates.begin(), candidates.end(), size);
  };
  for (const auto& [field, sizes] :
       {std::pair<const char*, const std::vector<int>*>{"down", &explorer.down_},
        {"up", &explorer.up_},
        {"good", &explorer.good_}}) {
    std::set<int> seen;
    for (int size : *sizes) {
      if (!is_candidate(size)) {
        return f.Error(field, std::to_string(size) + " is not one of the candidates");
      }
      // Each size is walked, and survives, at most once a round; a repeated
      // survivor would become a repeated candidate of the next round.
      if (!seen.insert(size).second) {
        return f.Error(field, std::to_string(size) + " appears twice");
      }
    }
  }
  // The two directions of a round split the candidates: none is in both.
  for (int size : explorer.up_) {
    if (std::find(explorer.down_.begin(), explorer.down_.end(), size) != explorer.down_.end()) {
      return f.Error("up", std::to_string(size) + " is also in the down walk");
    }
  }
  if (!explorer.done_ && !is_candidate(explorer.default_)) {
    return f.Error("default", std::to_string(explorer.default_) + " is not one of the candidates");
  }
  if (!explorer.done_) ZEUS_RETURN_IF_ERROR(explorer.ValidateRound(f));
  return explorer;
}

}  // namespace zeus
