#include "zeus/http/query.h"

#include <utility>

namespace zeus {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusOr<std::string> PercentDecode(std::string_view text, bool plus_is_space, BadEscape bad) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      const int high = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
      if (bad == BadEscape::kRefuse) {
        return InvalidArgumentError("query: bad %-escape in \"" + std::string(text.substr(0, 64)) +
                                    "\"");
      }
    }
    out += plus_is_space && text[i] == '+' ? ' ' : text[i];
  }
  return out;
}

StatusOr<HttpFields> ParseQuery(std::string_view query, BadEscape bad, bool refuse_repeats) {
  HttpFields params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    ZEUS_ASSIGN_OR_RETURN(std::string name, PercentDecode(item.substr(0, eq), true, bad));
    ZEUS_ASSIGN_OR_RETURN(
        std::string value,
        PercentDecode(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1), true,
                      bad));
    if (refuse_repeats) {
      for (const auto& [earlier, unused] : params) {
        if (earlier == name) {
          return InvalidArgumentError("query: parameter " + name.substr(0, 64) + " given twice");
        }
      }
    }
    params.emplace_back(std::move(name), std::move(value));
  }
  return params;
}

std::optional<std::string> RepeatedParam(const HttpFields& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (params[j].first == params[i].first) return params[i].first;
    }
  }
  return std::nullopt;
}

}  // namespace zeus
