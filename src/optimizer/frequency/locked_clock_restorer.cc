#include "zeus/optimizer/frequency/locked_clock_restorer.h"

#include <spdlog/spdlog.h>

#include "src/optimizer/jit/signal_restore_service.h"

namespace zeus {

StatusOr<std::unique_ptr<LockedClockRestorer>> LockedClockRestorer::Create(std::vector<Gpu*> gpus,
                                                                           bool restore_on_signal) {
  for (Gpu* gpu : gpus) {
    if (gpu == nullptr) return InvalidArgumentError("locked-clock restorer: null GPU");
  }
  std::unique_ptr<LockedClockRestorer> restorer(new LockedClockRestorer(std::move(gpus)));
  if (restore_on_signal) {
    ZEUS_RETURN_IF_ERROR(internal::RegisterForSignalRestore(restorer.get()));
    restorer->registered_ = true;
  }
  return restorer;
}

LockedClockRestorer::~LockedClockRestorer() {
  Status s = Restore();
  if (!s.ok()) spdlog::error("locked-clock restorer: {}", s.ToString());
  if (registered_) internal::UnregisterFromSignalRestore(this);
}

Status LockedClockRestorer::Restore() {
  std::lock_guard<std::mutex> lock(mu_);
  if (restored_.load(std::memory_order_acquire)) return Status::Ok();
  Status first;
  if (touched_.load(std::memory_order_acquire)) {
    for (Gpu* gpu : gpus_) {
      Status s = UnlockClocks(*gpu, /*memory=*/false);
      if (!s.ok() && first.ok()) {
        first =
            s.WithContext("unlocking the graphics clocks of GPU " + std::to_string(gpu->index()));
      }
    }
  }
  restored_.store(true, std::memory_order_release);
  return first;
}

}  // namespace zeus
