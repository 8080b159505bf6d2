// Translation of NVML return codes into Status: the one place that decides
// which StatusCode an NVML failure becomes.

#ifndef ZEUS_SRC_DEVICE_NVML_NVML_ERROR_H_
#define ZEUS_SRC_DEVICE_NVML_NVML_ERROR_H_

#include <string>
#include <string_view>

#include "zeus/status.h"

#include "src/device/nvml/nvml_api.h"

namespace zeus::nvml {

// The symbolic name of `rc`, e.g. "NVML_ERROR_NO_PERMISSION";
// "NVML_ERROR_<rc>" for a code this build does not know.
std::string ReturnCodeName(nvmlReturn_t rc);

// Our own description of `rc`, used when the library lacks nvmlErrorString.
std::string_view ReturnCodeDescription(nvmlReturn_t rc);

// The StatusCode an NVML failure maps to: NO_PERMISSION and OPERATING_SYSTEM
// -> kPermissionDenied; NOT_SUPPORTED and friends -> kNotSupported;
// GPU_IS_LOST, DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, UNINITIALIZED and other
// transient or environmental failures -> kUnavailable; INVALID_ARGUMENT ->
// kInvalidArgument; unknown codes -> kInternal. kOk for SUCCESS.
StatusCode ReturnCodeToStatusCode(nvmlReturn_t rc);

// The Status for NVML call `call` returning `rc`:
// "<call>: <NVML's message> (<NVML_ERROR_NAME>, <rc>)". NVML's message comes
// from `error_string` (the library's nvmlErrorString) when given, else from
// ReturnCodeDescription. OK for SUCCESS.
Status NvmlError(std::string_view call, nvmlReturn_t rc, nvmlErrorString_fn error_string = nullptr);

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_ERROR_H_
