// A small hand-made workload shared by the simulator tests.

#ifndef ZEUS_TESTS_SIM_TOY_WORKLOAD_H_
#define ZEUS_TESTS_SIM_TOY_WORKLOAD_H_

#include <optional>
#include <string>

#include "zeus/sim/trace.h"

namespace zeus::testing {

// Batch sizes 32, 64 (default) and 128 at limits 100 and 200 W (max power
// 200 W). Two seed runs each: 32 reaches the target in 4 or 5 epochs, 64 in
// 3 or 4, 128 never.
inline Workload ToyWorkload(const std::string& gpu = "toy") {
  Workload w;
  w.gpu = gpu;
  w.job = {"toy", "net", "sgd", 0.5, 10, 64};
  w.default_batch_size = 64;
  w.max_power_w = 200;
  w.power_limits_w = {100, 200};
  w.batch_sizes = {
      {32, {{100, 10, 80}, {200, 8, 120}}, {4.0, 5.0}},
      {64, {{100, 6.5, 95}, {200, 6, 180}}, {3.0, 4.0}},
      {128, {{100, 5, 99}, {200, 4, 190}}, {std::nullopt, std::nullopt}},
  };
  return w;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SIM_TOY_WORKLOAD_H_
