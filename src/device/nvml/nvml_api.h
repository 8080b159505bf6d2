// Our own declarations of the few NVML types, constants and functions Zeus
// uses, so the build needs no NVIDIA headers and the binary runs on machines
// without a GPU. Values and signatures follow NVIDIA's nvml.h (ABI-stable
// since CUDA 10); only pointers to these functions are ever formed, through
// dlsym in NvmlLibrary.

#ifndef ZEUS_SRC_DEVICE_NVML_NVML_API_H_
#define ZEUS_SRC_DEVICE_NVML_NVML_API_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// NVML: an opaque per-device handle, valid between nvmlInit and nvmlShutdown.
typedef struct nvmlDevice_st* nvmlDevice_t;
// NVML: a C enum, passed and returned as int.
typedef int nvmlReturn_t;
typedef int nvmlEnableState_t;
typedef unsigned int nvmlDeviceArchitecture_t;

typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlSystemGetVersion_fn)(char* version, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int* device_count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetString_fn)(nvmlDevice_t device, char* buffer,
                                               unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetArchitecture_fn)(nvmlDevice_t device,
                                                     nvmlDeviceArchitecture_t* arch);
typedef nvmlReturn_t (*nvmlDeviceGetUint2_fn)(nvmlDevice_t device, unsigned int* min_mw,
                                              unsigned int* max_mw);
typedef nvmlReturn_t (*nvmlDeviceGetUint_fn)(nvmlDevice_t device, unsigned int* value);
typedef nvmlReturn_t (*nvmlDeviceSetUint_fn)(nvmlDevice_t device, unsigned int value);
typedef nvmlReturn_t (*nvmlDeviceGetEnableState_fn)(nvmlDevice_t device, nvmlEnableState_t* mode);
typedef nvmlReturn_t (*nvmlDeviceSetEnableState_fn)(nvmlDevice_t device, nvmlEnableState_t mode);
typedef nvmlReturn_t (*nvmlDeviceSetUint2_fn)(nvmlDevice_t device, unsigned int min,
                                              unsigned int max);
typedef nvmlReturn_t (*nvmlDeviceReset_fn)(nvmlDevice_t device);
// nvmlDeviceGetClockInfo(device, nvmlClockType_t, clock_mhz).
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, int type,
                                                  unsigned int* clock_mhz);
// nvmlDeviceGetSupportedMemoryClocks(device, count in/out, clocks_mhz).
typedef nvmlReturn_t (*nvmlDeviceGetSupportedMemoryClocks_fn)(nvmlDevice_t device,
                                                              unsigned int* count,
                                                              unsigned int* clocks_mhz);
// nvmlDeviceGetSupportedGraphicsClocks(device, memory_clock_mhz, count in/out,
// clocks_mhz).
// nvmlMask255_t: bit i of profile id i is mask[i / 32] >> (i % 32).
typedef struct {
  unsigned int mask[8];
} nvmlMask255_t;
// nvmlWorkloadPowerProfileInfo_v1_t.
typedef struct {
  unsigned int version;
  unsigned int profile_id;
  unsigned int priority;
  nvmlMask255_t conflicting_mask;
} nvmlWorkloadPowerProfileInfo_t;
// nvmlWorkloadPowerProfileProfilesInfo_v1_t: perf_profile[i] describes the
// profile of id i when bit i of perf_profiles_mask is set.
typedef struct {
  unsigned int version;  // WorkloadPowerProfilesInfoVersion().
  nvmlMask255_t perf_profiles_mask;
  nvmlWorkloadPowerProfileInfo_t perf_profile[255];
} nvmlWorkloadPowerProfileProfilesInfo_t;
typedef nvmlReturn_t (*nvmlDeviceWorkloadPowerProfileGetProfilesInfo_fn)(
    nvmlDevice_t device, nvmlWorkloadPowerProfileProfilesInfo_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedGraphicsClocks_fn)(nvmlDevice_t device,
                                                                unsigned int memory_clock_mhz,
                                                                unsigned int* count,
                                                                unsigned int* clocks_mhz);
typedef nvmlReturn_t (*nvmlDeviceGetUint64_fn)(nvmlDevice_t device, unsigned long long* value);

// NVML: the value of one field, a union of 8 bytes read as `value_type` says.
typedef union {
  double d_val;
  unsigned int ui_val;
  unsigned long ul_val;        // NOLINT(runtime/int): NVML's type.
  unsigned long long ull_val;  // NOLINT(runtime/int): NVML's type.
  signed long long sll_val;    // NOLINT(runtime/int): NVML's type.
  signed int si_val;
  unsigned short us_val;  // NOLINT(runtime/int): NVML's type.
} nvmlValue_t;

// NVML: nvmlFieldValue_t (40 bytes). The caller sets field_id and scope_id;
// NVML fills the rest, with a per-field return code in nvml_return.
typedef struct {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;     // NOLINT(runtime/int): NVML's type (us since the epoch).
  long long latency_usec;  // NOLINT(runtime/int): NVML's type.
  int value_type;          // nvmlValueType_t.
  nvmlReturn_t nvml_return;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int values_count,
                                                    nvmlFieldValue_t* values);
// NVML: nvmlDeviceGetTemperature(device, nvmlTemperatureSensors_t, unsigned int* temp_c).
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device, int sensor,
                                                    unsigned int* temperature_c);
// NVML: nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 (and _v2) fill it. The
// unversioned nvmlDeviceGetPciInfo fills an older layout that shares the
// first 36 bytes (a 16-byte "dddd:bb:dd.f" string, then domain, bus,
// device, ...) and writes at most sizeof(nvmlPciInfo_t), so one buffer of
// this type serves every version.
typedef struct nvmlPciInfo_st {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE: "0000:3B:00.0".
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:3B:00.0".
} nvmlPciInfo_t;
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci);

}  // extern "C"

namespace zeus::nvml {

// NVML return codes (nvmlReturn_t).
enum : nvmlReturn_t {
  kSuccess = 0,
  kErrorUninitialized = 1,
  kErrorInvalidArgument = 2,
  kErrorNotSupported = 3,
  kErrorNoPermission = 4,
  kErrorAlreadyInitialized = 5,
  kErrorNotFound = 6,
  kErrorInsufficientSize = 7,
  kErrorInsufficientPower = 8,
  kErrorDriverNotLoaded = 9,
  kErrorTimeout = 10,
  kErrorIrqIssue = 11,
  kErrorLibraryNotFound = 12,
  kErrorFunctionNotFound = 13,
  kErrorCorruptedInforom = 14,
  kErrorGpuIsLost = 15,
  kErrorResetRequired = 16,
  kErrorOperatingSystem = 17,
  kErrorLibRmVersionMismatch = 18,
  kErrorInUse = 19,
  kErrorMemory = 20,
  kErrorNoData = 21,
  kErrorVgpuEccNotSupported = 22,
  kErrorInsufficientResources = 23,
  kErrorFreqNotSupported = 24,
  kErrorArgumentVersionMismatch = 25,
  kErrorDeprecated = 26,
  kErrorNotReady = 27,
  kErrorGpuNotFound = 28,
  kErrorInvalidState = 29,
  kErrorUnknown = 999,
};

// nvmlEnableState_t.
constexpr nvmlEnableState_t kFeatureDisabled = 0;
constexpr nvmlEnableState_t kFeatureEnabled = 1;

// Field ids (NVML_FI_*) and scopes (NVML_POWER_SCOPE_*) of the power fields.
constexpr unsigned int kFieldPowerAverage = 185;  // NVML_FI_DEV_POWER_AVERAGE, mW.
constexpr unsigned int kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT, mW.
constexpr unsigned int kPowerScopeGpu = 0;        // NVML_POWER_SCOPE_GPU.
constexpr unsigned int kPowerScopeModule = 1;     // NVML_POWER_SCOPE_MODULE (GPU + CPU).
constexpr unsigned int kPowerScopeMemory = 2;     // NVML_POWER_SCOPE_MEMORY (Hopper+).

// nvmlValueType_t.
constexpr int kValueTypeDouble = 0;
constexpr int kValueTypeUnsignedInt = 1;
constexpr int kValueTypeUnsignedLong = 2;
constexpr int kValueTypeUnsignedLongLong = 3;
constexpr int kValueTypeSignedLongLong = 4;
constexpr int kValueTypeSignedInt = 5;
constexpr int kValueTypeUnsignedShort = 6;

// nvmlTemperatureSensors_t: the GPU die.
constexpr int kTemperatureGpu = 0;

// Buffer sizes NVML guarantees to be large enough.
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM of nvmlClockType_t.

// NVML_STRUCT_VERSION: a versioned struct's version field is its size with
// the version number in the top byte.
template <typename T>
constexpr unsigned int NvmlStructVersion(unsigned int version) {
  return static_cast<unsigned int>(sizeof(T)) | (version << 24);
}
// nvmlWorkloadPowerProfileProfilesInfo_v1 (11256 bytes: 4 + 32 + 255 x 44).
constexpr unsigned int WorkloadPowerProfilesInfoVersion() {
  return NvmlStructVersion<nvmlWorkloadPowerProfileProfilesInfo_t>(1);
}
static_assert(sizeof(nvmlWorkloadPowerProfileProfilesInfo_t) == 11256,
              "nvmlWorkloadPowerProfileProfilesInfo_v1_t layout");
// The names of nvmlPowerProfileType_t, by id (NVML_POWER_PROFILE_<name>).
inline constexpr const char* kWorkloadPowerProfileNames[] = {
    "MAX_P",       "MAX_Q",         "COMPUTE",       "MEMORY_BOUND", "NETWORK",
    "BALANCED",    "LLM_INFERENCE", "LLM_TRAINING",  "RBM",          "DCPCIE",
    "HMMA_SPARSE", "HMMA_DENSE",    "SYNC_BALANCED", "HPC",          "MIG"};
constexpr unsigned int kDeviceNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned int kDeviceUuidBufferSize = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned int kSystemVersionBufferSize = 80;  // NVML_SYSTEM_*_VERSION_BUFFER_SIZE

static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t must match NVML's layout");

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_API_H_
