#include "src/optimizer/frequency/sm_clock_knob.h"

#include <fmt/format.h>

#include "zeus/core/frequency_profile.h"

namespace zeus {

SmClockKnob::SmClockKnob(std::vector<Gpu*> gpus, std::unique_ptr<LockedClockRestorer> restorer,
                         uint32_t min_mhz, uint32_t max_mhz, uint32_t max_power_limit_mw,
                         OptimumSelector selector)
    : gpus_(std::move(gpus)),
      restorer_(std::move(restorer)),
      min_mhz_(min_mhz),
      max_mhz_(max_mhz),
      max_power_limit_mw_(max_power_limit_mw),
      selector_(selector) {}

std::string SmClockKnob::Format(uint32_t mhz) const { return fmt::format("{} MHz", mhz); }

std::string SmClockKnob::WindowName(uint32_t mhz) const {
  return fmt::format("__GlobalFrequencyOptimizer_{}", mhz);
}

Status SmClockKnob::Set(uint32_t mhz) {
  if (restorer_->restored()) return Status::Ok();
  restorer_->Touched();
  for (Gpu* gpu : gpus_) {
    Status s = gpu->SetGpuLockedClocksMhz(mhz, mhz);
    if (s.code() == StatusCode::kPermissionDenied) {
      return PermissionDeniedError(fmt::format(
          "{}: locking GPU {}'s graphics clock to {} MHz needs root ({}). Run as root, relay "
          "through the Zeus daemon (ZEUSD_SOCK_PATH; its lease unlocks the clocks when the "
          "process ends), or set ZEUS_DRY_RUN=1 to measure without changing clocks",
          LogContext(), gpu->index(), mhz, s.message()));
    }
    if (!s.ok()) {
      return s.WithContext(
          fmt::format("{}: locking GPU {} to {} MHz", LogContext(), gpu->index(), mhz));
    }
  }
  return Status::Ok();
}

StatusOr<uint32_t> SmClockKnob::Select(const KnobProfile& profile) const {
  ZEUS_ASSIGN_OR_RETURN(
      uint32_t mhz, SelectOptimumMhz(FrequencyProfile{profile, max_power_limit_mw_}, selector_));
  if (mhz < min_mhz_ || mhz > max_mhz_) {
    return InvalidArgumentError(fmt::format(
        "the optimum selector selects {} MHz, outside the GPUs' supported clocks [{}, {}] MHz", mhz,
        min_mhz_, max_mhz_));
  }
  return mhz;
}

StatusOr<KnobProfile> SmClockKnob::Load(const std::string& path) const {
  ZEUS_ASSIGN_OR_RETURN(FrequencyProfile saved, LoadFrequencyProfile(path));
  return saved.profile;
}

Status SmClockKnob::Save(const std::string& path, const KnobProfile& profile) const {
  return SaveFrequencyProfile(path, FrequencyProfile{profile, max_power_limit_mw_});
}

}  // namespace zeus
