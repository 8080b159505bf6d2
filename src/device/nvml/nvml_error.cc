#include "src/device/nvml/nvml_error.h"

#include <string>

namespace zeus::nvml {
namespace {

struct ReturnCodeInfo {
  nvmlReturn_t rc;
  const char* name;
  const char* description;
  StatusCode code;
};

// Descriptions follow the comments of NVIDIA's nvml.h.
constexpr ReturnCodeInfo kReturnCodes[] = {
    {kSuccess, "NVML_SUCCESS", "Success", StatusCode::kOk},
    {kErrorUninitialized, "NVML_ERROR_UNINITIALIZED", "Uninitialized", StatusCode::kUnavailable},
    {kErrorInvalidArgument, "NVML_ERROR_INVALID_ARGUMENT", "Invalid Argument",
     StatusCode::kInvalidArgument},
    {kErrorNotSupported, "NVML_ERROR_NOT_SUPPORTED", "Not Supported", StatusCode::kNotSupported},
    {kErrorNoPermission, "NVML_ERROR_NO_PERMISSION", "Insufficient Permissions",
     StatusCode::kPermissionDenied},
    {kErrorAlreadyInitialized, "NVML_ERROR_ALREADY_INITIALIZED", "Already Initialized",
     StatusCode::kFailedPrecondition},
    {kErrorNotFound, "NVML_ERROR_NOT_FOUND", "Not Found", StatusCode::kNotFound},
    {kErrorInsufficientSize, "NVML_ERROR_INSUFFICIENT_SIZE", "Insufficient Size",
     StatusCode::kInternal},
    {kErrorInsufficientPower, "NVML_ERROR_INSUFFICIENT_POWER",
     "Insufficient External Power (power cables not properly attached)", StatusCode::kUnavailable},
    {kErrorDriverNotLoaded, "NVML_ERROR_DRIVER_NOT_LOADED", "Driver Not Loaded",
     StatusCode::kUnavailable},
    {kErrorTimeout, "NVML_ERROR_TIMEOUT", "Timeout", StatusCode::kUnavailable},
    {kErrorIrqIssue, "NVML_ERROR_IRQ_ISSUE", "Interrupt request issue", StatusCode::kUnavailable},
    {kErrorLibraryNotFound, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML Shared Library Not Found",
     StatusCode::kUnavailable},
    {kErrorFunctionNotFound, "NVML_ERROR_FUNCTION_NOT_FOUND", "Function Not Found",
     StatusCode::kNotSupported},
    {kErrorCorruptedInforom, "NVML_ERROR_CORRUPTED_INFOROM", "Corrupted infoROM",
     StatusCode::kIoError},
    {kErrorGpuIsLost, "NVML_ERROR_GPU_IS_LOST", "GPU is lost", StatusCode::kUnavailable},
    {kErrorResetRequired, "NVML_ERROR_RESET_REQUIRED", "GPU requires restart",
     StatusCode::kUnavailable},
    {kErrorOperatingSystem, "NVML_ERROR_OPERATING_SYSTEM",
     "The operating system has blocked the request", StatusCode::kPermissionDenied},
    {kErrorLibRmVersionMismatch, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "RM has detected an NVML/RM version mismatch", StatusCode::kUnavailable},
    {kErrorInUse, "NVML_ERROR_IN_USE", "In use by another client", StatusCode::kFailedPrecondition},
    {kErrorMemory, "NVML_ERROR_MEMORY", "Insufficient Memory", StatusCode::kUnavailable},
    {kErrorNoData, "NVML_ERROR_NO_DATA", "No data", StatusCode::kUnavailable},
    {kErrorVgpuEccNotSupported, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
     "ECC is not supported on this vGPU", StatusCode::kNotSupported},
    {kErrorInsufficientResources, "NVML_ERROR_INSUFFICIENT_RESOURCES", "Insufficient resources",
     StatusCode::kUnavailable},
    {kErrorFreqNotSupported, "NVML_ERROR_FREQ_NOT_SUPPORTED", "Frequency not supported",
     StatusCode::kNotSupported},
    {kErrorArgumentVersionMismatch, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "Argument version mismatch", StatusCode::kInvalidArgument},
    {kErrorDeprecated, "NVML_ERROR_DEPRECATED", "Deprecated", StatusCode::kNotSupported},
    {kErrorNotReady, "NVML_ERROR_NOT_READY", "Not ready", StatusCode::kUnavailable},
    {kErrorGpuNotFound, "NVML_ERROR_GPU_NOT_FOUND", "GPU not found", StatusCode::kNotFound},
    {kErrorInvalidState, "NVML_ERROR_INVALID_STATE", "Invalid state",
     StatusCode::kFailedPrecondition},
    {kErrorUnknown, "NVML_ERROR_UNKNOWN", "Unknown Error", StatusCode::kInternal},
};

const ReturnCodeInfo* Find(nvmlReturn_t rc) {
  for (const ReturnCodeInfo& info : kReturnCodes) {
    if (info.rc == rc) return &info;
  }
  return nullptr;
}

}  // namespace

std::string ReturnCodeName(nvmlReturn_t rc) {
  const ReturnCodeInfo* info = Find(rc);
  return info != nullptr ? info->name : "NVML_ERROR_" + std::to_string(rc);
}

std::string_view ReturnCodeDescription(nvmlReturn_t rc) {
  const ReturnCodeInfo* info = Find(rc);
  return info != nullptr ? info->description : "Unknown NVML return code";
}

StatusCode ReturnCodeToStatusCode(nvmlReturn_t rc) {
  const ReturnCodeInfo* info = Find(rc);
  return info != nullptr ? info->code : StatusCode::kInternal;
}

Status NvmlError(std::string_view call, nvmlReturn_t rc, nvmlErrorString_fn error_string) {
  if (rc == kSuccess) return Status::Ok();
  std::string message;
  if (error_string != nullptr) {
    const char* text = error_string(rc);
    if (text != nullptr) message = text;
  }
  if (message.empty()) message = std::string(ReturnCodeDescription(rc));
  return Status(ReturnCodeToStatusCode(rc), std::string(call) + ": " + message + " (" +
                                                ReturnCodeName(rc) + ", " + std::to_string(rc) +
                                                ")");
}

}  // namespace zeus::nvml
