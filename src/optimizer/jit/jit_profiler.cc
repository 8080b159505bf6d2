#include "zeus/optimizer/jit/jit_profiler.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "zeus/core/power_limit_profile.h"
#include "zeus/util/units.h"

namespace zeus {

Status JitProfiler::ValidateOptions(const JitProfilerOptions& o, const std::string& context) {
  auto bad = [&](const std::string& what) { return InvalidArgumentError(context + ": " + what); };
  if (o.wait_steps < 0) return bad("wait_steps must be >= 0, got " + std::to_string(o.wait_steps));
  if (o.warmup_steps < 0) {
    return bad("warmup_steps must be >= 0, got " + std::to_string(o.warmup_steps));
  }
  if (o.measure_steps < 1) {
    return bad("measure_steps must be >= 1, got " + std::to_string(o.measure_steps));
  }
  if (o.min_measure_time.count() < 0) {
    return bad("min_measure_time must be >= 0, got " +
               std::to_string(ToSeconds(o.min_measure_time)) + " s");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<JitProfiler>> JitProfiler::Create(std::unique_ptr<Knob> knob,
                                                           std::vector<uint32_t> settings,
                                                           int num_gpus, EnergyMonitor* monitor,
                                                           Clock* clock,
                                                           JitProfilerOptions options) {
  if (knob == nullptr) return InvalidArgumentError("JIT profiler: null knob");
  const std::string log = knob->LogContext();
  ZEUS_RETURN_IF_ERROR(ValidateOptions(options, log));
  if (monitor == nullptr || clock == nullptr) {
    return InvalidArgumentError(log + ": null monitor or clock");
  }
  if (num_gpus < 1) return InvalidArgumentError(log + ": no GPUs to drive");
  if (settings.empty()) return InvalidArgumentError(log + ": no settings to profile");
  for (size_t i = 1; i < settings.size(); ++i) {
    if (settings[i] >= settings[i - 1]) {
      return InvalidArgumentError(
          fmt::format("{}: settings must run from the highest down, got {} after {}", log,
                      knob->Format(settings[i]), knob->Format(settings[i - 1])));
    }
  }

  std::optional<KnobProfile> saved;
  if (!options.profile_path.empty()) {
    StatusOr<KnobProfile> loaded = knob->Load(options.profile_path);
    if (loaded.ok()) {
      saved = std::move(loaded).value();
    } else if (loaded.status().code() == StatusCode::kNotFound) {
      // Nothing saved yet: profiling will save there at its end, so a path
      // that cannot be written is refused now, not after the whole run.
      Status writable = CheckProfileWritable(options.profile_path);
      if (!writable.ok()) return writable.WithContext(log);
    } else {
      return loaded.status().WithContext(fmt::format(
          "{}: saved profile {} (delete it to profile again)", log, options.profile_path));
    }
  }

  std::unique_ptr<JitProfiler> p(new JitProfiler(std::move(knob), std::move(settings), num_gpus,
                                                 monitor, clock, std::move(options)));
  if (saved.has_value()) {
    StatusOr<uint32_t> selected = p->knob_->Select(*saved);
    if (!selected.ok()) {
      return selected.status().WithContext(
          fmt::format("{}: saved profile {}", log, p->options_.profile_path));
    }
    ZEUS_RETURN_IF_ERROR(p->Apply(*selected));
    spdlog::info("{}: loaded profile {}; pinned {} ({}) without profiling", log,
                 p->options_.profile_path, p->knob_->Format(*selected), p->knob_->SelectorName());
    p->profile_ = std::move(*saved);
    p->optimum_ = *selected;
    p->phase_ = Phase::kDone;
    p->steps_left_ = kNever;
    return p;
  }
  ZEUS_RETURN_IF_ERROR(p->Apply(p->settings_.front()));
  return p;
}

JitProfiler::JitProfiler(std::unique_ptr<Knob> knob, std::vector<uint32_t> settings, int num_gpus,
                         EnergyMonitor* monitor, Clock* clock, JitProfilerOptions options)
    : knob_(std::move(knob)),
      settings_(std::move(settings)),
      num_gpus_(num_gpus),
      monitor_(monitor),
      clock_(clock),
      options_(std::move(options)),
      log_(knob_->LogContext()),
      wait_steps_(options_.wait_steps),
      warmup_steps_(options_.warmup_steps),
      measure_steps_(options_.measure_steps) {
  steps_left_ = wait_steps_ + 1;
  profile_.num_gpus = num_gpus_;
  profile_.min_stretch_time_s = ToSeconds(options_.min_measure_time);
}

JitProfiler::~JitProfiler() {
  if (phase_ == Phase::kMeasuring) monitor_->Cancel(WindowName()).IgnoreError();
}

Status JitProfiler::Apply(uint32_t setting) {
  // After Restore() nothing is applied, and current_ keeps the last setting.
  if (knob_->restored()) return Status::Ok();
  ZEUS_RETURN_IF_ERROR(knob_->Set(setting));
  current_ = setting;
  return Status::Ok();
}

Status JitProfiler::Advance() {
  switch (phase_) {
    case Phase::kWaiting:
      return StartWarmup();
    case Phase::kWarmup:
      return StartMeasuring();
    case Phase::kMeasuring:
      return MaybeEndMeasuring();
    case Phase::kDone:
      return PinOptimum();
  }
  return Status::Ok();
}

Status JitProfiler::PinOptimum() {
  Status s = Apply(*optimum_);
  // Until it is applied, try again at every step: the GPUs would otherwise
  // stay at the last setting profiled, the lowest.
  steps_left_ = s.ok() ? kNever : 1;
  return s;
}

Status JitProfiler::StartWarmup() {
  Status s = Apply(settings_[next_]);
  if (!s.ok()) {
    steps_left_ = 1;  // Try again at the next step.
    return s;
  }
  phase_ = Phase::kWarmup;
  steps_left_ = warmup_steps_;
  if (warmup_steps_ == 0) return StartMeasuring();
  return Status::Ok();
}

Status JitProfiler::StartMeasuring() {
  Status s = monitor_->Begin(WindowName());
  if (!s.ok()) {
    steps_left_ = 1;
    return s.WithContext(log_);
  }
  phase_ = Phase::kMeasuring;
  measure_start_ = clock_->Now();
  measured_steps_ = steps_in_epoch_;  // Step begins before this stretch's first step ends.
  steps_left_ = measure_steps_;
  return Status::Ok();
}

Status JitProfiler::MaybeEndMeasuring() {
  int64_t measured = steps_in_epoch_ - measured_steps_;
  double elapsed_s = ToSeconds(clock_->Now() - measure_start_);
  if (options_.all_reduce) {
    // Every rank is here at the same step: decide on the slowest rank's time.
    StatusOr<StretchTotals> synced = options_.all_reduce(StretchTotals{0.0, elapsed_s, 0});
    if (!synced.ok()) {
      steps_left_ = 1;  // Every rank failed alike: try again at the next step.
      return synced.status().WithContext(std::string(log_) + ": all_reduce");
    }
    elapsed_s = synced->time_s;
  }
  // The clock counts whole nanoseconds.
  double min_s = ToSeconds(options_.min_measure_time) - 1e-9;
  if (elapsed_s < min_s && measured < max_measured_steps_) {
    // Too short: extend to the step the rate so far says reaches the minimum,
    // then look at the clock again, so the steps in between stay a decrement.
    double per_step_s = elapsed_s / static_cast<double>(measured);
    int64_t target = measured + 1;
    if (per_step_s > 0) {
      double estimate = std::ceil(min_s / per_step_s);
      if (estimate > static_cast<double>(target)) {
        target = estimate < 9e18 ? static_cast<int64_t>(estimate) : kNever;
      }
    }
    target = std::min(target, max_measured_steps_);
    steps_left_ = target - measured;
    return Status::Ok();
  }

  StatusOr<Measurement> m = monitor_->End(WindowName());
  if (!m.ok()) {
    // The window is closed: measure this setting again from its warm-up.
    phase_ = Phase::kWaiting;
    steps_left_ = 1;
    return m.status().WithContext(log_);
  }
  StretchTotals totals;
  totals.energy_j = m->TotalGpuEnergyJ();
  totals.time_s = m->time_s;
  totals.num_gpus = num_gpus_;
  if (options_.all_reduce) {
    StatusOr<StretchTotals> reduced = options_.all_reduce(totals);
    if (!reduced.ok()) {
      phase_ = Phase::kWaiting;
      steps_left_ = 1;
      return reduced.status().WithContext(std::string(log_) + ": all_reduce");
    }
    totals = *reduced;
  }
  KnobMeasurement km;
  km.setting = settings_[next_];
  km.energy_j = totals.energy_j;
  km.time_s = totals.time_s;
  km.steps = measured;
  profile_.num_gpus = totals.num_gpus;
  profile_.measurements.push_back(km);
  spdlog::info("{}: {}: {:.3f} J over {:.3f} s and {} steps ({:.3f} J and {:.4f} s per step)", log_,
               knob_->Format(km.setting), km.energy_j, km.time_s, km.steps, km.energy_per_step_j(),
               km.time_per_step_s());
  ++next_;
  if (next_ == 1) SkipSettingsThatCannotChangeAnything(km);
  if (next_ == settings_.size()) return Finish();
  phase_ = Phase::kWaiting;  // Until the next setting is applied.
  return StartWarmup();
}

void JitProfiler::SkipSettingsThatCannotChangeAnything(const KnobMeasurement& at_highest) {
  if (at_highest.time_s <= 0 || profile_.num_gpus < 1) return;
  const double draw_per_gpu_w =
      at_highest.energy_j / at_highest.time_s / static_cast<double>(profile_.num_gpus);
  while (next_ < settings_.size() && !knob_->CanChangeAnything(settings_[next_], draw_per_gpu_w)) {
    KnobMeasurement copy = at_highest;
    copy.setting = settings_[next_];
    profile_.measurements.push_back(copy);
    skipped_.push_back(settings_[next_]);
    ++next_;
  }
  if (skipped_.empty()) return;
  spdlog::info(
      "{}: each GPU draws {:.1f} W on average at {}: {} settings from {} to {} cannot change "
      "that and are recorded as equal to it without profiling",
      log_, draw_per_gpu_w, knob_->Format(at_highest.setting), skipped_.size(),
      knob_->Format(skipped_.front()), knob_->Format(skipped_.back()));
}

Status JitProfiler::Finish() {
  phase_ = Phase::kDone;
  steps_left_ = kNever;
  next_ = 0;
  StatusOr<uint32_t> optimum = knob_->Select(profile_);
  Status selection;
  if (optimum.ok()) {
    optimum_ = *optimum;
    spdlog::info("{}: profiled {} settings ({} of them skipped); pinning {} ({})", log_,
                 profile_.measurements.size(), skipped_.size(), knob_->Format(*optimum),
                 knob_->SelectorName());
  } else {
    // The GPUs must not stay at the lowest setting profiled: keep the highest.
    selection = optimum.status().WithContext(
        fmt::format("{}: selecting the optimum (keeping {}, {})", log_, knob_->HighestSettingName(),
                    knob_->Format(settings_.front())));
    spdlog::error("{}", selection.ToString());
    optimum_ = settings_.front();
  }
  Status pinned = PinOptimum();
  if (pinned.ok() && !selection.ok()) pinned = selection;
  if (!options_.profile_path.empty()) {
    Status s = knob_->Save(options_.profile_path, profile_);
    if (!s.ok()) {
      s = s.WithContext(fmt::format("{}: saving the profile", log_));
      spdlog::error("{}", s.ToString());
      if (pinned.ok()) return s;
    }
  }
  return pinned;
}

void JitProfiler::FitToEpoch(int64_t epoch_steps) {
  if (epoch_steps < 2) {
    spdlog::warn(
        "{}: an epoch of {} step(s) cannot hold a measured stretch; giving up "
        "profiling and keeping {}",
        log_, epoch_steps, knob_->Format(settings_.front()));
    phase_ = Phase::kDone;
    steps_left_ = kNever;
    optimum_ = settings_.front();
    return;
  }
  // One setting needs wait + warm-up + measured steps, plus the step begin
  // that ends the stretch.
  int64_t budget = epoch_steps - 1;
  int64_t total = wait_steps_ + warmup_steps_ + measure_steps_;
  if (total > budget) {
    double scale = static_cast<double>(budget) / static_cast<double>(total);
    int64_t measure = std::max<int64_t>(
        1, static_cast<int64_t>(std::floor(static_cast<double>(measure_steps_) * scale)));
    int64_t warmup = std::min<int64_t>(
        warmup_steps_,
        static_cast<int64_t>(std::floor(static_cast<double>(warmup_steps_) * scale)));
    warmup = std::min(warmup, budget - measure);
    int64_t wait = std::clamp<int64_t>(budget - measure - warmup, 0, wait_steps_);
    spdlog::warn(
        "{}: an epoch of {} steps cannot hold {} wait + {} warm-up + {} measured "
        "steps; shrinking them to {} + {} + {}",
        log_, epoch_steps, wait_steps_, warmup_steps_, measure_steps_, wait, warmup, measure);
    wait_steps_ = wait;
    warmup_steps_ = warmup;
    measure_steps_ = measure;
  }
  int64_t cap = budget - wait_steps_ - warmup_steps_;
  if (cap < max_measured_steps_) {
    spdlog::info(
        "{}: stretches are capped at {} steps to fit in one epoch, even if that is "
        "shorter than {} s",
        log_, cap, ToSeconds(options_.min_measure_time));
  }
  max_measured_steps_ = cap;
}

Status JitProfiler::OnEpochEnd() {
  int64_t epoch_steps = steps_in_epoch_;
  steps_in_epoch_ = 0;
  // The first epoch end may close an epoch the profiler joined midway: only
  // later ones tell the epoch length.
  bool complete_epoch = saw_epoch_end_;
  saw_epoch_end_ = true;
  switch (phase_) {
    case Phase::kDone:
      return Status::Ok();
    case Phase::kWaiting:
      // The wait did not finish within this epoch.
      if (complete_epoch && epoch_steps > 0) FitToEpoch(epoch_steps);
      if (phase_ != Phase::kDone) steps_left_ = wait_steps_ + 1;
      return Status::Ok();
    case Phase::kWarmup:
    case Phase::kMeasuring:
      break;
  }
  Status cancel;
  spdlog::info(
      "{}: the epoch ended during the {} of {}; it starts again from its warm-up in "
      "the next epoch",
      log_, phase_ == Phase::kWarmup ? "warm-up" : "measurement", knob_->Format(settings_[next_]));
  if (phase_ == Phase::kMeasuring) cancel = monitor_->Cancel(WindowName());
  phase_ = Phase::kWaiting;
  if (complete_epoch) FitToEpoch(epoch_steps);
  if (phase_ != Phase::kDone) steps_left_ = wait_steps_ + 1;
  ZEUS_RETURN_IF_ERROR(Apply(settings_.front()));
  if (!cancel.ok()) return cancel.WithContext(log_);
  return Status::Ok();
}

}  // namespace zeus
