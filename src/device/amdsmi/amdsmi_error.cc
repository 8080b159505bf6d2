#include "src/device/amdsmi/amdsmi_error.h"

#include <string>

namespace zeus::amdsmi {
namespace {

struct StatusInfo {
  amdsmi_status_t rc;
  const char* name;
  const char* description;
  StatusCode code;
};

// Descriptions follow the comments of AMD's amdsmi.h.
constexpr StatusInfo kStatuses[] = {
    {kSuccess, "AMDSMI_STATUS_SUCCESS", "Call succeeded", StatusCode::kOk},
    {kStatusInval, "AMDSMI_STATUS_INVAL", "Invalid parameters", StatusCode::kInvalidArgument},
    {kStatusNotSupported, "AMDSMI_STATUS_NOT_SUPPORTED", "Command not supported",
     StatusCode::kNotSupported},
    {kStatusNotYetImplemented, "AMDSMI_STATUS_NOT_YET_IMPLEMENTED", "Not implemented yet",
     StatusCode::kNotSupported},
    {kStatusFailLoadModule, "AMDSMI_STATUS_FAIL_LOAD_MODULE", "Fail to load lib",
     StatusCode::kUnavailable},
    {kStatusFailLoadSymbol, "AMDSMI_STATUS_FAIL_LOAD_SYMBOL", "Fail to load symbol",
     StatusCode::kUnavailable},
    {kStatusDrmError, "AMDSMI_STATUS_DRM_ERROR", "Error when call libdrm",
     StatusCode::kUnavailable},
    {kStatusApiFailed, "AMDSMI_STATUS_API_FAILED", "API call failed", StatusCode::kInternal},
    {kStatusTimeout, "AMDSMI_STATUS_TIMEOUT", "Timeout in API call", StatusCode::kUnavailable},
    {kStatusRetry, "AMDSMI_STATUS_RETRY", "Retry operation", StatusCode::kUnavailable},
    {kStatusNoPerm, "AMDSMI_STATUS_NO_PERM", "Permission Denied", StatusCode::kPermissionDenied},
    {kStatusInterrupt, "AMDSMI_STATUS_INTERRUPT",
     "An interrupt occurred during execution of function", StatusCode::kUnavailable},
    {kStatusIo, "AMDSMI_STATUS_IO", "I/O Error", StatusCode::kIoError},
    {kStatusAddressFault, "AMDSMI_STATUS_ADDRESS_FAULT", "Bad address", StatusCode::kInternal},
    {kStatusFileError, "AMDSMI_STATUS_FILE_ERROR", "Problem accessing a file",
     StatusCode::kIoError},
    {kStatusOutOfResources, "AMDSMI_STATUS_OUT_OF_RESOURCES", "Not enough memory",
     StatusCode::kUnavailable},
    {kStatusInternalException, "AMDSMI_STATUS_INTERNAL_EXCEPTION",
     "An internal exception was caught", StatusCode::kInternal},
    {kStatusInputOutOfBounds, "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
     "The provided input is out of allowable or safe range", StatusCode::kInvalidArgument},
    {kStatusInitError, "AMDSMI_STATUS_INIT_ERROR",
     "An error occurred when initializing internal data structures", StatusCode::kUnavailable},
    {kStatusRefcountOverflow, "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
     "An internal reference counter exceeded INT32_MAX", StatusCode::kInternal},
    {kStatusBusy, "AMDSMI_STATUS_BUSY", "Device busy", StatusCode::kFailedPrecondition},
    {kStatusNotFound, "AMDSMI_STATUS_NOT_FOUND", "Device Not found", StatusCode::kNotFound},
    {kStatusNotInit, "AMDSMI_STATUS_NOT_INIT", "Device not initialized", StatusCode::kUnavailable},
    {kStatusNoSlot, "AMDSMI_STATUS_NO_SLOT", "No more free slot", StatusCode::kUnavailable},
    {kStatusDriverNotLoaded, "AMDSMI_STATUS_DRIVER_NOT_LOADED", "Processor driver not loaded",
     StatusCode::kUnavailable},
    {kStatusNoData, "AMDSMI_STATUS_NO_DATA", "No data was found for a given input",
     StatusCode::kUnavailable},
    {kStatusInsufficientSize, "AMDSMI_STATUS_INSUFFICIENT_SIZE",
     "Not enough resources were available for the operation", StatusCode::kInternal},
    {kStatusUnexpectedSize, "AMDSMI_STATUS_UNEXPECTED_SIZE",
     "An unexpected amount of data was read", StatusCode::kInternal},
    {kStatusUnexpectedData, "AMDSMI_STATUS_UNEXPECTED_DATA",
     "The data read or provided to function is not what was expected", StatusCode::kInternal},
    {kStatusNonAmdCpu, "AMDSMI_STATUS_NON_AMD_CPU", "System has different cpu than AMD",
     StatusCode::kNotSupported},
    {kStatusNoEnergyDrv, "AMDSMI_STATUS_NO_ENERGY_DRV", "Energy driver not found",
     StatusCode::kUnavailable},
    {kStatusNoMsrDrv, "AMDSMI_STATUS_NO_MSR_DRV", "MSR driver not found", StatusCode::kUnavailable},
    {kStatusNoHsmpDrv, "AMDSMI_STATUS_NO_HSMP_DRV", "HSMP driver not found",
     StatusCode::kUnavailable},
    {kStatusNoHsmpSup, "AMDSMI_STATUS_NO_HSMP_SUP", "HSMP not supported",
     StatusCode::kNotSupported},
    {kStatusNoHsmpMsgSup, "AMDSMI_STATUS_NO_HSMP_MSG_SUP", "HSMP message/feature not supported",
     StatusCode::kNotSupported},
    {kStatusHsmpTimeout, "AMDSMI_STATUS_HSMP_TIMEOUT", "HSMP message is timedout",
     StatusCode::kUnavailable},
    {kStatusNoDrv, "AMDSMI_STATUS_NO_DRV", "No Energy and HSMP driver present",
     StatusCode::kUnavailable},
    {kStatusFileNotFound, "AMDSMI_STATUS_FILE_NOT_FOUND", "file or directory not found",
     StatusCode::kUnavailable},
    {kStatusArgPtrNull, "AMDSMI_STATUS_ARG_PTR_NULL", "Parsed argument is invalid",
     StatusCode::kInvalidArgument},
    {kStatusAmdgpuRestartErr, "AMDSMI_STATUS_AMDGPU_RESTART_ERR", "AMDGPU restart failed",
     StatusCode::kUnavailable},
    {kStatusSettingUnavailable, "AMDSMI_STATUS_SETTING_UNAVAILABLE", "Setting is not available",
     StatusCode::kNotSupported},
    {kStatusMapError, "AMDSMI_STATUS_MAP_ERROR",
     "The internal library error did not map to a status code", StatusCode::kInternal},
    {kStatusUnknownError, "AMDSMI_STATUS_UNKNOWN_ERROR", "An unknown error occurred",
     StatusCode::kInternal},
};

const StatusInfo* Find(amdsmi_status_t rc) {
  for (const StatusInfo& info : kStatuses) {
    if (info.rc == rc) return &info;
  }
  return nullptr;
}

}  // namespace

std::string StatusName(amdsmi_status_t rc) {
  const StatusInfo* info = Find(rc);
  return info != nullptr ? info->name : "AMDSMI_STATUS_" + std::to_string(rc);
}

std::string_view StatusDescription(amdsmi_status_t rc) {
  const StatusInfo* info = Find(rc);
  return info != nullptr ? info->description : "Unknown AMD SMI status code";
}

StatusCode StatusToStatusCode(amdsmi_status_t rc) {
  const StatusInfo* info = Find(rc);
  return info != nullptr ? info->code : StatusCode::kInternal;
}

Status AmdsmiError(std::string_view call, amdsmi_status_t rc,
                   amdsmi_status_code_to_string_fn to_string) {
  if (rc == kSuccess) return Status::Ok();
  std::string message;
  if (to_string != nullptr) {
    const char* text = nullptr;
    if (to_string(rc, &text) == kSuccess && text != nullptr) message = text;
  }
  if (message.empty()) message = std::string(StatusDescription(rc));
  return Status(StatusToStatusCode(rc), std::string(call) + ": " + message + " (" + StatusName(rc) +
                                            ", " + std::to_string(rc) + ")");
}

}  // namespace zeus::amdsmi
