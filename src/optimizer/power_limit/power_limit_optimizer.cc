#include "zeus/optimizer/power_limit/power_limit_optimizer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "zeus/util/units.h"

namespace zeus {
namespace {

constexpr char kLog[] = "power-limit optimizer";

Status ValidateOptions(const PowerLimitOptimizerOptions& o) {
  auto bad = [](const std::string& what) {
    return InvalidArgumentError(std::string(kLog) + ": " + what);
  };
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
  if (o.power_limit_step_mw == 0) return bad("power_limit_step_mw must be > 0");
  Status s = ValidateSelector(o.selector);
  if (!s.ok()) return s.WithContext(kLog);
  return Status::Ok();
}

std::string Watts(uint32_t power_limit_mw) { return fmt::format("{} W", MwToW(power_limit_mw)); }

}  // namespace

StatusOr<std::vector<uint32_t>> PowerLimitsToProfileMw(PowerLimitConstraints constraints,
                                                       uint32_t step_mw) {
  if (step_mw == 0) return InvalidArgumentError("power limits: step must be > 0 mW");
  if (constraints.min_mw > constraints.max_mw || constraints.max_mw == 0) {
    return InvalidArgumentError("power limits: bad constraints [" +
                                std::to_string(constraints.min_mw) + ", " +
                                std::to_string(constraints.max_mw) + "] mW");
  }
  std::vector<uint32_t> limits;
  for (uint64_t mw = constraints.max_mw; mw > constraints.min_mw; mw -= step_mw) {
    limits.push_back(static_cast<uint32_t>(mw));
    if (mw < step_mw) break;
  }
  limits.push_back(constraints.min_mw);
  return limits;
}

StatusOr<std::unique_ptr<PowerLimitOptimizer>> PowerLimitOptimizer::Create(
    std::vector<Gpu*> gpus, EnergyMonitor* monitor, Clock* clock,
    PowerLimitOptimizerOptions options) {
  ZEUS_RETURN_IF_ERROR(ValidateOptions(options));
  if (gpus.empty()) return InvalidArgumentError(std::string(kLog) + ": no GPUs to drive");
  if (monitor == nullptr || clock == nullptr) {
    return InvalidArgumentError(std::string(kLog) + ": null monitor or clock");
  }
  for (Gpu* gpu : gpus) {
    if (gpu == nullptr) return InvalidArgumentError(std::string(kLog) + ": null GPU");
  }
  size_t monitored = monitor->GpusIntegratingPower().size();
  if (monitored != gpus.size()) {
    return InvalidArgumentError(fmt::format(
        "{}: the energy monitor measures {} GPUs but the optimizer drives {}; give both the "
        "same GPUs",
        kLog, monitored, gpus.size()));
  }
  StatusOr<PowerLimitConstraints> first = gpus[0]->PowerLimitConstraintsMw();
  if (!first.ok()) {
    return first.status().WithContext(fmt::format("{}: GPU {}", kLog, gpus[0]->index()));
  }
  for (size_t i = 1; i < gpus.size(); ++i) {
    StatusOr<PowerLimitConstraints> c = gpus[i]->PowerLimitConstraintsMw();
    if (!c.ok()) return c.status().WithContext(fmt::format("{}: GPU {}", kLog, gpus[i]->index()));
    if (c->min_mw != first->min_mw || c->max_mw != first->max_mw) {
      return InvalidArgumentError(fmt::format(
          "{}: GPU {} accepts limits [{}, {}] mW but GPU {} accepts [{}, {}] mW; all GPUs one "
          "optimizer drives must share the same power-limit constraints",
          kLog, gpus[i]->index(), c->min_mw, c->max_mw, gpus[0]->index(), first->min_mw,
          first->max_mw));
    }
  }
  StatusOr<std::vector<uint32_t>> limits =
      PowerLimitsToProfileMw(*first, options.power_limit_step_mw);
  if (!limits.ok()) return limits.status().WithContext(kLog);

  std::optional<PowerLimitProfile> saved;
  if (!options.profile_path.empty()) {
    StatusOr<PowerLimitProfile> loaded = LoadProfile(options.profile_path);
    if (loaded.ok()) {
      saved = std::move(loaded).value();
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      return loaded.status().WithContext(fmt::format(
          "{}: saved profile {} (delete it to profile again)", kLog, options.profile_path));
    }
  }

  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<PowerLimitRestorer> restorer,
                        PowerLimitRestorer::Create(gpus, options.restore_on_signal));
  std::unique_ptr<PowerLimitOptimizer> opt(
      new PowerLimitOptimizer(std::move(gpus), monitor, clock, std::move(options),
                              std::move(limits).value(), std::move(restorer), *first));

  if (saved.has_value()) {
    StatusOr<uint32_t> selected = opt->SelectMw(*saved);
    if (!selected.ok()) {
      return selected.status().WithContext(
          fmt::format("{}: saved profile {}", kLog, opt->options_.profile_path));
    }
    const uint32_t optimum_mw = *selected;
    ZEUS_RETURN_IF_ERROR(opt->SetAllGpus(optimum_mw));
    spdlog::info(
        "{}: loaded profile {}; pinned {} ({}) without profiling", kLog, opt->options_.profile_path,
        Watts(optimum_mw),
        opt->options_.custom_selector ? "custom selector" : opt->options_.selector.ToString());
    opt->profile_ = std::move(*saved);
    opt->optimum_mw_ = optimum_mw;
    opt->phase_ = Phase::kDone;
    opt->steps_left_ = kNever;
    return opt;
  }
  ZEUS_RETURN_IF_ERROR(opt->SetAllGpus(opt->power_limits_mw_.front()));
  return opt;
}

PowerLimitOptimizer::PowerLimitOptimizer(std::vector<Gpu*> gpus, EnergyMonitor* monitor,
                                         Clock* clock, PowerLimitOptimizerOptions options,
                                         std::vector<uint32_t> limits_mw,
                                         std::unique_ptr<PowerLimitRestorer> restorer,
                                         PowerLimitConstraints constraints)
    : gpus_(std::move(gpus)),
      monitor_(monitor),
      clock_(clock),
      options_(std::move(options)),
      power_limits_mw_(std::move(limits_mw)),
      restorer_(std::move(restorer)),
      constraints_(constraints),
      wait_steps_(options_.wait_steps),
      warmup_steps_(options_.warmup_steps),
      measure_steps_(options_.measure_steps) {
  steps_left_ = wait_steps_ + 1;
  profile_.num_gpus = static_cast<int>(gpus_.size());
  profile_.min_stretch_time_s = ToSeconds(options_.min_measure_time);
}

PowerLimitOptimizer::~PowerLimitOptimizer() {
  if (phase_ == Phase::kMeasuring) monitor_->Cancel(WindowName()).IgnoreError();
  // restorer_'s destructor gives the GPUs back.
}

std::string PowerLimitOptimizer::WindowName() const {
  return fmt::format("__GlobalPowerLimitOptimizer_{}", power_limits_mw_[next_limit_] / 1000);
}

Status PowerLimitOptimizer::Restore() { return restorer_->Restore(); }

Status PowerLimitOptimizer::SetAllGpus(uint32_t power_limit_mw) {
  if (restorer_->restored()) return Status::Ok();
  for (Gpu* gpu : gpus_) {
    Status s = gpu->SetPowerLimitMw(power_limit_mw);
    if (s.code() == StatusCode::kPermissionDenied) {
      return PermissionDeniedError(fmt::format(
          "{}: setting GPU {}'s power limit to {} mW needs CAP_SYS_ADMIN ({}). Run as root, "
          "grant the capability (e.g. docker run --cap-add SYS_ADMIN, or sudo setcap "
          "cap_sys_admin+ep on the binary), or set ZEUS_DRY_RUN=1 to measure without "
          "changing limits",
          kLog, gpu->index(), power_limit_mw, s.message()));
    }
    if (!s.ok()) {
      return s.WithContext(
          fmt::format("{}: setting GPU {} to {} mW", kLog, gpu->index(), power_limit_mw));
    }
  }
  current_limit_mw_ = power_limit_mw;
  return Status::Ok();
}

Status PowerLimitOptimizer::Advance() {
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

Status PowerLimitOptimizer::PinOptimum() {
  Status s = SetAllGpus(*optimum_mw_);
  // Until it is set, try again at every step: the GPUs would otherwise stay
  // at the last limit profiled, the lowest.
  steps_left_ = s.ok() ? kNever : 1;
  return s;
}

Status PowerLimitOptimizer::StartWarmup() {
  uint32_t limit_mw = power_limits_mw_[next_limit_];
  Status s = SetAllGpus(limit_mw);
  if (!s.ok()) {
    // Try again at the next step.
    steps_left_ = 1;
    return s;
  }
  phase_ = Phase::kWarmup;
  steps_left_ = warmup_steps_;
  if (warmup_steps_ == 0) return StartMeasuring();
  return Status::Ok();
}

Status PowerLimitOptimizer::StartMeasuring() {
  Status s = monitor_->Begin(WindowName());
  if (!s.ok()) {
    steps_left_ = 1;
    return s.WithContext(kLog);
  }
  phase_ = Phase::kMeasuring;
  measure_start_ = clock_->Now();
  measured_steps_ = steps_in_epoch_;  // Step begins before this stretch's first step ends.
  steps_left_ = measure_steps_;
  return Status::Ok();
}

Status PowerLimitOptimizer::MaybeEndMeasuring() {
  int64_t measured = steps_in_epoch_ - measured_steps_;
  double elapsed_s = ToSeconds(clock_->Now() - measure_start_);
  if (options_.all_reduce) {
    // Every rank is here at the same step: decide on the slowest rank's time.
    StatusOr<StretchTotals> synced = options_.all_reduce(StretchTotals{0.0, elapsed_s, 0});
    if (!synced.ok()) {
      steps_left_ = 1;  // Every rank failed alike: try again at the next step.
      return synced.status().WithContext(std::string(kLog) + ": all_reduce");
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
    // The window is closed: measure this limit again from its warm-up.
    phase_ = Phase::kWaiting;
    steps_left_ = 1;
    return m.status().WithContext(kLog);
  }
  StretchTotals totals;
  totals.energy_j = m->TotalGpuEnergyJ();
  totals.time_s = m->time_s;
  totals.num_gpus = static_cast<int>(gpus_.size());
  if (options_.all_reduce) {
    StatusOr<StretchTotals> reduced = options_.all_reduce(totals);
    if (!reduced.ok()) {
      phase_ = Phase::kWaiting;
      steps_left_ = 1;
      return reduced.status().WithContext(std::string(kLog) + ": all_reduce");
    }
    totals = *reduced;
  }
  PowerLimitMeasurement pm;
  pm.power_limit_mw = power_limits_mw_[next_limit_];
  pm.energy_j = totals.energy_j;
  pm.time_s = totals.time_s;
  pm.steps = measured;
  profile_.num_gpus = totals.num_gpus;
  profile_.measurements.push_back(pm);
  spdlog::info("{}: {}: {:.3f} J over {:.3f} s and {} steps ({:.3f} J and {:.4f} s per step)", kLog,
               Watts(pm.power_limit_mw), pm.energy_j, pm.time_s, pm.steps, pm.energy_per_step_j(),
               pm.time_per_step_s());
  ++next_limit_;
  if (next_limit_ == power_limits_mw_.size()) return Finish();
  phase_ = Phase::kWaiting;  // Until the next limit is set.
  return StartWarmup();
}

Status PowerLimitOptimizer::Finish() {
  phase_ = Phase::kDone;
  steps_left_ = kNever;
  next_limit_ = 0;
  StatusOr<uint32_t> optimum = SelectMw(profile_);
  Status selection;
  if (optimum.ok()) {
    optimum_mw_ = *optimum;
    spdlog::info("{}: profiled {} limits; pinning {} ({})", kLog, profile_.measurements.size(),
                 Watts(*optimum),
                 options_.custom_selector ? "custom selector" : options_.selector.ToString());
  } else {
    // The GPUs must not stay at the lowest limit profiled: keep the maximum.
    selection = optimum.status().WithContext(
        fmt::format("{}: selecting the optimum (keeping the maximum limit, {})", kLog,
                    Watts(power_limits_mw_.front())));
    spdlog::error("{}", selection.ToString());
    optimum_mw_ = power_limits_mw_.front();
  }
  Status pinned = PinOptimum();
  if (pinned.ok() && !selection.ok()) pinned = selection;
  if (!options_.profile_path.empty()) {
    Status s = SaveProfile(options_.profile_path, profile_);
    if (!s.ok()) {
      s = s.WithContext(fmt::format("{}: saving the profile", kLog));
      spdlog::error("{}", s.ToString());
      if (pinned.ok()) return s;
    }
  }
  return pinned;
}

StatusOr<uint32_t> PowerLimitOptimizer::SelectMw(const PowerLimitProfile& profile) const {
  uint32_t mw = 0;
  if (options_.custom_selector) {
    ZEUS_RETURN_IF_ERROR(ValidateProfile(profile));
    ZEUS_ASSIGN_OR_RETURN(mw, options_.custom_selector(profile));
  } else {
    ZEUS_ASSIGN_OR_RETURN(mw, SelectOptimumMw(profile, options_.selector));
  }
  if (mw < constraints_.min_mw || mw > constraints_.max_mw) {
    return InvalidArgumentError(
        fmt::format("the {} selects {} mW, outside the GPUs' range [{}, {}] mW",
                    options_.custom_selector ? "custom optimum selector" : "optimum selector", mw,
                    constraints_.min_mw, constraints_.max_mw));
  }
  return mw;
}

void PowerLimitOptimizer::FitToEpoch(int64_t epoch_steps) {
  if (epoch_steps < 2) {
    spdlog::warn(
        "{}: an epoch of {} step(s) cannot hold a measured stretch; giving up "
        "profiling and keeping {}",
        kLog, epoch_steps, Watts(power_limits_mw_.front()));
    phase_ = Phase::kDone;
    steps_left_ = kNever;
    optimum_mw_ = power_limits_mw_.front();
    return;
  }
  // One limit needs wait + warm-up + measured steps, plus the step begin that
  // ends the stretch.
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
        kLog, epoch_steps, wait_steps_, warmup_steps_, measure_steps_, wait, warmup, measure);
    wait_steps_ = wait;
    warmup_steps_ = warmup;
    measure_steps_ = measure;
  }
  int64_t cap = budget - wait_steps_ - warmup_steps_;
  if (cap < max_measured_steps_) {
    spdlog::info(
        "{}: stretches are capped at {} steps to fit in one epoch, even if that is "
        "shorter than {} s",
        kLog, cap, ToSeconds(options_.min_measure_time));
  }
  max_measured_steps_ = cap;
}

Status PowerLimitOptimizer::OnEpochEnd() {
  int64_t epoch_steps = steps_in_epoch_;
  steps_in_epoch_ = 0;
  // The first epoch end may close an epoch the optimizer joined midway: only
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
      kLog, phase_ == Phase::kWarmup ? "warm-up" : "measurement",
      Watts(power_limits_mw_[next_limit_]));
  if (phase_ == Phase::kMeasuring) cancel = monitor_->Cancel(WindowName());
  phase_ = Phase::kWaiting;
  if (complete_epoch) FitToEpoch(epoch_steps);
  if (phase_ != Phase::kDone) steps_left_ = wait_steps_ + 1;
  ZEUS_RETURN_IF_ERROR(SetAllGpus(power_limits_mw_.front()));
  if (!cancel.ok()) return cancel.WithContext(kLog);
  return Status::Ok();
}

}  // namespace zeus
