#include "src/device/amdsmi/amdsmi_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "zeus/util/env.h"
#include "zeus/util/units.h"

namespace zeus::amdsmi {
namespace {

// A zeroed buffer of kStructBufferSize bytes for AMD SMI to fill, aligned for
// any of its structs.
struct StructBuffer {
  alignas(16) unsigned char bytes[kStructBufferSize] = {};
  void* data() { return bytes; }
  // The NUL-terminated string at offset 0, at most kLeadingStringMax bytes.
  std::string LeadingString() const {
    const char* text = reinterpret_cast<const char*>(bytes);
    return std::string(text, strnlen(text, kLeadingStringMax));
  }
  template <typename T>
  T As() const {
    static_assert(sizeof(T) <= kStructBufferSize, "struct larger than the buffer");
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
};

}  // namespace

StatusOr<uint32_t> UwToMw(uint64_t power_uw, std::string_view what) {
  const uint64_t mw = power_uw / 1000;
  if (mw > std::numeric_limits<uint32_t>::max()) {
    return InternalError(std::string(what) + ": " + std::to_string(power_uw) +
                         " uW does not fit in 32-bit mW");
  }
  return static_cast<uint32_t>(mw);
}

StatusOr<uint32_t> WToMw(uint64_t power_w, std::string_view what) {
  if (power_w > std::numeric_limits<uint32_t>::max() / 1000) {
    return InternalError(std::string(what) + ": " + std::to_string(power_w) +
                         " W does not fit in 32-bit mW");
  }
  return static_cast<uint32_t>(power_w * 1000);
}

StatusOr<uint64_t> EnergyCounterToMj(uint64_t counter, float resolution_uj) {
  if (!std::isfinite(resolution_uj) || resolution_uj <= 0) {
    return InternalError("energy counter resolution " + fmt::format("{}", resolution_uj) +
                         " uJ is not a positive number");
  }
  const long double mj =
      static_cast<long double>(counter) * static_cast<long double>(resolution_uj) / 1000.0L;
  if (mj >= static_cast<long double>(std::numeric_limits<uint64_t>::max())) {
    return InternalError("energy counter " + std::to_string(counter) + " x " +
                         fmt::format("{}", resolution_uj) + " uJ does not fit in 64-bit mJ");
  }
  return static_cast<uint64_t>(mj);
}

AmdsmiGpu::AmdsmiGpu(std::shared_ptr<const AmdsmiLibrary> library, amdsmi_processor_handle handle,
                     int index, unsigned int amdsmi_index)
    : library_(std::move(library)), handle_(handle), index_(index), amdsmi_index_(amdsmi_index) {}

std::string AmdsmiGpu::Context() const {
  if (static_cast<unsigned int>(index_) == amdsmi_index_) return "GPU " + std::to_string(index_);
  return "GPU " + std::to_string(index_) + " (AMD SMI index " + std::to_string(amdsmi_index_) + ")";
}

Status AmdsmiGpu::Error(std::string_view call, amdsmi_status_t rc) const {
  return library_->Error(call, rc).WithContext(Context());
}

Status AmdsmiGpu::Missing(std::string_view name) const {
  return library_->MissingFunction(name).WithContext(Context());
}

StatusOr<std::string> AmdsmiGpu::Name() {
  const auto fn = library_->functions().get_gpu_asic_info;
  if (fn == nullptr) return Missing("amdsmi_get_gpu_asic_info");
  StructBuffer info;
  amdsmi_status_t rc = fn(handle_, info.data());
  if (rc != kSuccess) return Error("amdsmi_get_gpu_asic_info", rc);
  return info.LeadingString();
}

StatusOr<std::string> AmdsmiGpu::Architecture() {
  return NotSupportedError(Context() + ": AMD SMI reports no architecture name");
}

StatusOr<std::string> AmdsmiGpu::Uuid() {
  const auto fn = library_->functions().get_gpu_device_uuid;
  if (fn == nullptr) return Missing("amdsmi_get_gpu_device_uuid");
  // AMDSMI_GPU_UUID_SIZE, with room to spare for a longer form.
  std::vector<char> buffer(kGpuUuidSize * 2, '\0');
  unsigned int length = static_cast<unsigned int>(buffer.size());
  amdsmi_status_t rc = fn(handle_, &length, buffer.data());
  if (rc != kSuccess) return Error("amdsmi_get_gpu_device_uuid", rc);
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

StatusOr<PowerCapInfo> AmdsmiGpu::ReadPowerCapInfo() {
  StructBuffer info;
  amdsmi_status_t rc = library_->functions().get_power_cap_info(handle_, 0, info.data());
  if (rc != kSuccess) return Error("amdsmi_get_power_cap_info(sensor 0)", rc);
  return info.As<PowerCapInfo>();
}

StatusOr<PowerLimitConstraints> AmdsmiGpu::PowerLimitConstraintsMw() {
  ZEUS_ASSIGN_OR_RETURN(PowerCapInfo info, ReadPowerCapInfo());
  ZEUS_ASSIGN_OR_RETURN(uint32_t min_mw, UwToMw(info.min_power_cap_uw, Context() + ": min cap"));
  ZEUS_ASSIGN_OR_RETURN(uint32_t max_mw, UwToMw(info.max_power_cap_uw, Context() + ": max cap"));
  return PowerLimitConstraints{min_mw, max_mw};
}

StatusOr<uint32_t> AmdsmiGpu::DefaultPowerLimitMw() {
  ZEUS_ASSIGN_OR_RETURN(PowerCapInfo info, ReadPowerCapInfo());
  return UwToMw(info.default_power_cap_uw, Context() + ": default cap");
}

StatusOr<uint32_t> AmdsmiGpu::PowerLimitMw() {
  ZEUS_ASSIGN_OR_RETURN(PowerCapInfo info, ReadPowerCapInfo());
  return UwToMw(info.power_cap_uw, Context() + ": power cap");
}

StatusOr<uint32_t> AmdsmiGpu::EnforcedPowerLimitMw() { return PowerLimitMw(); }

Status AmdsmiGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  const uint64_t cap_uw = static_cast<uint64_t>(power_limit_mw) * 1000;
  const std::string call = "amdsmi_set_power_cap(sensor 0, " + std::to_string(cap_uw) + " uW)";
  ZEUS_ASSIGN_OR_RETURN(PowerLimitConstraints constraints, PowerLimitConstraintsMw());
  if (power_limit_mw < constraints.min_mw || power_limit_mw > constraints.max_mw) {
    return InvalidArgumentError(Context() + ": " + call + ": " + std::to_string(power_limit_mw) +
                                " mW is outside the allowed range [" +
                                std::to_string(constraints.min_mw) + ", " +
                                std::to_string(constraints.max_mw) + "] mW");
  }
  const auto fn = library_->functions().set_power_cap;
  if (fn == nullptr) return Missing("amdsmi_set_power_cap");
  amdsmi_status_t rc = fn(handle_, 0, cap_uw);
  if (rc == kStatusNoPerm) {
    return Status(StatusCode::kPermissionDenied,
                  Error(call, rc).message() +
                      "; setting a power cap needs root (write access to the amdgpu hwmon "
                      "power1_cap); set ZEUS_DRY_RUN=1 to only log the change");
  }
  if (rc != kSuccess) return Error(call, rc);
  return Status::Ok();
}

StatusOr<bool> AmdsmiGpu::PersistenceMode() {
  return NotSupportedError(Context() + ": AMD GPUs have no persistence mode");
}

Status AmdsmiGpu::SetPersistenceMode(bool) {
  return NotSupportedError(Context() + ": AMD GPUs have no persistence mode");
}

StatusOr<uint64_t> AmdsmiGpu::ReadEnergyCounterMj() {
  const auto fn = library_->functions().get_energy_count;
  if (fn == nullptr) return Missing("amdsmi_get_energy_count");
  uint64_t counter = 0;
  float resolution_uj = 0;
  uint64_t timestamp_ns = 0;
  amdsmi_status_t rc = fn(handle_, &counter, &resolution_uj, &timestamp_ns);
  if (rc != kSuccess) return Error("amdsmi_get_energy_count", rc);
  StatusOr<uint64_t> mj = EnergyCounterToMj(counter, resolution_uj);
  if (!mj.ok()) return mj.status().WithContext(Context() + ": amdsmi_get_energy_count");
  return mj;
}

StatusOr<uint64_t> AmdsmiGpu::TotalEnergyMj() {
  if (!energy_counter_disabled_.ok()) return energy_counter_disabled_;
  return ReadEnergyCounterMj();
}

StatusOr<PowerInfoHead> AmdsmiGpu::ReadPowerInfo() {
  StructBuffer info;
  amdsmi_status_t rc = library_->functions().get_power_info(handle_, info.data());
  if (rc != kSuccess) return Error("amdsmi_get_power_info", rc);
  return info.As<PowerInfoHead>();
}

StatusOr<uint32_t> AmdsmiGpu::PowerMw() {
  ZEUS_ASSIGN_OR_RETURN(const PowerInfoHead head, ReadPowerInfo());
  if (head.current_socket_power_w != kUnsupportedU32) {
    return WToMw(head.current_socket_power_w, Context() + ": current_socket_power");
  }
  if (head.average_socket_power_w != kUnsupportedU32) {
    return WToMw(head.average_socket_power_w, Context() + ": average_socket_power");
  }
  return NotSupportedError(Context() +
                           ": amdsmi_get_power_info reports no socket power (on an MI250, only "
                           "the even die of each package reports the power of both)");
}

StatusOr<uint32_t> AmdsmiGpu::DomainPowerMw(PowerDomain domain) {
  switch (domain) {
    case PowerDomain::kDeviceInstant:
      return PowerMw();
    case PowerDomain::kDeviceAverage: {
      ZEUS_ASSIGN_OR_RETURN(const PowerInfoHead head, ReadPowerInfo());
      if (head.average_socket_power_w == kUnsupportedU32) {
        return NotSupportedError(Context() +
                                 ": amdsmi_get_power_info reports no average socket power (MI300 "
                                 "and newer report only the current socket power)");
      }
      return WToMw(head.average_socket_power_w, Context() + ": average_socket_power");
    }
    case PowerDomain::kMemoryAverage:
      break;
  }
  return NotSupportedError(Context() + ": AMD SMI reads no " + PowerDomainName(domain) + " power");
}

StatusOr<int32_t> AmdsmiGpu::TemperatureC() {
  const auto fn = library_->functions().get_temp_metric;
  if (fn == nullptr) return Missing("amdsmi_get_temp_metric");
  int64_t temperature_c = 0;
  amdsmi_status_t rc = fn(handle_, kTemperatureTypeHotspot, kTempCurrent, &temperature_c);
  if (rc != kSuccess) return Error("amdsmi_get_temp_metric(HOTSPOT, CURRENT)", rc);
  return static_cast<int32_t>(temperature_c);
}

StatusOr<std::vector<uint32_t>> AmdsmiGpu::DpmLevelsMhz(uint32_t clk_type, const char* type_name) {
  const auto fn = library_->functions().get_clk_freq;
  if (fn == nullptr) return Missing("amdsmi_get_clk_freq");
  const std::string call = std::string("amdsmi_get_clk_freq(") + type_name + ")";
  StructBuffer info;
  amdsmi_status_t rc = fn(handle_, clk_type, info.data());
  if (rc != kSuccess) return Error(call, rc);
  const Frequencies levels = info.As<Frequencies>();
  if (levels.num_supported > kMaxNumFrequencies) {
    return InternalError(Context() + ": " + call + " reports " +
                         std::to_string(levels.num_supported) + " levels, more than the " +
                         std::to_string(kMaxNumFrequencies) + " its struct holds");
  }
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < levels.num_supported; ++i) {
    const uint64_t mhz = (levels.frequency_hz[i] + 500'000) / 1'000'000;
    if (mhz == 0 || mhz > std::numeric_limits<uint32_t>::max()) {
      return InternalError(Context() + ": " + call + " reports level " + std::to_string(i) +
                           " at " + std::to_string(levels.frequency_hz[i]) + " Hz, not a clock");
    }
    out.push_back(static_cast<uint32_t>(mhz));
  }
  std::sort(out.begin(), out.end(), std::greater<uint32_t>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return NotSupportedError(Context() + ": " + call + " lists no level");
  return out;
}

StatusOr<std::vector<uint32_t>> AmdsmiGpu::SupportedMemoryClocksMhz() {
  return DpmLevelsMhz(kClkTypeMem, "AMDSMI_CLK_TYPE_MEM");
}

StatusOr<std::vector<uint32_t>> AmdsmiGpu::SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) {
  if (memory_clock_mhz != 0) {
    ZEUS_ASSIGN_OR_RETURN(const std::vector<uint32_t> memory, SupportedMemoryClocksMhz());
    if (std::find(memory.begin(), memory.end(), memory_clock_mhz) == memory.end()) {
      std::string listed;
      for (uint32_t mhz : memory) listed += (listed.empty() ? "" : ", ") + std::to_string(mhz);
      return NotFoundError(Context() + ": memory clock " + std::to_string(memory_clock_mhz) +
                           " MHz is not a supported memory clock (supported: " + listed + " MHz)");
    }
  }
  return DpmLevelsMhz(kClkTypeSys, "AMDSMI_CLK_TYPE_SYS");
}

Status AmdsmiGpu::SetClockRange(uint32_t clk_type, const char* type_name, uint32_t min_mhz,
                                uint32_t max_mhz) {
  const std::string call = std::string("amdsmi_set_gpu_clk_range(") + std::to_string(min_mhz) +
                           "-" + std::to_string(max_mhz) + " MHz, " + type_name + ")";
  if (min_mhz > max_mhz) {
    return InvalidArgumentError(Context() + ": " + call + ": min above max");
  }
  const auto fn = library_->functions().set_gpu_clk_range;
  if (fn == nullptr) return Missing("amdsmi_set_gpu_clk_range");
  amdsmi_status_t rc = fn(handle_, min_mhz, max_mhz, clk_type);
  if (rc == kStatusNoPerm) {
    return Status(StatusCode::kPermissionDenied,
                  Error(call, rc).message() +
                      "; setting a clock range needs root (write access to the amdgpu "
                      "pp_od_clk_voltage); set ZEUS_DRY_RUN=1 to only log the change");
  }
  if (rc != kSuccess) return Error(call, rc);
  return Status::Ok();
}

Status AmdsmiGpu::SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return SetClockRange(kClkTypeSys, "AMDSMI_CLK_TYPE_SYS", min_mhz, max_mhz);
}

Status AmdsmiGpu::SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return SetClockRange(kClkTypeMem, "AMDSMI_CLK_TYPE_MEM", min_mhz, max_mhz);
}

Status AmdsmiGpu::NoSingleDomainReset(const char* domain) const {
  return NotSupportedError(Context() + ": resetting only the " + domain +
                           " locked clocks is not supported: AMD SMI resets every clock domain "
                           "at once, never one alone");
}

Status AmdsmiGpu::ResetGpuLockedClocks() { return NoSingleDomainReset("graphics"); }

Status AmdsmiGpu::ResetMemoryLockedClocks() { return NoSingleDomainReset("memory"); }

StatusOr<std::string> AmdsmiGpu::PciBusId() {
  const auto fn = library_->functions().get_gpu_device_bdf;
  if (fn == nullptr) return Missing("amdsmi_get_gpu_device_bdf");
  StructBuffer info;
  amdsmi_status_t rc = fn(handle_, info.data());
  if (rc != kSuccess) return Error("amdsmi_get_gpu_device_bdf", rc);
  const Bdf bdf = info.As<Bdf>();
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", bdf.domain(), bdf.bus(), bdf.device(),
                     bdf.function());
}

}  // namespace zeus::amdsmi
