#include "zeus/optimizer/power_limit/power_limit_restorer.h"

#include <spdlog/spdlog.h>

#include "src/optimizer/jit/signal_restore_service.h"

namespace zeus {

StatusOr<std::unique_ptr<PowerLimitRestorer>> PowerLimitRestorer::Create(std::vector<Gpu*> gpus,
                                                                         bool restore_on_signal) {
  std::vector<uint32_t> original_mw;
  for (Gpu* gpu : gpus) {
    if (gpu == nullptr) return InvalidArgumentError("power-limit restorer: null GPU");
    StatusOr<uint32_t> limit_mw = gpu->PowerLimitMw();
    if (!limit_mw.ok()) {
      return limit_mw.status().WithContext("power-limit restorer: reading the limit of GPU " +
                                           std::to_string(gpu->index()));
    }
    original_mw.push_back(*limit_mw);
  }
  std::unique_ptr<PowerLimitRestorer> restorer(
      new PowerLimitRestorer(std::move(gpus), std::move(original_mw)));
  if (restore_on_signal) {
    ZEUS_RETURN_IF_ERROR(internal::RegisterForSignalRestore(restorer.get()));
    restorer->registered_ = true;
  }
  return restorer;
}

PowerLimitRestorer::PowerLimitRestorer(std::vector<Gpu*> gpus,
                                       std::vector<uint32_t> original_limits_mw)
    : gpus_(std::move(gpus)), original_limits_mw_(std::move(original_limits_mw)) {}

PowerLimitRestorer::~PowerLimitRestorer() {
  Status s = Restore();
  if (!s.ok()) spdlog::error("power-limit restorer: {}", s.ToString());
  if (registered_) internal::UnregisterFromSignalRestore(this);
}

Status PowerLimitRestorer::Restore() {
  std::lock_guard<std::mutex> lock(mu_);
  if (restored_.load(std::memory_order_acquire)) return Status::Ok();
  Status first;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    // A GPU already at its original limit is left alone (no call needing
    // CAP_SYS_ADMIN); one whose limit cannot be read is set anyway.
    StatusOr<uint32_t> now_mw = gpus_[i]->PowerLimitMw();
    if (now_mw.ok() && *now_mw == original_limits_mw_[i]) continue;
    Status s = gpus_[i]->SetPowerLimitMw(original_limits_mw_[i]);
    if (!s.ok() && first.ok()) {
      first = s.WithContext("restoring GPU " + std::to_string(gpus_[i]->index()) + " to " +
                            std::to_string(original_limits_mw_[i]) + " mW");
    }
  }
  restored_.store(true, std::memory_order_release);
  return first;
}

}  // namespace zeus
