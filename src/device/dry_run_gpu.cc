#include "src/device/dry_run_gpu.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "zeus/util/env.h"
#include "zeus/util/units.h"

namespace zeus {

DryRunGpu::DryRunGpu(std::unique_ptr<Gpu> inner, std::string context)
    : GpuDecorator(std::move(inner)), context_(std::move(context)) {}

Status DryRunGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  if (!IsDryRun()) return inner().SetPowerLimitMw(power_limit_mw);
  StatusOr<PowerLimitConstraints> constraints = inner().PowerLimitConstraintsMw();
  if (constraints.ok() &&
      (power_limit_mw < constraints->min_mw || power_limit_mw > constraints->max_mw)) {
    return InvalidArgumentError(context_ + ": power limit " + std::to_string(power_limit_mw) +
                                " mW: outside the allowed range [" +
                                std::to_string(constraints->min_mw) + ", " +
                                std::to_string(constraints->max_mw) + "] mW");
  }
  StatusOr<uint32_t> current_mw = inner().PowerLimitMw();
  spdlog::info(
      "ZEUS_DRY_RUN: would set the power limit of {} to {:.1f} W (now {}); device "
      "left untouched",
      context_, MwToW(power_limit_mw),
      current_mw.ok() ? fmt::format("{:.1f} W", MwToW(*current_mw)) : "unknown");
  return Status::Ok();
}

Status DryRunGpu::SetPersistenceMode(bool enabled) {
  if (!IsDryRun()) return inner().SetPersistenceMode(enabled);
  spdlog::info("ZEUS_DRY_RUN: would {} persistence mode of {}; device left untouched",
               enabled ? "enable" : "disable", context_);
  return Status::Ok();
}

Status DryRunGpu::LogLockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz) {
  const std::string domain = memory ? "memory" : "graphics";
  const std::string range = std::to_string(min_mhz) + "-" + std::to_string(max_mhz) + " MHz";
  if (lock && min_mhz > max_mhz) {
    return InvalidArgumentError(context_ + ": locked " + domain + " clocks " + range +
                                ": min above max");
  }
  spdlog::info("ZEUS_DRY_RUN: would {} the {} clocks of {}; device left untouched",
               lock ? "lock to " + range : "unlock", domain, context_);
  return Status::Ok();
}

Status DryRunGpu::SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  if (!IsDryRun()) return inner().SetGpuLockedClocksMhz(min_mhz, max_mhz);
  return LogLockedClocks(false, true, min_mhz, max_mhz);
}

Status DryRunGpu::ResetGpuLockedClocks() {
  // A backend that resets no single domain refuses without touching anything.
  if (!IsDryRun() || !inner().CanResetOneClockDomain()) return inner().ResetGpuLockedClocks();
  return LogLockedClocks(false, false, 0, 0);
}

Status DryRunGpu::SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  if (!IsDryRun()) return inner().SetMemoryLockedClocksMhz(min_mhz, max_mhz);
  return LogLockedClocks(true, true, min_mhz, max_mhz);
}

Status DryRunGpu::ResetMemoryLockedClocks() {
  if (!IsDryRun() || !inner().CanResetOneClockDomain()) return inner().ResetMemoryLockedClocks();
  return LogLockedClocks(true, false, 0, 0);
}

}  // namespace zeus
