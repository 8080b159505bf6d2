// The largest value an int field of the optimizer's JSON (config and state)
// may hold: batch sizes and counts are ints.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_INT_RANGE_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_INT_RANGE_H_

#include <cstdint>
#include <limits>

namespace zeus::batch_size_internal {

inline constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace zeus::batch_size_internal

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_INT_RANGE_H_
