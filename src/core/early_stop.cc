#include "zeus/core/early_stop.h"

namespace zeus {

std::optional<double> EarlyStopCostBound(std::optional<double> beta,
                                         std::optional<double> min_cost) {
  if (!beta.has_value() || !min_cost.has_value()) return std::nullopt;
  return *beta * *min_cost;
}

}  // namespace zeus
