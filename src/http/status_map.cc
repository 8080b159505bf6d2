#include "zeus/http/status_map.h"

namespace zeus {

HttpStatusMap::HttpStatusMap(std::initializer_list<std::pair<StatusCode, int>> overrides) {
  table_.fill(500);
  Set(StatusCode::kOk, 200);
  Set(StatusCode::kInvalidArgument, 400);
  Set(StatusCode::kNotFound, 404);
  Set(StatusCode::kNotSupported, 501);
  Set(StatusCode::kPermissionDenied, 403);
  Set(StatusCode::kAlreadyExists, 409);
  Set(StatusCode::kAborted, 409);
  Set(StatusCode::kFailedPrecondition, 409);
  Set(StatusCode::kUnavailable, 503);
  for (const auto& [code, http_status] : overrides) Set(code, http_status);
}

HttpStatusMap& HttpStatusMap::Set(StatusCode code, int http_status) {
  const size_t index = static_cast<size_t>(code);
  if (index < kCodes) table_[index] = http_status;
  return *this;
}

int HttpStatusMap::operator()(StatusCode code) const {
  const size_t index = static_cast<size_t>(code);
  return index < kCodes ? table_[index] : 500;
}

}  // namespace zeus
