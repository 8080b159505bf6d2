// Gives GPUs back the power limits they had before Zeus touched them.
//
// A restorer records each GPU's management limit when created and sets it
// back on Restore(), on destruction (normal exit, or stack unwinding after an
// exception) and, when asked, on a fatal signal: SIGINT, SIGTERM, SIGHUP, and
// SIGABRT (which std::terminate raises for an uncaught exception).
//
// The signal path is Restorable's (restorable.h).
//
// Thread-safety: Restore() may be called concurrently with itself and with
// the signal path; restoration happens at most once.

#ifndef ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_RESTORER_H_
#define ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_RESTORER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/optimizer/jit/restorable.h"
#include "zeus/status.h"

namespace zeus {

class PowerLimitRestorer final : public Restorable {
 public:
  // Reads the current limit of every GPU in `gpus` (which must outlive the
  // restorer). With `restore_on_signal`, also installs the signal handlers
  // described above. Errors: the GPU's read error with its index as context;
  // kInternal when the signal pipe or thread cannot be created.
  static StatusOr<std::unique_ptr<PowerLimitRestorer>> Create(std::vector<Gpu*> gpus,
                                                              bool restore_on_signal);

  // Restores (logging a failure), then unregisters from the signal path.
  ~PowerLimitRestorer() override;
  PowerLimitRestorer(const PowerLimitRestorer&) = delete;
  PowerLimitRestorer& operator=(const PowerLimitRestorer&) = delete;

  // Sets every GPU whose limit differs from its recorded one back to it; the
  // first time only (later calls return OK and do nothing). Tries every GPU
  // even when one fails and returns the first error.
  Status Restore() override;

  // True once Restore() has run (by any path, even a failed one).
  bool restored() const { return restored_.load(std::memory_order_acquire); }

  // The limits recorded at creation, in mW, in the order of `gpus`.
  const std::vector<uint32_t>& original_limits_mw() const { return original_limits_mw_; }

 private:
  PowerLimitRestorer(std::vector<Gpu*> gpus, std::vector<uint32_t> original_limits_mw);

  const std::vector<Gpu*> gpus_;
  const std::vector<uint32_t> original_limits_mw_;
  std::mutex mu_;
  std::atomic<bool> restored_{false};
  bool registered_ = false;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_RESTORER_H_
