// Learning curves for early stopping: where a run stands after each epoch,
// and the bound a run is held to at each point of a reference run's curve.
//
// A run that learns slower than the reference (the run of the lowest cost
// known) is stopped as soon as it has spent `ratio` x what the reference had
// spent when it first got further than the run is now, not only once its
// whole cost passes `ratio` x the reference's (docs/BATCH_SIZE_POLICY.md,
// "Seventh round"). Progress is the validation metric oriented so that
// higher is better (a metric where lower is better, negated).
//
// Thread-safety: plain values and pure functions.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_PROGRESS_CURVE_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_PROGRESS_CURVE_H_

#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

// A run after one epoch: its cost so far (ZeusCost, J) and its best progress
// so far.
struct ProgressPoint {
  double cost = 0.0;
  double progress = 0.0;

  friend bool operator==(const ProgressPoint& a, const ProgressPoint& b) {
    return a.cost == b.cost && a.progress == b.progress;
  }
};

// The progress of a run that has reported none: below every level, so a
// curve holds it to the reference's first point.
inline constexpr double kNoProgress = -std::numeric_limits<double>::infinity();

// The most points kept of one run's curve; later epochs are not recorded
// (the bound then covers the recorded part only).
inline constexpr size_t kMaxProgressPoints = 4096;

// Appends the point after an epoch with `cost` and `progress` to `curve`,
// keeping progress a running maximum. kInvalidArgument when either value is
// not finite, the cost is negative or below the curve's last cost, or the
// progress is outside [-1e15, 1e15]. Beyond kMaxProgressPoints, accepts and
// drops the point.
Status AppendProgress(std::vector<ProgressPoint>& curve, double cost, double progress);

// The cost a run whose best progress so far is `progress` may spend when
// held to `ratio` x `reference`: ratio x the reference's cost at its first
// point whose progress is above `progress`, among every point but the last
// (the last is where the reference reached the target, which the bound on
// the whole run covers). nullopt when no such point exists.
std::optional<double> ProgressBound(const std::vector<ProgressPoint>& reference, double progress,
                                    double ratio);

// The cost `ratio` x `reference` allows a run for getting as far as
// `progress`: ratio x the reference's cost at its first point whose progress
// is at least `progress`, among every point but the last (as
// ProgressBound). A run that first reported `progress` at a higher cost
// got there slower than the curve allows. nullopt when no such point
// exists.
std::optional<double> ProgressReachedBound(const std::vector<ProgressPoint>& reference,
                                           double progress, double ratio);

// The point where `curve` first reported its best progress (the progress
// of its last point). REQUIRES: !curve.empty().
const ProgressPoint& FirstAtBestProgress(const std::vector<ProgressPoint>& curve);

// Whether `run` (its curve so far) got as far as `progress` slower than
// `ratio` x `reference` allows: its cost at its first point at least that
// far is above ProgressReachedBound. False when either has no such point.
bool ReachedSlowerThan(const std::vector<ProgressPoint>& reference,
                       const std::vector<ProgressPoint>& run, double progress, double ratio);

// [[cost, progress], ...].
nlohmann::json ProgressToJson(const std::vector<ProgressPoint>& curve);
// kInvalidArgument naming `field` unless `json` is such a list that
// AppendProgress accepts point by point, of at most kMaxProgressPoints.
StatusOr<std::vector<ProgressPoint>> ProgressFromJson(const nlohmann::json& json,
                                                      const char* field);

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_PROGRESS_CURVE_H_
