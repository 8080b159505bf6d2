// The zeus_gpus handle of the C ABI, shared by its GPU calls
// (zeus_c_devices.cc: reads, power limits, persistence, restore;
// zeus_c_clocks.cc: clock lists and locks). Not installed; not part of the
// ABI.

#ifndef ZEUS_PYTHON_ZEUS_C_GPUS_H_
#define ZEUS_PYTHON_ZEUS_C_GPUS_H_

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/optimizer/power_limit/power_limit_restorer.h"
#include "zeus/status.h"

#include "python/zeus_c_api.h"

struct zeus_gpus {
  std::vector<std::unique_ptr<zeus::Gpu>> gpus;
  // The core backend the GPUs came from ("nvml", "amdsmi"); "" when none.
  std::string backend;
  // Whether settings changed through this handle are put back when it is
  // restored or destroyed (zeus_gpus_open: true).
  bool restore_on_exit = true;
  // Created before the first power-limit change (restore_on_exit only):
  // records every GPU's limit then and sets it back on zeus_gpus_restore,
  // destruction or a fatal signal. Declared after `gpus`, so it is
  // destroyed (and restores) while the GPUs still live.
  std::unique_ptr<zeus::PowerLimitRestorer> restorer;
  // Per position: the persistence mode before this handle first changed it,
  // and whether this handle locked the graphics / memory clocks.
  std::vector<std::optional<bool>> original_persistence;
  std::vector<bool> gpu_clocks_locked;
  std::vector<bool> mem_clocks_locked;
  // Serialises the setters and Restore (the members above); the reads need
  // no lock (Gpu is thread-safe).
  std::mutex mu;
  // The process that opened the handle. A process forked from it (e.g. a
  // data-loader worker) inherits the handle but puts nothing back: the
  // changes are its parent's.
  pid_t owner_pid = getpid();

  // Puts back what this handle changed (see zeus_gpus_restore); tries every
  // GPU and returns the first error. REQUIRES: `mu` held.
  zeus::Status Restore();
  ~zeus_gpus();
};

namespace zeus::c_api {

// kInvalidArgument naming `fn` unless `gpus` is a handle with a GPU at
// `position`.
Status CheckGpuPosition(const char* fn, const zeus_gpus* gpus, int32_t position);

// Puts back the clock locks this handle made on GPU `position`
// (zeus_c_clocks.cc): zeus::UnlockClocks of each locked domain. Returns the
// first error. REQUIRES: `gpus->mu` held.
Status RestoreLockedClocks(zeus_gpus* gpus, size_t position);

}  // namespace zeus::c_api

#endif  // ZEUS_PYTHON_ZEUS_C_GPUS_H_
