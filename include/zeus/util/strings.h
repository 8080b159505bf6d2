// Small string helpers. Parsers return a Status naming the offending text.

#ifndef ZEUS_UTIL_STRINGS_H_
#define ZEUS_UTIL_STRINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

std::string_view Trim(std::string_view s);
std::string ToLower(std::string_view s);
// `text` with & < > " ' replaced by their HTML entities: safe in element
// content and in quoted attribute values.
std::string HtmlEscape(std::string_view text);
bool StartsWith(std::string_view s, std::string_view prefix);
// ASCII case-insensitive comparisons (HTTP field names, URL schemes).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// Splits on every `sep`; "a,,b" gives {"a", "", "b"}, "" gives {""}.
std::vector<std::string> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

// The offset of the first byte that cannot be in a UTF-8 text file: a control
// byte other than tab, newline and carriage return (NUL included), DEL, or a
// byte that is not part of a well-formed UTF-8 sequence (overlong forms and
// surrogates included); nullopt when `text` is such a text. Tells a binary
// file from a malformed text one, so errors can say which it is.
std::optional<size_t> FindNonTextByte(std::string_view text);

// Whole-string parsers (surrounding blanks allowed). The error is
// kInvalidArgument: "expected <kind>, got '<text>'".
StatusOr<int64_t> ParseInt64(std::string_view text);
StatusOr<uint64_t> ParseUint64(std::string_view text);
// Accepts "nan" and "inf" as strtod does.
StatusOr<double> ParseDouble(std::string_view text);

}  // namespace zeus

#endif  // ZEUS_UTIL_STRINGS_H_
