// Test rig: replays a shared A40 profile through FakeGpus and a FakeClock.
//
// Each fake GPU draws, at limit L, the constant power gpu<i>_energy / elapsed
// of the profile row for L, and one training step at L lasts elapsed /
// steps_per_row, so a stretch of steps_per_row steps at L reproduces the row's
// time and energy. Energy is read exactly (FakeGpu::TrueEnergyJ) by a small
// EnergyMonitor that also records every Begin/End/Cancel.

#ifndef ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_REPLAY_RIG_H_
#define ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_REPLAY_RIG_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zeus/device/fake.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/power_limit/power_limit_optimizer.h"

#include "tests/core/bundled_profiles.h"

namespace zeus::testing {

// An exact EnergyMonitor over FakeGpus, logging "begin:<name>",
// "end:<name>" and "cancel:<name>".
class ExactFakeMonitor final : public EnergyMonitor {
 public:
  ExactFakeMonitor(std::vector<FakeGpu*> gpus, Clock* clock) : gpus_(gpus), clock_(clock) {}

  Status Begin(std::string_view name) override;
  StatusOr<Measurement> End(std::string_view name) override;
  Status Cancel(std::string_view name) override;
  bool IsOpen(std::string_view name) const override { return open_.count(std::string(name)); }
  std::vector<bool> GpusIntegratingPower() const override {
    return std::vector<bool>(gpus_.size(), false);
  }
  Status SampleNow() override { return Status::Ok(); }

  const std::vector<std::string>& events() const { return events_; }

 private:
  struct Open {
    double start_s;
    std::vector<double> energy_j;
  };
  std::vector<FakeGpu*> gpus_;
  Clock* clock_;
  std::map<std::string, Open> open_;
  std::vector<std::string> events_;
};

// FakeGpus on one FakeClock, measured exactly by an ExactFakeMonitor: what
// every optimizer test rig (of either knob) drives.
class FakeGpuSet {
 public:
  // One FakeGpu per entry of `options`, on clock().
  explicit FakeGpuSet(const std::vector<FakeGpuOptions>& options);
  FakeGpuSet(const FakeGpuSet&) = delete;
  FakeGpuSet& operator=(const FakeGpuSet&) = delete;

  std::vector<Gpu*> gpus() const;
  FakeGpu& gpu(size_t i) { return *gpus_[i]; }
  size_t size() const { return gpus_.size(); }
  ExactFakeMonitor* monitor() { return monitor_.get(); }
  FakeClock* clock() { return &clock_; }

 private:
  FakeClock clock_;
  std::vector<std::unique_ptr<FakeGpu>> gpus_;
  std::unique_ptr<ExactFakeMonitor> monitor_;
};

class ReplayRig {
 public:
  // `original_limit_w`: the limit every GPU has before the optimizer.
  // `energy_update_period`: as FakeGpuOptions (zero: a continuous counter).
  ReplayRig(const RawProfile& raw, int steps_per_row, int original_limit_w = 300,
            std::chrono::nanoseconds energy_update_period = std::chrono::nanoseconds(0));

  std::vector<Gpu*> gpus() const { return set_.gpus(); }
  FakeGpu& gpu(size_t i) { return set_.gpu(i); }
  size_t num_gpus() const { return set_.size(); }
  ExactFakeMonitor* monitor() { return set_.monitor(); }
  FakeClock* clock() { return set_.clock(); }
  const RawProfileRow& Row(int limit_w) const;

  // Runs one epoch of `steps` steps: OnStepBegin, then the clock advances by
  // one step at GPU 0's current limit; OnEpochEnd at the end. Fails the test
  // on any error.
  void RunEpoch(PowerLimitOptimizer& opt, int64_t steps);
  // Like RunEpoch without the epoch end.
  void RunSteps(PowerLimitOptimizer& opt, int64_t steps);

  // The limits (W) of the profile, from the highest down.
  std::vector<int> LimitsW() const;

 private:
  // One GPU per energy column of the profile, drawing the profile's power.
  // REQUIRES: raw_ set.
  std::vector<FakeGpuOptions> GpuOptions(int original_limit_w,
                                         std::chrono::nanoseconds energy_update_period);

  const RawProfile raw_;
  const int steps_per_row_;
  FakeGpuSet set_;
};

// Options with whole-step stretches (no time extension) that profile every
// limit (no skipping of limits that cannot bind).
PowerLimitOptimizerOptions StepOnlyOptions();

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_REPLAY_RIG_H_
