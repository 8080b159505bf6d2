// The HTTP status a library Status answers with: one table with the layer's
// defaults, which each server extends or overrides for its own wire (the
// batch-size service answers invalid input 422, the daemon 400).
//
// Thread-safety: a value; const methods may be called concurrently.

#ifndef ZEUS_HTTP_STATUS_MAP_H_
#define ZEUS_HTTP_STATUS_MAP_H_

#include <array>
#include <initializer_list>
#include <utility>

#include "zeus/status.h"

namespace zeus {

class HttpStatusMap {
 public:
  // The defaults: ok 200, invalid_argument 400, not_found 404,
  // not_supported 501, permission_denied 403, already_exists, aborted and
  // failed_precondition 409, unavailable 503, io_error and internal 500;
  // then `overrides` in order.
  HttpStatusMap(std::initializer_list<std::pair<StatusCode, int>> overrides = {});

  // Answers `code` with `http_status` from now on.
  HttpStatusMap& Set(StatusCode code, int http_status);
  // The HTTP status for `code`; 500 for a code the table does not know.
  int operator()(StatusCode code) const;

 private:
  static constexpr size_t kCodes = static_cast<size_t>(StatusCode::kAborted) + 1;
  std::array<int, kCodes> table_{};
};

}  // namespace zeus

#endif  // ZEUS_HTTP_STATUS_MAP_H_
