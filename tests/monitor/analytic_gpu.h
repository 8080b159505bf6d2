// A Gpu whose power curve has a closed-form integral, so its energy counter
// is exact at every update: the counter holds the energy at the last multiple
// of the update period (NVML's behaviour) and does not move in between. Used
// to measure the low-overhead mode's error against exact reads.
//
// Thread-safety: all methods may be called concurrently.

#ifndef ZEUS_TESTS_MONITOR_ANALYTIC_GPU_H_
#define ZEUS_TESTS_MONITOR_ANALYTIC_GPU_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>

#include "zeus/device/clock.h"
#include "zeus/device/gpu.h"
#include "zeus/util/units.h"

namespace zeus::testing {

// 300 W with a 30 W swing every 0.9 s (e.g. data loading) and a 60 W swing
// over 7 s: a training-like curve, in W, at time t (s).
inline double TrainingPowerW(double t) {
  constexpr double kTwoPi = 6.283185307179586;
  return 300.0 + 30.0 * std::sin(kTwoPi * t / 0.9) + 60.0 * std::sin(kTwoPi * t / 7.0);
}

// The integral of TrainingPowerW from 0 to t, in J.
inline double TrainingEnergyJ(double t) {
  constexpr double kTwoPi = 6.283185307179586;
  return 300.0 * t + 30.0 * 0.9 / kTwoPi * (1.0 - std::cos(kTwoPi * t / 0.9)) +
         60.0 * 7.0 / kTwoPi * (1.0 - std::cos(kTwoPi * t / 7.0));
}

class AnalyticGpu final : public Gpu {
 public:
  // `clock` must outlive this object. update_period > 0.
  AnalyticGpu(Clock* clock, std::chrono::nanoseconds update_period)
      : clock_(clock), update_period_(update_period) {}

  // The exact energy consumed from clock time 0 to now, in J.
  double TrueEnergyJ() { return TrainingEnergyJ(ToSeconds(clock_->Now())); }

  int index() const override { return 0; }
  StatusOr<std::string> Name() override { return std::string("Analytic GPU"); }
  StatusOr<std::string> Architecture() override { return std::string("Hopper"); }
  StatusOr<std::string> Uuid() override { return std::string("GPU-analytic"); }
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override {
    return NotSupportedError("analytic GPU: no power limits");
  }
  StatusOr<uint32_t> DefaultPowerLimitMw() override { return NotSupportedError("analytic GPU"); }
  StatusOr<uint32_t> PowerLimitMw() override { return NotSupportedError("analytic GPU"); }
  StatusOr<uint32_t> EnforcedPowerLimitMw() override { return NotSupportedError("analytic GPU"); }
  Status SetPowerLimitMw(uint32_t) override { return NotSupportedError("analytic GPU"); }
  StatusOr<bool> PersistenceMode() override { return NotSupportedError("analytic GPU"); }
  Status SetPersistenceMode(bool) override { return NotSupportedError("analytic GPU"); }
  StatusOr<uint64_t> TotalEnergyMj() override {
    int64_t now_ns = clock_->Now().count();
    int64_t update_ns = now_ns - now_ns % update_period_.count();
    return static_cast<uint64_t>(TrainingEnergyJ(NsToS(update_ns)) * 1e3);
  }
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override { return update_period_; }
  StatusOr<uint32_t> PowerMw() override {
    return static_cast<uint32_t>(std::lround(TrainingPowerW(ToSeconds(clock_->Now())) * 1e3));
  }

 private:
  Clock* const clock_;
  const std::chrono::nanoseconds update_period_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_MONITOR_ANALYTIC_GPU_H_
