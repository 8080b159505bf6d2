// Shared pieces of the C ABI implementation (python/zeus_c_*.cc): status
// reporting, the exception guard, option parsing and the handle structs.
// Not installed; not part of the ABI.

#ifndef ZEUS_PYTHON_ZEUS_C_INTERNAL_H_
#define ZEUS_PYTHON_ZEUS_C_INTERNAL_H_

#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/device/cpu.h"
#include "zeus/device/devices.h"
#include "zeus/device/gpu.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/status.h"
#include "zeus/util/json.h"

#include "python/zeus_c_api.h"

namespace zeus::c_api {

// Writes `text`, NUL-terminated and truncated, to `buffer` (may be NULL).
inline void CopyTruncated(const std::string& text, char* buffer, size_t buffer_size) {
  if (buffer == nullptr || buffer_size == 0) return;
  size_t n = std::min(text.size(), buffer_size - 1);
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

inline int32_t Report(const Status& status, char* message, size_t message_size) {
  if (!status.ok()) CopyTruncated(status.message(), message, message_size);
  return static_cast<int32_t>(status.code());
}

// Runs `body` (returning Status) and reports it; an escaping exception
// becomes kInternal.
template <typename Body>
int32_t Guard(Body body, char* message, size_t message_size) {
  try {
    return Report(body(), message, message_size);
  } catch (const std::exception& e) {
    return Report(InternalError(std::string("zeus C API: ") + e.what()), message, message_size);
  } catch (...) {
    return Report(InternalError("zeus C API: unknown exception"), message, message_size);
  }
}

inline Status NullHandle(const char* fn) {
  return InvalidArgumentError(std::string(fn) + ": NULL handle");
}

// The buffer convention of zeus_c_api.h for variable-length text.
Status CopyOut(const char* fn, const std::string& text, char* buffer, size_t buffer_size,
               size_t* length);

// Parses `options_json` (NULL means {}) with zeus::ParseJson (bounded size
// and depth, duplicate keys refused) as an object whose keys are all in
// `known`; errors name `fn` and the offending text or key.
StatusOr<nlohmann::json> ParseObject(const char* fn, const char* options_json,
                                     const std::vector<std::string>& known);

// A typed reader over `options` (from ParseObject) whose errors name `fn`
// and the option, e.g. "zeus_monitor_create: field 'mode': expected a
// string, got 3". Read optional settings with zeus::SetIfPresent.
// REQUIRES: `options` outlives the reader.
inline StatusOr<JsonFields> OptionFields(const char* fn, const nlohmann::json& options) {
  return JsonFields::Of(options, fn);
}

// The GPUs of this process picked by `indices` (CUDA indices; null: all, and
// none when no GPU backend is available), opened by the device layer's
// OpenSelectedDevices (unknown or repeated indices are kInvalidArgument).
// `all` owns the opened GPUs; `picked` points into it in the order of `indices`.
struct GpuSelection {
  std::vector<std::unique_ptr<Gpu>> all;
  std::vector<Gpu*> picked;
};
StatusOr<GpuSelection> SelectGpus(const char* fn, const nlohmann::json& indices);

// The same for RAPL sockets, under `powercap_root` (see OpenCpus).
struct CpuSelection {
  std::vector<std::unique_ptr<Cpu>> all;
  std::vector<Cpu*> picked;
};
StatusOr<CpuSelection> SelectCpus(const char* fn, const nlohmann::json& indices,
                                  const std::string& powercap_root = kDefaultPowercapRoot);

// The devices and monitor behind a zeus_monitor handle, shared with the
// optimizers created on it so handles may be freed in any order. `monitor`
// is null when there is nothing to measure (windows then time only).
struct MonitorState {
  GpuSelection gpus;
  CpuSelection cpus;
  std::unique_ptr<EnergyMonitor> monitor;
  std::function<void()> sync;
  // Time-only windows (monitor == nullptr): name -> begin time.
  std::mutex mu;
  std::map<std::string, std::chrono::nanoseconds> bare_windows;
};

}  // namespace zeus::c_api

struct zeus_monitor {
  std::shared_ptr<zeus::c_api::MonitorState> state;
};

#endif  // ZEUS_PYTHON_ZEUS_C_INTERNAL_H_
