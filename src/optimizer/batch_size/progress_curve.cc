#include "zeus/optimizer/batch_size/progress_curve.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "zeus/optimizer/batch_size/gaussian_ts.h"

namespace zeus {
namespace {

constexpr double kMaxAbsProgress = 1e15;

std::string Text(double value) { return nlohmann::json(value).dump(); }

}  // namespace

Status AppendProgress(std::vector<ProgressPoint>& curve, double cost, double progress) {
  if (!std::isfinite(cost) || cost < 0 || cost > GaussianTs::kMaxAbsReward) {
    return InvalidArgumentError("progress: cost must be finite and in [0, 1e100], got " +
                                Text(cost));
  }
  if (!std::isfinite(progress) || std::abs(progress) > kMaxAbsProgress) {
    return InvalidArgumentError("progress: metric must be finite and in [-1e15, 1e15], got " +
                                Text(progress));
  }
  if (!curve.empty() && cost < curve.back().cost) {
    return InvalidArgumentError("progress: cost " + Text(cost) + " is below the cost " +
                                Text(curve.back().cost) +
                                " already reported for an earlier epoch (costs are cumulative)");
  }
  if (curve.size() >= kMaxProgressPoints) return Status::Ok();
  const double best = curve.empty() ? progress : std::max(progress, curve.back().progress);
  curve.push_back({cost, best});
  return Status::Ok();
}

std::optional<double> ProgressBound(const std::vector<ProgressPoint>& reference, double progress,
                                    double ratio) {
  for (size_t i = 0; i + 1 < reference.size(); ++i) {
    if (reference[i].progress > progress) return ratio * reference[i].cost;
  }
  return std::nullopt;
}

std::optional<double> ProgressReachedBound(const std::vector<ProgressPoint>& reference,
                                           double progress, double ratio) {
  for (size_t i = 0; i + 1 < reference.size(); ++i) {
    if (reference[i].progress >= progress) return ratio * reference[i].cost;
  }
  return std::nullopt;
}

const ProgressPoint& FirstAtBestProgress(const std::vector<ProgressPoint>& curve) {
  ZEUS_CHECK(!curve.empty());
  const double best = curve.back().progress;
  return *std::find_if(curve.begin(), curve.end(),
                       [best](const ProgressPoint& point) { return point.progress == best; });
}

bool ReachedSlowerThan(const std::vector<ProgressPoint>& reference,
                       const std::vector<ProgressPoint>& run, double progress, double ratio) {
  const std::optional<double> allowed = ProgressReachedBound(reference, progress, ratio);
  auto first = std::find_if(run.begin(), run.end(), [progress](const ProgressPoint& point) {
    return point.progress >= progress;
  });
  return allowed.has_value() && first != run.end() && first->cost > *allowed;
}

nlohmann::json ProgressToJson(const std::vector<ProgressPoint>& curve) {
  nlohmann::json out = nlohmann::json::array();
  for (const ProgressPoint& point : curve) out.push_back({point.cost, point.progress});
  return out;
}

StatusOr<std::vector<ProgressPoint>> ProgressFromJson(const nlohmann::json& json,
                                                      const char* field) {
  const std::string where = std::string("field '") + field + "'";
  if (!json.is_array() || json.size() > kMaxProgressPoints) {
    return InvalidArgumentError(where + ": expected a list of at most " +
                                std::to_string(kMaxProgressPoints) +
                                " [cost, progress] pairs, got " + json.dump().substr(0, 200));
  }
  std::vector<ProgressPoint> curve;
  for (const nlohmann::json& pair : json) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number()) {
      return InvalidArgumentError(where + ": expected [cost, progress] pairs of numbers, got " +
                                  pair.dump().substr(0, 200));
    }
    const double progress = pair[1].get<double>();
    Status appended = AppendProgress(curve, pair[0].get<double>(), progress);
    if (!appended.ok()) return InvalidArgumentError(where + ": " + appended.message());
    if (curve.back().progress != progress) {
      return InvalidArgumentError(where + ": progress must not decrease (a running best), got " +
                                  Text(progress) + " after " +
                                  Text(curve[curve.size() - 2].progress));
    }
  }
  return curve;
}

}  // namespace zeus
