// Query strings and percent-encoding, decoded once for every server.
//
// Thread-safety: free functions, no shared state.

#ifndef ZEUS_HTTP_QUERY_H_
#define ZEUS_HTTP_QUERY_H_

#include <optional>
#include <string>
#include <string_view>

#include "zeus/http/message.h"
#include "zeus/status.h"

namespace zeus {

// What a '%' not followed by two hex digits means.
enum class BadEscape {
  // Kept as it is ("%zz" stays "%zz"); the batch-size service's reading.
  kKeep,
  // Refused: kInvalidArgument "query: bad %-escape in \"<item>\"" naming the
  // name or value (its first 64 bytes); the daemon's reading.
  kRefuse,
};

// `text` with its %XX escapes decoded, and '+' read as a space when
// `plus_is_space` (query strings; not paths).
StatusOr<std::string> PercentDecode(std::string_view text, bool plus_is_space, BadEscape bad);

// `text` with every byte but RFC 3986's unreserved ones (letters, digits,
// "-._~") written as %XX (upper-case hex): safe as a query name or value and
// as a path segment.
std::string PercentEncode(std::string_view text);

// Splits "a=1&b=x%20y" into its parameters in order, percent-decoding names
// and values ('+' is a space); empty items ("a=1&&b=2") are skipped and a
// name without '=' has the value "". With `refuse_repeats`, a name given
// twice is kInvalidArgument "query: parameter <name> given twice" (the first
// 64 bytes of the name), reported at the second occurrence, in order with bad
// escapes.
StatusOr<HttpFields> ParseQuery(std::string_view query, BadEscape bad = BadEscape::kKeep,
                                bool refuse_repeats = false);

// The first parameter whose name an earlier one has already, or nullopt.
std::optional<std::string> RepeatedParam(const HttpFields& params);

}  // namespace zeus

#endif  // ZEUS_HTTP_QUERY_H_
