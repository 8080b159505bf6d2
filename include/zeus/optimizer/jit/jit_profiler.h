// Just-in-time profiling of one knob during training: the state machine that
// GlobalPowerLimitOptimizer (a power limit) and GlobalFrequencyOptimizer (a
// locked SM clock) share. The knob (knob.h) says how settings are applied,
// skipped, chosen and saved; this class decides when.
//
// The training loop calls OnStepBegin() at the start of every step and
// OnEpochEnd() after the last step of every epoch. The profiler then:
//  1. waits `wait_steps` steps at the highest setting;
//  2. for each setting from the highest down, applies it, runs
//     `warmup_steps` steps, then measures a stretch of at least
//     `measure_steps` steps, extended by whole steps until it spans at least
//     `min_measure_time` (the NVML energy counter moves only every ~100 ms);
//     once the highest setting is measured, every later setting the knob says
//     cannot change anything at the measured draw
//     (Knob::CanChangeAnything) is recorded with the highest setting's
//     measurement and not visited;
//  3. selects the optimum from the profile (energy and time per step),
//     applies it and saves the profile when `profile_path` is set.
// An epoch that ends during a warm-up or a measurement cancels it, applies the
// highest setting, and that setting starts again from its warm-up after
// `wait_steps` steps of the next epoch. If the epoch just ended was too short
// to hold wait + warm-up + measurement, those are shrunk to fit (logged as a
// warning), and stretches are then capped at what fits in one epoch, even if
// that is under `min_measure_time`. Epochs of a single step cannot be
// profiled: the profiler then keeps the highest setting (logged). Epoch
// lengths are learned from complete epochs only: the first epoch end is not
// used, as the profiler may have been created mid-epoch.
//
// With `profile_path` naming an existing profile, the optimum is selected
// from it and applied at creation: no profiling happens.
//
// Data-parallel ranks reach the same decisions through `all_reduce`: the
// skipped settings too, as the draw that decides them is the all-reduced one.
//
// Thread-safety: not thread-safe. Call OnStepBegin/OnEpochEnd from one thread
// (the training loop); the signal path only uses the knob's Restore().

#ifndef ZEUS_OPTIMIZER_JIT_JIT_PROFILER_H_
#define ZEUS_OPTIMIZER_JIT_JIT_PROFILER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/core/knob_profile.h"
#include "zeus/device/clock.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/jit/knob.h"
#include "zeus/status.h"

namespace zeus {

// What one rank measured, or (after all_reduce) all ranks together.
struct StretchTotals {
  // Energy of the stretch summed over GPUs, in J.
  double energy_j = 0.0;
  // Duration of the stretch, in s.
  double time_s = 0.0;
  // GPUs whose energy is in energy_j.
  int num_gpus = 0;
};

// Data-parallel hook. Called collectively: every rank calls it at the same
// step with its own totals, and it must return on every rank the sum of
// energy_j, the sum of num_gpus and the max of time_s over all ranks (e.g.
// torch.distributed.all_reduce). It is also called with energy_j = 0 and
// num_gpus = 0 whenever a stretch reaches the length it was extended to, so
// that all ranks agree on whether it spans min_measure_time (usually once or
// twice per setting).
using AllReduceFn = std::function<StatusOr<StretchTotals>(const StretchTotals& local)>;

struct JitProfilerOptions {
  // Steps run at the highest setting before profiling starts, and at the
  // start of an epoch that resumes an interrupted setting. Default: 10.
  int64_t wait_steps = 10;
  // Steps run at a new setting before its measurement starts. Default: 10.
  int64_t warmup_steps = 10;
  // Fewest steps in a measured stretch (>= 1). Default: 40.
  int64_t measure_steps = 40;
  // A stretch is extended by whole steps until it spans at least this (>= 0).
  // Default: 3 s (30 updates of the NVML energy counter).
  std::chrono::nanoseconds min_measure_time = std::chrono::seconds(3);
  // When set: an existing profile there is loaded (Knob::Load) and its
  // optimum applied at once; otherwise the measured profile is saved there,
  // and Create refuses a path that cannot be written (CheckProfileWritable),
  // naming it, before any setting is applied. Default: none.
  std::string profile_path;
  // Data-parallel hook (see AllReduceFn). Default: none (one process).
  AllReduceFn all_reduce;
};

class JitProfiler {
 public:
  enum class Phase { kWaiting, kWarmup, kMeasuring, kDone };

  // kInvalidArgument naming the bad option, `context` first.
  static Status ValidateOptions(const JitProfilerOptions& options, const std::string& context);

  // Turns `knob` over `settings` (non-empty, distinct, highest first) for
  // `num_gpus` GPUs measured through `monitor`, timing with `clock` (both
  // outlive the profiler). Applies the highest setting (or a saved profile's
  // optimum) before returning. Errors: bad options or settings; the profile
  // file's error when it exists but cannot be used; the knob's error.
  static StatusOr<std::unique_ptr<JitProfiler>> Create(std::unique_ptr<Knob> knob,
                                                       std::vector<uint32_t> settings, int num_gpus,
                                                       EnergyMonitor* monitor, Clock* clock,
                                                       JitProfilerOptions options);

  // Cancels an open measurement; the knob's destructor restores the GPUs.
  ~JitProfiler();
  JitProfiler(const JitProfiler&) = delete;
  JitProfiler& operator=(const JitProfiler&) = delete;

  // Call at the beginning of every training step. A step where no phase
  // ends costs a counter decrement. Errors come from applying settings, the
  // monitor, the all-reduce hook or saving the profile; after an error the
  // profiler stays usable in a consistent phase.
  Status OnStepBegin() {
    ++steps_in_epoch_;
    if (--steps_left_ > 0) return Status::Ok();
    return Advance();
  }
  // Call after the last step of every epoch.
  Status OnEpochEnd();
  // Gives every GPU back what it had (Knob::Restore); the profiler then
  // changes nothing (it keeps counting steps). Idempotent.
  Status Restore() { return knob_->Restore(); }

  Phase phase() const { return phase_; }
  // The settings of the sweep, highest first (skipped ones included).
  const std::vector<uint32_t>& settings() const { return settings_; }
  // The settings recorded without being visited (Knob::CanChangeAnything).
  const std::vector<uint32_t>& skipped() const { return skipped_; }
  // The measurements so far (skipped settings included once decided).
  const KnobProfile& profile() const { return profile_; }
  // The pinned setting once phase() is kDone.
  std::optional<uint32_t> optimum() const { return optimum_; }
  // The setting the current phase is about (waited for, warmed up at or
  // measured); the optimum once kDone.
  uint32_t phase_setting() const {
    return phase_ == Phase::kDone ? optimum_.value_or(current_) : settings_[next_];
  }
  // Step begins until the current phase ends or is looked at again (>= 1);
  // nullopt once kDone.
  std::optional<int64_t> steps_left() const {
    if (phase_ == Phase::kDone) return std::nullopt;
    return steps_left_;
  }
  // The setting last applied by us.
  uint32_t current_setting() const { return current_; }
  int64_t wait_steps() const { return wait_steps_; }
  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t measure_steps() const { return measure_steps_; }
  const Knob& knob() const { return *knob_; }

 private:
  JitProfiler(std::unique_ptr<Knob> knob, std::vector<uint32_t> settings, int num_gpus,
              EnergyMonitor* monitor, Clock* clock, JitProfilerOptions options);

  Status Advance();
  Status StartWarmup();
  Status StartMeasuring();
  Status MaybeEndMeasuring();
  // Records the settings after the highest one that cannot change anything.
  void SkipSettingsThatCannotChangeAnything(const KnobMeasurement& at_highest);
  Status Finish();
  // The knob's choice; on failure, retries at every step. REQUIRES: optimum_.
  Status PinOptimum();
  Status Apply(uint32_t setting);
  void FitToEpoch(int64_t epoch_steps);
  std::string WindowName() const { return knob_->WindowName(settings_[next_]); }

  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  const std::unique_ptr<Knob> knob_;
  const std::vector<uint32_t> settings_;
  const int num_gpus_;
  EnergyMonitor* const monitor_;
  Clock* const clock_;
  const JitProfilerOptions options_;
  const char* const log_;

  Phase phase_ = Phase::kWaiting;
  // Step begins until the current phase ends (the ending one included).
  int64_t steps_left_ = 0;
  int64_t steps_in_epoch_ = 0;
  bool saw_epoch_end_ = false;
  int64_t wait_steps_;
  int64_t warmup_steps_;
  int64_t measure_steps_;
  // Most measured steps a stretch may take (set after a short epoch).
  int64_t max_measured_steps_ = kNever;
  // Index in settings_ of the setting being profiled.
  size_t next_ = 0;
  std::chrono::nanoseconds measure_start_{0};
  int64_t measured_steps_ = 0;
  uint32_t current_ = 0;
  KnobProfile profile_;
  std::vector<uint32_t> skipped_;
  std::optional<uint32_t> optimum_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_JIT_JIT_PROFILER_H_
