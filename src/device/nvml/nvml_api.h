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
typedef nvmlReturn_t (*nvmlDeviceGetUint64_fn)(nvmlDevice_t device, unsigned long long* value);

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

// Buffer sizes NVML guarantees to be large enough.
constexpr unsigned int kDeviceNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned int kDeviceUuidBufferSize = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned int kSystemVersionBufferSize = 80;  // NVML_SYSTEM_*_VERSION_BUFFER_SIZE

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_API_H_
