// Zeus's pruning exploration of a job's batch sizes.
//
// Each round walks from the round's default batch size down to the smaller
// candidates, then up from it to the larger ones, and ends a direction at the
// first run that does not reach the target; with `direction_patience` p > 1,
// a direction that has already found a new best ends only after p such runs
// in a row (on a slope that keeps improving, one unlucky run does not hide the
// better sizes beyond it). With `decisive_ratio` r > 0, a round skips its up
// direction when the down direction found a size whose cost is below 1/r of
// the round's first run: a size beyond the start is then taken to cost at
// least as much as the start (costs unimodal in the batch size), more than r
// x the best, which exploration would stop anyway. With r > 0, a direction
// also earns its patience only by finding a size below 1/r of the best cost
// at the direction's start (a steep slope), not by any new best (which may
// be one lucky run). A round's survivors are the sizes that reached it; the
// next round covers only those, starting from the one with the lowest cost
// in the previous round. After `num_rounds` rounds the survivors become the
// bandit's arms.
//
// The explorer is a pure state machine: Current() names the batch size to
// try next, Report() gives the outcome of that batch size and advances.
//
// Thread-safety: not thread-safe.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_PRUNING_EXPLORER_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_PRUNING_EXPLORER_H_

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

class JsonFields;

class PruningExplorer {
 public:
  // REQUIRES: `batch_sizes` sorted and unique, `default_batch_size` one of
  // them, num_rounds >= 0, direction_patience >= 1, decisive_ratio >= 0
  // (0: never skip; checked by the caller's config validation).
  PruningExplorer(std::vector<int> batch_sizes, int default_batch_size, int num_rounds,
                  int direction_patience = 1, double decisive_ratio = 0.0);

  // True once every round is over.
  bool done() const { return done_; }
  // The batch size to try next. REQUIRES: !done().
  int Current() const;
  // The sizes the walk may try after Current(), nearest first. Going down:
  // at most `down_depth` further sizes down and, while the up direction is
  // likely to be walked (UpIsLikely), at most `up_depth` sizes of the up
  // direction, interleaved (next down, first up, second down, second up,
  // ...). Going up: at most `up_depth` further sizes up. Whether the walk
  // reaches them depends on the outcomes still to come. Empty when done().
  std::vector<int> Upcoming(size_t down_depth, size_t up_depth) const;
  // The sizes after Current() in the current direction, in walk order.
  // Empty when done().
  std::vector<int> AheadInDirection() const;
  // How many candidate sizes `batch_size` lies behind Current() in the
  // current direction: 1 for the size just before it in walk order (going
  // down, the next larger candidate), 0 for Current(), negative further
  // along. 0 when done() or `batch_size` is not a candidate of the round.
  int StepsBehind(int batch_size) const;
  // Whether the round in progress may still try `batch_size`: Current(),
  // further along the current direction or, while going down, in the up
  // direction unless the down walk is already decisive (the up direction
  // will be skipped). False when done().
  bool MayTry(int batch_size) const;
  // How a failure of Current() bears on its direction.
  enum class Miss {
    // A miss: the direction ends once its misses in a row reach its patience.
    kCounts,
    // Neither a miss nor the direction's end: the caller already knows a size
    // further along it reached the target.
    kOutbid,
    // The direction ends whatever its patience: the run learned slower than
    // the run of the lowest cost (a learning-curve stop), so it was not one
    // unlucky run that missed the bound at the end, which patience is for.
    kLearnedSlower,
  };
  // The outcome of running Current(); advances the walk. `miss` matters only
  // when `reached_target` is false. kFailedPrecondition when done().
  Status Report(double cost, bool reached_target, Miss miss = Miss::kCounts);

  // The surviving batch sizes, sorted. REQUIRES: done(). Empty when every
  // size was pruned.
  const std::vector<int>& survivors() const { return candidates_; }
  // The round being walked, 0-based.
  int round() const { return round_; }

  // `direction_patience` (when not 1) and `decisive_ratio` (when not 0) are
  // written only for other policies than Zeus, so Zeus's state reads as
  // before; a state without them loads as Zeus's walk. A state from before
  // `up_start_cost` existed loads with it unset: an up direction in progress
  // then ends at its first failure.
  nlohmann::json ToJson() const;
  static StatusOr<PruningExplorer> FromJson(const nlohmann::json& json);

 private:
  PruningExplorer() = default;
  // Sets up round round_ over candidates_ from default_; may finish.
  void StartRound();
  // Whether the up direction can be skipped (see decisive_ratio above).
  bool DownWasDecisive() const;
  // Whether Upcoming() lists the up direction while walking down: always
  // without a decisive ratio; with one, while the round's first step has not
  // reported (nothing favours either direction yet), and after it once it
  // reached the target and no smaller size has been cheaper than it (with
  // costs unimodal in the batch size, the optimum is then not above the
  // start).
  bool UpIsLikely() const;
  // Whether the current direction ends only after `direction_patience`
  // failures in a row (see above).
  bool DirectionEarnedPatience() const;
  // Moves to the next position, or direction, or round.
  void Advance(bool direction_over);
  // OK when the round in progress is one StartRound and Report could have
  // built; else kInvalidArgument naming the field of `f` at fault.
  Status ValidateRound(const JsonFields& f) const;

  int num_rounds_ = 0;
  // Runs in a row that do not reach the target and end a direction.
  int direction_patience_ = 1;
  // Such runs in a row so far in the current direction.
  int misses_in_a_row_ = 0;
  // Whether the current direction has found a new best for the round.
  bool improved_in_direction_ = false;
  double decisive_ratio_ = 0.0;
  // Cost of the round's first run when it reached the target.
  std::optional<double> start_cost_;
  // The round's best cost when its up direction began (unset before).
  std::optional<double> up_start_cost_;
  int round_ = 0;
  bool done_ = false;
  // Candidates of the current round (sorted).
  std::vector<int> candidates_;
  // Where the current round starts; the cheapest success of the round so far.
  int default_ = 0;
  // Walk order of the current round: down from default, then up.
  std::vector<int> down_;
  std::vector<int> up_;
  bool going_up_ = false;
  size_t position_ = 0;
  // Sizes of this round that reached the target, and the best cost among them.
  std::vector<int> good_;
  std::optional<double> best_cost_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_PRUNING_EXPLORER_H_
