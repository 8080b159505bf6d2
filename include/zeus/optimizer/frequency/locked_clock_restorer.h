// Gives GPUs back unlocked graphics clocks after Zeus locked them.
//
// NVML cannot report a locked range, so "unlocked" is the one state to come
// back to: a GPU the restorer was told about (Touched) is unlocked with
// UnlockClocks (gpu.h: ResetGpuLockedClocks(), or the whole range where the
// backend cannot reset one domain) on Restore(), on destruction and, when
// asked, on a fatal signal (restorable.h describes the signal path). GPUs never touched
// are left alone (no call needing privileges).
//
// Thread-safety: Touched() and Restore() may be called from any thread;
// restoration happens at most once.

#ifndef ZEUS_OPTIMIZER_FREQUENCY_LOCKED_CLOCK_RESTORER_H_
#define ZEUS_OPTIMIZER_FREQUENCY_LOCKED_CLOCK_RESTORER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/optimizer/jit/restorable.h"
#include "zeus/status.h"

namespace zeus {

class LockedClockRestorer final : public Restorable {
 public:
  // `gpus` must outlive the restorer. With `restore_on_signal`, registers
  // with the signal path. kInternal when the signal path cannot start.
  static StatusOr<std::unique_ptr<LockedClockRestorer>> Create(std::vector<Gpu*> gpus,
                                                               bool restore_on_signal);
  // Restores (logging a failure), then unregisters from the signal path.
  ~LockedClockRestorer() override;
  LockedClockRestorer(const LockedClockRestorer&) = delete;
  LockedClockRestorer& operator=(const LockedClockRestorer&) = delete;

  // Records that the clocks of every GPU are (about to be) locked. Call
  // before locking, so that a signal in between still unlocks them.
  void Touched() { touched_.store(true, std::memory_order_release); }
  // Unlocks every GPU once touched; the first time only. Tries every GPU
  // and returns the first error.
  Status Restore() override;
  bool restored() const { return restored_.load(std::memory_order_acquire); }

 private:
  explicit LockedClockRestorer(std::vector<Gpu*> gpus) : gpus_(std::move(gpus)) {}

  const std::vector<Gpu*> gpus_;
  std::mutex mu_;
  std::atomic<bool> touched_{false};
  std::atomic<bool> restored_{false};
  bool registered_ = false;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_FREQUENCY_LOCKED_CLOCK_RESTORER_H_
