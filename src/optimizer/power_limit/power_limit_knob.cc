#include "src/optimizer/power_limit/power_limit_knob.h"

#include <fmt/format.h>

#include "zeus/core/power_limit_profile.h"
#include "zeus/util/units.h"

namespace zeus {

PowerLimitKnob::PowerLimitKnob(std::vector<Gpu*> gpus, std::unique_ptr<PowerLimitRestorer> restorer,
                               PowerLimitConstraints constraints,
                               const PowerLimitOptimizerOptions& options)
    : gpus_(std::move(gpus)),
      restorer_(std::move(restorer)),
      constraints_(constraints),
      selector_(options.selector),
      custom_selector_(options.custom_selector),
      nonbinding_margin_(options.skip_nonbinding_limits
                             ? std::optional<double>(options.nonbinding_margin)
                             : std::nullopt) {}

std::string PowerLimitKnob::Format(uint32_t power_limit_mw) const {
  return fmt::format("{} W", MwToW(power_limit_mw));
}

std::string PowerLimitKnob::WindowName(uint32_t power_limit_mw) const {
  return fmt::format("__GlobalPowerLimitOptimizer_{}", power_limit_mw / 1000);
}

Status PowerLimitKnob::Set(uint32_t power_limit_mw) {
  if (restorer_->restored()) return Status::Ok();
  for (Gpu* gpu : gpus_) {
    Status s = gpu->SetPowerLimitMw(power_limit_mw);
    if (s.code() == StatusCode::kPermissionDenied) {
      return PermissionDeniedError(fmt::format(
          "{}: setting GPU {}'s power limit to {} mW needs CAP_SYS_ADMIN ({}). Run as root, "
          "grant the capability (e.g. docker run --cap-add SYS_ADMIN, or sudo setcap "
          "cap_sys_admin+ep on the binary), or set ZEUS_DRY_RUN=1 to measure without "
          "changing limits",
          LogContext(), gpu->index(), power_limit_mw, s.message()));
    }
    if (!s.ok()) {
      return s.WithContext(
          fmt::format("{}: setting GPU {} to {} mW", LogContext(), gpu->index(), power_limit_mw));
    }
  }
  return Status::Ok();
}

bool PowerLimitKnob::CanChangeAnything(uint32_t power_limit_mw, double draw_per_gpu_w) const {
  if (!nonbinding_margin_.has_value()) return true;
  return PowerLimitCanBind(MwToW(power_limit_mw), draw_per_gpu_w, *nonbinding_margin_);
}

StatusOr<uint32_t> PowerLimitKnob::Select(const KnobProfile& knob_profile) const {
  const PowerLimitProfile profile = PowerLimitProfileOf(knob_profile);
  uint32_t mw = 0;
  if (custom_selector_) {
    ZEUS_RETURN_IF_ERROR(ValidateProfile(profile));
    ZEUS_ASSIGN_OR_RETURN(mw, custom_selector_(profile));
  } else {
    ZEUS_ASSIGN_OR_RETURN(mw, SelectOptimumMw(profile, selector_));
  }
  if (mw < constraints_.min_mw || mw > constraints_.max_mw) {
    return InvalidArgumentError(
        fmt::format("the {} selects {} mW, outside the GPUs' range [{}, {}] mW",
                    custom_selector_ ? "custom optimum selector" : "optimum selector", mw,
                    constraints_.min_mw, constraints_.max_mw));
  }
  return mw;
}

std::string PowerLimitKnob::SelectorName() const {
  return custom_selector_ ? "custom selector" : selector_.ToString();
}

StatusOr<KnobProfile> PowerLimitKnob::Load(const std::string& path) const {
  ZEUS_ASSIGN_OR_RETURN(PowerLimitProfile profile, LoadProfile(path));
  return ToKnobProfile(profile);
}

Status PowerLimitKnob::Save(const std::string& path, const KnobProfile& profile) const {
  return SaveProfile(path, PowerLimitProfileOf(profile));
}

}  // namespace zeus
