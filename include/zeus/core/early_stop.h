// Zeus's early-stopping rule (NSDI'23): a run of a recurring job stops before
// its cost (ZeusCost) passes beta x the lowest cost of a run of that job that
// reached its target.
//
// Thread-safety: pure functions.

#ifndef ZEUS_CORE_EARLY_STOP_H_
#define ZEUS_CORE_EARLY_STOP_H_

#include <optional>

namespace zeus {

// The cost bound beta x min_cost, in the cost's units. nullopt when early
// stopping is off (no `beta`) or no run has reached the target yet (no
// `min_cost`). REQUIRES: beta, when set, is finite and > 0.
std::optional<double> EarlyStopCostBound(std::optional<double> beta,
                                         std::optional<double> min_cost);

}  // namespace zeus

#endif  // ZEUS_CORE_EARLY_STOP_H_
