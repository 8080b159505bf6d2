// Just-in-time power-limit profiling during training.
//
// The training loop calls OnStepBegin() at the start of every step and
// OnEpochEnd() after the last step of every epoch. The optimizer then:
//  1. waits `wait_steps` steps at the maximum limit;
//  2. for each limit from the maximum down to the minimum (in
//     `power_limit_step_mw` steps, the last one clamped to the minimum), sets
//     it on every GPU, runs `warmup_steps` steps, then measures a stretch of
//     at least `measure_steps` steps, extended by whole steps until it spans
//     at least `min_measure_time` (the NVML energy counter moves only every
//     ~100 ms, so a stretch must last seconds for the counter's coarseness
//     not to decide the outcome);
//  3. selects the optimum from the profile (energy and time per step), sets
//     it on every GPU and saves the profile when `profile_path` is set.
// An epoch that ends during a warm-up or a measurement cancels it, sets the
// maximum limit, and that limit starts again from its warm-up after
// `wait_steps` steps of the next epoch. If the epoch just ended was too short
// to hold wait + warm-up + measurement, those are shrunk to fit (logged as a
// warning), and stretches are then capped at what fits in one epoch, even if
// that is under `min_measure_time`. Epochs of a single step cannot be
// profiled: the optimizer then keeps the maximum limit (logged). Epoch
// lengths are learned from complete epochs only: the first epoch end is not
// used, as the optimizer may have been created mid-epoch.
//
// With `profile_path` naming an existing profile (JSON or CSV log), the
// optimum is selected from it and set at creation: no profiling happens.
//
// Every limit change goes to all GPUs together. Data-parallel ranks reach
// the same decisions through `all_reduce` (see StretchTotals).
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
#include "zeus/optimizer/power_limit/power_limit_restorer.h"
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
// twice per limit).
using AllReduceFn = std::function<StatusOr<StretchTotals>(const StretchTotals& local)>;

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
  // once; otherwise the measured profile is saved there. Default: none.
  std::string profile_path;
  // Data-parallel hook (see AllReduceFn). Default: none (one process).
  AllReduceFn all_reduce;
  // Restore the original limits on SIGINT/SIGTERM/SIGHUP/SIGABRT. Default: on.
  bool restore_on_signal = true;
};

class PowerLimitOptimizer {
 public:
  enum class Phase { kWaiting, kWarmup, kMeasuring, kDone };

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
  ~PowerLimitOptimizer();
  PowerLimitOptimizer(const PowerLimitOptimizer&) = delete;
  PowerLimitOptimizer& operator=(const PowerLimitOptimizer&) = delete;

  // Call at the beginning of every training step. A step where no phase
  // ends costs a counter decrement (see bench/optimizer): a stretch too short
  // for min_measure_time is extended to the step the rate so far predicts,
  // and the clock is read again only there. Errors come from
  // setting limits, the monitor, the all-reduce hook or saving the profile;
  // after an error the optimizer stays usable in a consistent phase.
  Status OnStepBegin() {
    ++steps_in_epoch_;
    if (--steps_left_ > 0) return Status::Ok();
    return Advance();
  }

  // Call after the last step of every epoch.
  Status OnEpochEnd();

  // Gives every GPU its original limit back now; the optimizer then stops
  // changing limits (it keeps counting steps). Idempotent.
  Status Restore();

  Phase phase() const { return phase_; }
  // The limits profiled, in mW, from the maximum down.
  const std::vector<uint32_t>& power_limits_mw() const { return power_limits_mw_; }
  // The measurements so far (all of them once phase() is kDone, unless
  // profiling was skipped or given up).
  const PowerLimitProfile& profile() const { return profile_; }
  // The pinned limit once phase() is kDone.
  std::optional<uint32_t> optimum_mw() const { return optimum_mw_; }
  // The limit the current phase is about: waited for (kWaiting), warmed up at
  // (kWarmup) or measured (kMeasuring), in mW; the optimum once kDone.
  uint32_t phase_limit_mw() const {
    return phase_ == Phase::kDone ? optimum_mw_.value_or(current_limit_mw_)
                                  : power_limits_mw_[next_limit_];
  }
  // Step begins until the current phase ends or is looked at again (the
  // ending one included; >= 1); nullopt once kDone.
  std::optional<int64_t> steps_left() const {
    if (phase_ == Phase::kDone) return std::nullopt;
    return steps_left_;
  }
  // The limit of every GPU as last set by us, in mW.
  uint32_t current_power_limit_mw() const { return current_limit_mw_; }
  // Effective step counts after any shrinking for short epochs.
  int64_t wait_steps() const { return wait_steps_; }
  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t measure_steps() const { return measure_steps_; }

 private:
  PowerLimitOptimizer(std::vector<Gpu*> gpus, EnergyMonitor* monitor, Clock* clock,
                      PowerLimitOptimizerOptions options, std::vector<uint32_t> limits_mw,
                      std::unique_ptr<PowerLimitRestorer> restorer,
                      PowerLimitConstraints constraints);

  // The slow path of OnStepBegin: a phase ended at this step.
  Status Advance();
  Status StartWarmup();
  Status StartMeasuring();
  Status MaybeEndMeasuring();
  Status Finish();
  // The optimum of `profile` by the custom selector when set, else by
  // options_.selector, checked against the GPUs' constraints.
  StatusOr<uint32_t> SelectMw(const PowerLimitProfile& profile) const;
  // Sets the optimum; on failure, retries at every step. REQUIRES: optimum_mw_.
  Status PinOptimum();
  Status SetAllGpus(uint32_t power_limit_mw);
  // Shrinks wait/warm-up/measure steps so an epoch of `epoch_steps` steps can
  // hold one limit; caps stretches at what fits.
  void FitToEpoch(int64_t epoch_steps);
  std::string WindowName() const;

  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  const std::vector<Gpu*> gpus_;
  EnergyMonitor* const monitor_;
  Clock* const clock_;
  const PowerLimitOptimizerOptions options_;
  const std::vector<uint32_t> power_limits_mw_;
  std::unique_ptr<PowerLimitRestorer> restorer_;
  // The constraints every GPU shares.
  PowerLimitConstraints constraints_;

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
  // Index in power_limits_mw_ of the limit being profiled.
  size_t next_limit_ = 0;
  // Measuring: when the window began and how many steps it holds so far.
  std::chrono::nanoseconds measure_start_{0};
  int64_t measured_steps_ = 0;
  uint32_t current_limit_mw_ = 0;
  PowerLimitProfile profile_;
  std::optional<uint32_t> optimum_mw_;
};

// The limits profiled for `constraints`: max, max - step, ... while above
// min, then min. kInvalidArgument for step == 0 or min > max.
StatusOr<std::vector<uint32_t>> PowerLimitsToProfileMw(PowerLimitConstraints constraints,
                                                       uint32_t step_mw);

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_OPTIMIZER_H_
