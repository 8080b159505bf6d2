// Reading the top-level object of a batch-size request or answer while
// tolerating fields this version does not know, as the original Zeus server
// does (its request models ignore unknown fields): a client written against a
// newer or older protocol may send `seed` at registration or `max_power` in a
// report. Documents Zeus itself stored (job specs in the database) are read
// strictly instead.
//
// Thread-safety: pure function.

#ifndef ZEUS_SRC_PROTOCOL_WIRE_FIELDS_H_
#define ZEUS_SRC_PROTOCOL_WIRE_FIELDS_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"
#include "zeus/util/json.h"

namespace zeus::server_internal {

// A reader for `body`, which must be an object. With `ignored_fields` null, a
// field outside `known` is kInvalidArgument naming it (JsonFields::Of's
// rule). Otherwise such fields are appended to `*ignored_fields` (names cut
// to 64 bytes, control characters escaped) and left unread; the fields in
// `known` keep every check of their readers.
// REQUIRES: `body` outlives the reader.
StatusOr<JsonFields> WireFields(const nlohmann::json& body, std::string context,
                                std::initializer_list<std::string_view> known,
                                std::vector<std::string>* ignored_fields);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_PROTOCOL_WIRE_FIELDS_H_
