// Our own declarations of the few AMD SMI types, constants and functions Zeus
// uses, so the build needs no ROCm headers and the binary runs on machines
// without an AMD GPU. Values and signatures follow AMD's amdsmi.h of ROCm 6.2
// and newer; only pointers to these functions are ever formed, through dlsym
// in AmdsmiLibrary.
//
// AMD SMI's structs have grown between releases (strings went from 64 to 256
// bytes, reserved tails changed). We only read fields whose offset has been
// the same in every release since 6.2, and we always hand the library a
// zeroed buffer of kStructBufferSize bytes, larger than any release's struct,
// so a newer library cannot write past our memory.

#ifndef ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_API_H_
#define ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_API_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// AMD SMI: a C enum, returned as a 32-bit unsigned value.
typedef uint32_t amdsmi_status_t;
// AMD SMI: opaque handles, valid between amdsmi_init and amdsmi_shut_down.
typedef void* amdsmi_socket_handle;
typedef void* amdsmi_processor_handle;

typedef amdsmi_status_t (*amdsmi_init_fn)(uint64_t init_flags);
typedef amdsmi_status_t (*amdsmi_shut_down_fn)(void);
typedef amdsmi_status_t (*amdsmi_status_code_to_string_fn)(amdsmi_status_t status,
                                                           const char** status_string);
// amdsmi_get_socket_handles(count, handles): with handles null, stores the
// number of sockets in *count; else fills up to *count handles.
typedef amdsmi_status_t (*amdsmi_get_socket_handles_fn)(uint32_t* socket_count,
                                                        amdsmi_socket_handle* socket_handles);
// amdsmi_get_processor_handles(socket, count, handles): likewise per socket.
typedef amdsmi_status_t (*amdsmi_get_processor_handles_fn)(
    amdsmi_socket_handle socket_handle, uint32_t* processor_count,
    amdsmi_processor_handle* processor_handles);
typedef amdsmi_status_t (*amdsmi_get_processor_type_fn)(amdsmi_processor_handle processor_handle,
                                                        uint32_t* processor_type);
// Fills a struct (amdsmi_asic_info_t, amdsmi_power_info_t, amdsmi_bdf_t,
// amdsmi_driver_info_t, amdsmi_version_t, ...) given by address.
typedef amdsmi_status_t (*amdsmi_get_struct_fn)(amdsmi_processor_handle processor_handle,
                                                void* info);
typedef amdsmi_status_t (*amdsmi_get_lib_version_fn)(void* version);
typedef amdsmi_status_t (*amdsmi_get_power_cap_info_fn)(amdsmi_processor_handle processor_handle,
                                                        uint32_t sensor_index, void* info);
typedef amdsmi_status_t (*amdsmi_set_power_cap_fn)(amdsmi_processor_handle processor_handle,
                                                   uint32_t sensor_index, uint64_t cap_uw);
// energy_accumulator * counter_resolution is the energy in uJ since the driver
// loaded; timestamp is in ns.
typedef amdsmi_status_t (*amdsmi_get_energy_count_fn)(amdsmi_processor_handle processor_handle,
                                                      uint64_t* energy_accumulator,
                                                      float* counter_resolution,
                                                      uint64_t* timestamp_ns);
typedef amdsmi_status_t (*amdsmi_get_temp_metric_fn)(amdsmi_processor_handle processor_handle,
                                                     uint32_t sensor_type, uint32_t metric,
                                                     int64_t* temperature);
// amdsmi_get_clk_freq(handle, clk_type, frequencies): the DPM levels of one
// clock domain (amdsmi_frequencies_t, filled at the given address).
typedef amdsmi_status_t (*amdsmi_get_clk_freq_fn)(amdsmi_processor_handle processor_handle,
                                                  uint32_t clk_type, void* frequencies);
// amdsmi_set_gpu_clk_range(handle, min, max, clk_type): limits one clock
// domain (AMDSMI_CLK_TYPE_SYS or AMDSMI_CLK_TYPE_MEM) to [min, max] MHz.
typedef amdsmi_status_t (*amdsmi_set_gpu_clk_range_fn)(amdsmi_processor_handle processor_handle,
                                                       uint64_t min_clk_mhz, uint64_t max_clk_mhz,
                                                       uint32_t clk_type);
typedef amdsmi_status_t (*amdsmi_get_gpu_device_uuid_fn)(amdsmi_processor_handle processor_handle,
                                                         unsigned int* uuid_length, char* uuid);

}  // extern "C"

namespace zeus::amdsmi {

// amdsmi_status_t values (AMD SMI of ROCm 6.2+).
enum : amdsmi_status_t {
  kSuccess = 0,
  kStatusInval = 1,
  kStatusNotSupported = 2,
  kStatusNotYetImplemented = 3,
  kStatusFailLoadModule = 4,
  kStatusFailLoadSymbol = 5,
  kStatusDrmError = 6,
  kStatusApiFailed = 7,
  kStatusTimeout = 8,
  kStatusRetry = 9,
  kStatusNoPerm = 10,
  kStatusInterrupt = 11,
  kStatusIo = 12,
  kStatusAddressFault = 13,
  kStatusFileError = 14,
  kStatusOutOfResources = 15,
  kStatusInternalException = 16,
  kStatusInputOutOfBounds = 17,
  kStatusInitError = 18,
  kStatusRefcountOverflow = 19,
  kStatusBusy = 30,
  kStatusNotFound = 31,
  kStatusNotInit = 32,
  kStatusNoSlot = 33,
  kStatusDriverNotLoaded = 34,
  kStatusNoData = 40,
  kStatusInsufficientSize = 41,
  kStatusUnexpectedSize = 42,
  kStatusUnexpectedData = 43,
  kStatusNonAmdCpu = 44,
  kStatusNoEnergyDrv = 45,
  kStatusNoMsrDrv = 46,
  kStatusNoHsmpDrv = 47,
  kStatusNoHsmpSup = 48,
  kStatusNoHsmpMsgSup = 49,
  kStatusHsmpTimeout = 50,
  kStatusNoDrv = 51,
  kStatusFileNotFound = 52,
  kStatusArgPtrNull = 53,
  kStatusAmdgpuRestartErr = 54,
  kStatusSettingUnavailable = 55,
  kStatusMapError = 0xFFFFFFFEu,
  kStatusUnknownError = 0xFFFFFFFFu,
};

// amdsmi_init_flags_t: AMDSMI_INIT_AMD_GPUS.
constexpr uint64_t kInitAmdGpus = 1u << 1;
// processor_type_t: AMDSMI_PROCESSOR_TYPE_AMD_GPU.
constexpr uint32_t kProcessorTypeAmdGpu = 1;
// amdsmi_temperature_type_t: AMDSMI_TEMPERATURE_TYPE_HOTSPOT (junction).
constexpr uint32_t kTemperatureTypeHotspot = 1;
// amdsmi_temperature_metric_t: AMDSMI_TEMP_CURRENT.
constexpr uint32_t kTempCurrent = 0;
// amdsmi_clk_type_t: AMDSMI_CLK_TYPE_SYS (= AMDSMI_CLK_TYPE_GFX), the graphics
// clock, and AMDSMI_CLK_TYPE_MEM, the memory clock (after DF, DCEF, SOC).
constexpr uint32_t kClkTypeSys = 0;
constexpr uint32_t kClkTypeMem = 4;
// AMDSMI_MAX_NUM_FREQUENCIES: the most levels amdsmi_frequencies_t holds.
constexpr uint32_t kMaxNumFrequencies = 33;
// AMD SMI marks an unsupported 32-bit struct member with UINT32_MAX.
constexpr uint32_t kUnsupportedU32 = 0xFFFFFFFFu;
// AMDSMI_GPU_UUID_SIZE.
constexpr unsigned int kGpuUuidSize = 38;

// The bytes we hand AMD SMI for any struct it fills: larger than every
// release's largest struct that we pass (amdsmi_asic_info_t is under 1 KiB).
constexpr size_t kStructBufferSize = 4096;

// amdsmi_power_cap_info_t (every release): all in uW except dpm_cap (MHz).
struct PowerCapInfo {
  uint64_t power_cap_uw;
  uint64_t default_power_cap_uw;
  uint64_t dpm_cap_mhz;
  uint64_t min_power_cap_uw;
  uint64_t max_power_cap_uw;
  uint64_t reserved[3];
};
static_assert(sizeof(PowerCapInfo) == 64, "amdsmi_power_cap_info_t is 64 bytes");

// The head of amdsmi_power_info_t (ROCm 6.2+): powers in W, UINT32_MAX when
// the GPU does not report that one (MI300 reports current_socket_power, MI200
// and older average_socket_power).
struct PowerInfoHead {
  uint64_t socket_power_w;
  uint32_t current_socket_power_w;
  uint32_t average_socket_power_w;
};
static_assert(offsetof(PowerInfoHead, current_socket_power_w) == 8, "ROCm 6.2+ layout");

// amdsmi_frequencies_t (ROCm 6.2+: has_deep_sleep first): num_supported
// levels in frequency_hz, in Hz (AMD SMI's unit, from the amdgpu driver's
// pp_dpm_sclk / pp_dpm_mclk), lowest first; current is the index of the level
// in use.
struct Frequencies {
  bool has_deep_sleep;
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency_hz[kMaxNumFrequencies];
};
static_assert(offsetof(Frequencies, num_supported) == 4, "ROCm 6.2+ layout");
static_assert(offsetof(Frequencies, frequency_hz) == 16, "ROCm 6.2+ layout");

// amdsmi_bdf_t: one uint64_t, function in bits 0-2, device 3-7, bus 8-15,
// domain 16-63.
struct Bdf {
  uint64_t as_uint;
  unsigned function() const { return static_cast<unsigned>(as_uint & 0x7u); }
  unsigned device() const { return static_cast<unsigned>((as_uint >> 3) & 0x1Fu); }
  unsigned bus() const { return static_cast<unsigned>((as_uint >> 8) & 0xFFu); }
  uint64_t domain() const { return as_uint >> 16; }
};

// amdsmi_asic_info_t begins with market_name (64 bytes before ROCm 6.1, 256
// since), and amdsmi_driver_info_t with driver_version (64 or 256): both are
// NUL-terminated strings at offset 0.
constexpr size_t kLeadingStringMax = 256;

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_API_H_
