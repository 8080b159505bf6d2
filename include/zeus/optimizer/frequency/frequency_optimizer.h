// Just-in-time SM-clock profiling during training: the JIT profiler
// (zeus/optimizer/jit/jit_profiler.h, whose comment describes the steps,
// epochs and data parallelism) turning the locked graphics clock of every GPU
// (min = max, nvmlDeviceSetGpuLockedClocks) over a coarse grid of the clocks
// the GPUs support at their memory clock (SmClocksToProfileMhz), from the
// highest down; the optimum is chosen per step by the same selectors as power
// limits, with MaxPower the GPUs' power limit at creation.
//
// A clock acts whatever the GPU draws, where a power limit acts only above
// the draw: for jobs that draw less than most limits, the clock is the knob
// that can trade time for energy.
//
// Creation locks every GPU at the highest clock of the grid (or at a saved
// profile's optimum, with `profile_path`), so a missing privilege is reported
// by Create. The clocks are unlocked on Restore(), on destruction, and on
// SIGINT/SIGTERM/SIGHUP/SIGABRT (LockedClockRestorer); through the Zeus
// daemon (ZEUSD_SOCK_PATH) the daemon's lease unlocks them when the process
// ends, however it ends. With ZEUS_DRY_RUN set, the Gpu setters log the clock
// they would lock instead of acting; measurement still happens.
//
// Thread-safety: not thread-safe. Call OnStepBegin/OnEpochEnd from one thread
// (the training loop); the signal path only uses the restorer.

#ifndef ZEUS_OPTIMIZER_FREQUENCY_FREQUENCY_OPTIMIZER_H_
#define ZEUS_OPTIMIZER_FREQUENCY_FREQUENCY_OPTIMIZER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/core/frequency_profile.h"
#include "zeus/core/optimum_selector.h"
#include "zeus/device/clock.h"
#include "zeus/device/gpu.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/jit/jit_profiler.h"
#include "zeus/status.h"

namespace zeus {

struct FrequencyOptimizerOptions {
  // As JitProfilerOptions. Defaults: 10, 10, 40, 3 s.
  int64_t wait_steps = 10;
  int64_t warmup_steps = 10;
  int64_t measure_steps = 40;
  std::chrono::nanoseconds min_measure_time = std::chrono::seconds(3);
  // Distance between profiled clocks, in MHz (> 0). Default: 90.
  uint32_t clock_step_mhz = 90;
  // Lowest clock profiled, in MHz; 0: half the highest supported clock
  // (lower clocks stretch a step beyond what energy savings repay on
  // compute-bound work, and take longest to profile). Default: 0.
  uint32_t min_clock_mhz = 0;
  // How to pick the optimum. Default: Zeus cost with eta 0.5.
  OptimumSelector selector = OptimumSelector::LeastCost(0.5);
  // As JitProfilerOptions::profile_path, in the frequency profile format
  // (frequency_profile.h). Default: none.
  std::string profile_path;
  // Data-parallel hook (see AllReduceFn). Default: none (one process).
  AllReduceFn all_reduce;
  // Unlock the clocks on SIGINT/SIGTERM/SIGHUP/SIGABRT. Default: on.
  bool restore_on_signal = true;
};

// The clocks profiled, highest first: supported[0] (the highest), then for
// each target highest - k x step_mhz down to min_mhz (0: half the highest),
// the highest supported clock at or below it, without repeats.
// kInvalidArgument for an empty list or step_mhz == 0.
StatusOr<std::vector<uint32_t>> SmClocksToProfileMhz(std::vector<uint32_t> supported_mhz,
                                                     uint32_t step_mhz, uint32_t min_mhz);

class FrequencyOptimizer {
 public:
  using Phase = JitProfiler::Phase;

  // Drives `gpus` (non-empty; all must report the same supported clocks),
  // measuring through `monitor` (over exactly `gpus`), timing with `clock`;
  // all outlive the optimizer. Errors: kInvalidArgument for bad options or
  // GPUs that differ; kNotSupported (naming the backend) when the GPUs
  // cannot list their clocks; kPermissionDenied (saying what to do) when a
  // clock cannot be locked; the profile file's error.
  static StatusOr<std::unique_ptr<FrequencyOptimizer>> Create(std::vector<Gpu*> gpus,
                                                              EnergyMonitor* monitor, Clock* clock,
                                                              FrequencyOptimizerOptions options);

  // Unlocks the clocks (errors are logged).
  ~FrequencyOptimizer() = default;
  FrequencyOptimizer(const FrequencyOptimizer&) = delete;
  FrequencyOptimizer& operator=(const FrequencyOptimizer&) = delete;

  Status OnStepBegin() { return profiler_->OnStepBegin(); }
  Status OnEpochEnd() { return profiler_->OnEpochEnd(); }
  // Unlocks every GPU's clocks now; the optimizer then stops locking them.
  Status Restore() { return profiler_->Restore(); }

  Phase phase() const { return profiler_->phase(); }
  // The clocks of the grid, in MHz, highest first.
  const std::vector<uint32_t>& clocks_mhz() const { return profiler_->settings(); }
  // The measurements so far, with the GPUs' MaxPower.
  FrequencyProfile profile() const { return {profiler_->profile(), max_power_limit_mw_}; }
  std::optional<uint32_t> optimum_mhz() const { return profiler_->optimum(); }
  uint32_t phase_clock_mhz() const { return profiler_->phase_setting(); }
  std::optional<int64_t> steps_left() const { return profiler_->steps_left(); }
  // The clock every GPU was last locked to by us, in MHz.
  uint32_t current_clock_mhz() const { return profiler_->current_setting(); }
  // The state machine underneath, for what every knob reports alike.
  const JitProfiler& profiler() const { return *profiler_; }

 private:
  FrequencyOptimizer(std::unique_ptr<JitProfiler> profiler, uint32_t max_power_limit_mw)
      : profiler_(std::move(profiler)), max_power_limit_mw_(max_power_limit_mw) {}

  const std::unique_ptr<JitProfiler> profiler_;
  const uint32_t max_power_limit_mw_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_FREQUENCY_FREQUENCY_OPTIMIZER_H_
