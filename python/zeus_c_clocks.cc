// The C ABI's clock calls on a zeus_gpus handle: the supported memory and
// graphics clocks, locking and unlocking them, and putting the locks back
// (RestoreLockedClocks, for zeus_gpus::Restore).

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "zeus/util/env.h"

#include "python/zeus_c_gpus.h"
#include "python/zeus_c_internal.h"

namespace zeus::c_api {
namespace {

// The clock list `read` returns, copied out with the buffer convention of
// zeus_c_api.h.
template <typename Read>
Status CopyClocks(const char* fn, zeus_gpus* gpus, int32_t position, uint32_t* clocks_mhz,
                  size_t capacity, size_t* count, Read read) {
  ZEUS_RETURN_IF_ERROR(CheckGpuPosition(fn, gpus, position));
  if (count == nullptr) return InvalidArgumentError(std::string(fn) + ": count is NULL");
  if (clocks_mhz == nullptr && capacity > 0) {
    return InvalidArgumentError(std::string(fn) + ": clocks_mhz is NULL");
  }
  ZEUS_ASSIGN_OR_RETURN(std::vector<uint32_t> clocks, read(*gpus->gpus[position]));
  *count = clocks.size();
  std::copy_n(clocks.begin(), std::min(capacity, clocks.size()), clocks_mhz);
  return Status::Ok();
}

}  // namespace

Status RestoreLockedClocks(zeus_gpus* gpus, size_t position) {
  Status first;
  if (position < gpus->gpu_clocks_locked.size() && gpus->gpu_clocks_locked[position]) {
    Status s = UnlockClocks(*gpus->gpus[position], /*memory=*/false);
    if (!s.ok()) first = s.WithContext("zeus.device: unlocking graphics clocks");
    gpus->gpu_clocks_locked[position] = false;
  }
  if (position < gpus->mem_clocks_locked.size() && gpus->mem_clocks_locked[position]) {
    Status s = UnlockClocks(*gpus->gpus[position], /*memory=*/true);
    if (!s.ok() && first.ok()) first = s.WithContext("zeus.device: unlocking memory clocks");
    gpus->mem_clocks_locked[position] = false;
  }
  return first;
}

}  // namespace zeus::c_api

extern "C" {

int32_t zeus_gpus_set_locked_clocks(zeus_gpus* gpus, int32_t position, int32_t memory,
                                    uint32_t min_mhz, uint32_t max_mhz, char* message,
                                    size_t message_size) {
  return zeus::c_api::Guard(
      [&]() -> zeus::Status {
        ZEUS_RETURN_IF_ERROR(
            zeus::c_api::CheckGpuPosition("zeus_gpus_set_locked_clocks", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        zeus::Gpu* gpu = gpus->gpus[position].get();
        const bool record = gpus->restore_on_exit && !zeus::IsDryRun();
        if (memory != 0) {
          ZEUS_RETURN_IF_ERROR(gpu->SetMemoryLockedClocksMhz(min_mhz, max_mhz));
          if (record) gpus->mem_clocks_locked[position] = true;
        } else {
          ZEUS_RETURN_IF_ERROR(gpu->SetGpuLockedClocksMhz(min_mhz, max_mhz));
          if (record) gpus->gpu_clocks_locked[position] = true;
        }
        return zeus::Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_reset_locked_clocks(zeus_gpus* gpus, int32_t position, int32_t memory,
                                      char* message, size_t message_size) {
  return zeus::c_api::Guard(
      [&]() -> zeus::Status {
        ZEUS_RETURN_IF_ERROR(
            zeus::c_api::CheckGpuPosition("zeus_gpus_reset_locked_clocks", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        zeus::Gpu* gpu = gpus->gpus[position].get();
        if (memory != 0) {
          ZEUS_RETURN_IF_ERROR(gpu->ResetMemoryLockedClocks());
          gpus->mem_clocks_locked[position] = false;
        } else {
          ZEUS_RETURN_IF_ERROR(gpu->ResetGpuLockedClocks());
          gpus->gpu_clocks_locked[position] = false;
        }
        return zeus::Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_unlock_clocks(zeus_gpus* gpus, int32_t position, int32_t memory, char* message,
                                size_t message_size) {
  return zeus::c_api::Guard(
      [&]() -> zeus::Status {
        ZEUS_RETURN_IF_ERROR(
            zeus::c_api::CheckGpuPosition("zeus_gpus_unlock_clocks", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        ZEUS_RETURN_IF_ERROR(zeus::UnlockClocks(*gpus->gpus[position], memory != 0));
        (memory != 0 ? gpus->mem_clocks_locked : gpus->gpu_clocks_locked)[position] = false;
        return zeus::Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_supported_graphics_clocks_mhz(zeus_gpus* gpus, int32_t position,
                                                uint32_t* clocks_mhz, size_t capacity,
                                                size_t* count, char* message, size_t message_size) {
  return zeus_gpus_supported_graphics_clocks_at_mhz(gpus, position, 0, clocks_mhz, capacity, count,
                                                    message, message_size);
}

int32_t zeus_gpus_supported_graphics_clocks_at_mhz(zeus_gpus* gpus, int32_t position,
                                                   uint32_t memory_clock_mhz, uint32_t* clocks_mhz,
                                                   size_t capacity, size_t* count, char* message,
                                                   size_t message_size) {
  return zeus::c_api::Guard(
      [&]() -> zeus::Status {
        return zeus::c_api::CopyClocks("zeus_gpus_supported_graphics_clocks_at_mhz", gpus, position,
                                       clocks_mhz, capacity, count, [&](zeus::Gpu& gpu) {
                                         return gpu.SupportedGraphicsClocksMhz(memory_clock_mhz);
                                       });
      },
      message, message_size);
}

int32_t zeus_gpus_supported_memory_clocks_mhz(zeus_gpus* gpus, int32_t position,
                                              uint32_t* clocks_mhz, size_t capacity, size_t* count,
                                              char* message, size_t message_size) {
  return zeus::c_api::Guard(
      [&]() -> zeus::Status {
        return zeus::c_api::CopyClocks(
            "zeus_gpus_supported_memory_clocks_mhz", gpus, position, clocks_mhz, capacity, count,
            [](zeus::Gpu& gpu) { return gpu.SupportedMemoryClocksMhz(); });
      },
      message, message_size);
}

}  // extern "C"
