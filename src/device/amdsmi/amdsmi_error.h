// Translation of AMD SMI status codes into Status: the one place that decides
// which StatusCode an AMD SMI failure becomes.

#ifndef ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_ERROR_H_
#define ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_ERROR_H_

#include <string>
#include <string_view>

#include "zeus/status.h"

#include "src/device/amdsmi/amdsmi_api.h"

namespace zeus::amdsmi {

// The symbolic name of `rc`, e.g. "AMDSMI_STATUS_NO_PERM";
// "AMDSMI_STATUS_<rc>" for a code this build does not know.
std::string StatusName(amdsmi_status_t rc);

// Our own description of `rc`, used when the library lacks
// amdsmi_status_code_to_string.
std::string_view StatusDescription(amdsmi_status_t rc);

// The StatusCode an AMD SMI failure maps to: NO_PERM -> kPermissionDenied;
// NOT_SUPPORTED, NOT_YET_IMPLEMENTED, SETTING_UNAVAILABLE -> kNotSupported;
// INVAL, INPUT_OUT_OF_BOUNDS, ARG_PTR_NULL -> kInvalidArgument; NOT_FOUND ->
// kNotFound; BUSY -> kFailedPrecondition; IO, FILE_ERROR -> kIoError; load,
// init, driver and transient failures -> kUnavailable; anything else ->
// kInternal. kOk for SUCCESS.
StatusCode StatusToStatusCode(amdsmi_status_t rc);

// The Status for AMD SMI call `call` returning `rc`:
// "<call>: <AMD SMI's message> (<AMDSMI_STATUS_NAME>, <rc>)". The message
// comes from `to_string` (the library's amdsmi_status_code_to_string) when
// given and it answers, else from StatusDescription. OK for SUCCESS.
Status AmdsmiError(std::string_view call, amdsmi_status_t rc,
                   amdsmi_status_code_to_string_fn to_string = nullptr);

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_ERROR_H_
