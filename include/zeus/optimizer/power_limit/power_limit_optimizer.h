// Just-in-time power-limit profiling during training: the JIT profiler
// (zeus/optimizer/jit/jit_profiler.h, whose comment describes the steps,
// epochs and data parallelism) turning the power limit of every GPU, from the
// maximum down in `power_limit_step_mw` steps (the last one clamped to the
// minimum).
//
// A limit acts only when the GPU would draw more than it: once the maximum is
// measured, every limit at or above the measured mean draw per GPU x
// (1 + `nonbinding_margin`) is recorded with the maximum's measurement and not
// visited (the selectors break ties towards the higher limit, so the decision
// is the one a full sweep of such limits would reach).
//
// With `profile_path` naming an existing profile (JSON or CSV log), the
// optimum is selected from it and set at creation: no profiling happens.
//
// Creation sets a limit on every GPU (the maximum, or the saved optimum), so
// a missing CAP_SYS_ADMIN is reported by Create, before any training step.
// Each GPU gets its original limit back on Restore(), on destruction, and on
// SIGINT/SIGTERM/SIGHUP/SIGABRT (PowerLimitRestorer). With ZEUS_DRY_RUN set,
// the Gpu setters log instead of acting; measurement still happens.
//
// Thread-safety: not thread-safe. Call OnStepBegin/OnEpochEnd from one thread
// (the training loop); the signal path only uses the restorer.

#ifndef ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_OPTIMIZER_H_
#define ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_OPTIMIZER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/device/clock.h"
#include "zeus/device/gpu.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/jit/jit_profiler.h"
#include "zeus/optimizer/power_limit/power_limit_restorer.h"
#include "zeus/status.h"

namespace zeus {

// A selector of the caller's own (e.g. a Python OptimumSelector subclass).
// Called with the measured profile (validated; under data parallelism the
// all-reduced one, identical on every rank) when profiling ends, and with a
// saved profile at creation. Returns the limit to pin, in mW, which must lie
// within the GPUs' constraints (else the optimizer reports kInvalidArgument).
// Under data parallelism it is called on every rank at the same step, so it
// may itself be collective (e.g. to make the ranks agree); it must return the
// same limit on every rank.
using CustomSelectorFn = std::function<StatusOr<uint32_t>(const PowerLimitProfile& profile)>;

struct PowerLimitOptimizerOptions {
  // Steps run at the maximum limit before profiling starts, and at the start
  // of an epoch that resumes an interrupted limit. Default: 10.
  int64_t wait_steps = 10;
  // Steps run at a new limit before its measurement starts. Default: 10.
  int64_t warmup_steps = 10;
  // Fewest steps in a measured stretch (>= 1). Default: 40.
  int64_t measure_steps = 40;
  // A stretch is extended by whole steps until it spans at least this (>= 0).
  // Default: 3 s (30 updates of the NVML energy counter).
  std::chrono::nanoseconds min_measure_time = std::chrono::seconds(3);
  // Distance between profiled limits, in mW (> 0). Default: 25 W.
  uint32_t power_limit_step_mw = 25'000;
  // How to pick the optimum. Default: Zeus cost with eta 0.5.
  OptimumSelector selector = OptimumSelector::LeastCost(0.5);
  // When set, picks the optimum instead of `selector` (see CustomSelectorFn).
  // Default: none.
  CustomSelectorFn custom_selector;
  // When set: an existing profile there is loaded and its optimum pinned at
  // once; otherwise the measured profile is saved there, and Create refuses
  // a path that cannot be written (CheckProfileWritable: missing or
  // read-only directory), naming it, before any limit is set. Default: none.
  std::string profile_path;
  // Data-parallel hook (see AllReduceFn). Default: none (one process).
  AllReduceFn all_reduce;
  // Restore the original limits on SIGINT/SIGTERM/SIGHUP/SIGABRT. Default: on.
  bool restore_on_signal = true;
  // Record limits that cannot bind at the draw measured at the maximum as
  // equal to the maximum instead of profiling them. Default: on.
  bool skip_nonbinding_limits = true;
  // A limit binds when below the mean draw per GPU at the maximum x (1 +
  // this), the margin standing for bursts above the mean (>= 0). Default: 0.2.
  double nonbinding_margin = kDefaultNonbindingMargin;
};

class PowerLimitOptimizer {
 public:
  using Phase = JitProfiler::Phase;

  // Drives `gpus` (non-empty; all must report the same
  // PowerLimitConstraintsMw), measuring through `monitor`, whose GPUs must be
  // exactly `gpus` (same order); timing with `clock`. All must outlive the
  // optimizer. Errors: kInvalidArgument for bad options, GPUs with different
  // constraints, or a monitor over a different number of GPUs; the profile
  // file's error when it exists but cannot be used; kPermissionDenied (saying
  // what to do) when a limit cannot be set; device errors otherwise.
  static StatusOr<std::unique_ptr<PowerLimitOptimizer>> Create(std::vector<Gpu*> gpus,
                                                               EnergyMonitor* monitor, Clock* clock,
                                                               PowerLimitOptimizerOptions options);

  // Restores the original limits (errors are logged).
  ~PowerLimitOptimizer() = default;
  PowerLimitOptimizer(const PowerLimitOptimizer&) = delete;
  PowerLimitOptimizer& operator=(const PowerLimitOptimizer&) = delete;

  // Call at the beginning of every training step (JitProfiler::OnStepBegin:
  // a step where no phase ends costs a counter decrement).
  Status OnStepBegin() { return profiler_->OnStepBegin(); }
  // Call after the last step of every epoch.
  Status OnEpochEnd() { return profiler_->OnEpochEnd(); }
  // Gives every GPU its original limit back now; the optimizer then stops
  // changing limits (it keeps counting steps). Idempotent.
  Status Restore() { return profiler_->Restore(); }

  Phase phase() const { return profiler_->phase(); }
  // The limits of the sweep, in mW, from the maximum down.
  const std::vector<uint32_t>& power_limits_mw() const { return profiler_->settings(); }
  // The limits recorded as equal to the maximum without profiling, in mW.
  const std::vector<uint32_t>& skipped_power_limits_mw() const { return profiler_->skipped(); }
  // The measurements so far (all of them once phase() is kDone, unless
  // profiling was skipped or given up).
  // Valid until the next OnStepBegin/OnEpochEnd.
  const PowerLimitProfile& profile() const;
  // The pinned limit once phase() is kDone.
  std::optional<uint32_t> optimum_mw() const { return profiler_->optimum(); }
  // The limit the current phase is about: waited for (kWaiting), warmed up at
  // (kWarmup) or measured (kMeasuring), in mW; the optimum once kDone.
  uint32_t phase_limit_mw() const { return profiler_->phase_setting(); }
  // Step begins until the current phase ends or is looked at again (the
  // ending one included; >= 1); nullopt once kDone.
  std::optional<int64_t> steps_left() const { return profiler_->steps_left(); }
  // The limit of every GPU as last set by us, in mW.
  uint32_t current_power_limit_mw() const { return profiler_->current_setting(); }
  // Effective step counts after any shrinking for short epochs.
  int64_t wait_steps() const { return profiler_->wait_steps(); }
  int64_t warmup_steps() const { return profiler_->warmup_steps(); }
  int64_t measure_steps() const { return profiler_->measure_steps(); }
  // The state machine underneath, for what every knob reports alike.
  const JitProfiler& profiler() const { return *profiler_; }

 private:
  explicit PowerLimitOptimizer(std::unique_ptr<JitProfiler> profiler)
      : profiler_(std::move(profiler)) {}

  const std::unique_ptr<JitProfiler> profiler_;
  // profiler_->profile() in the power-limit form, refreshed by profile().
  mutable PowerLimitProfile profile_;
};

// The limits profiled for `constraints`: max, max - step, ... while above
// min, then min. kInvalidArgument for step == 0 or min > max.
StatusOr<std::vector<uint32_t>> PowerLimitsToProfileMw(PowerLimitConstraints constraints,
                                                       uint32_t step_mw);

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_OPTIMIZER_H_
