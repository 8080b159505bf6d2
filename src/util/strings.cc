#include "zeus/util/strings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace zeus {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(s.substr(start));
      return parts;
    }
    parts.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::optional<size_t> FindNonTextByte(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7f) {
        return i;
      }
      ++i;
      continue;
    }
    // Lead byte: the sequence length and the range of the second byte (which
    // excludes overlong forms, surrogates and code points above U+10FFFF).
    size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xbf;
    if (byte >= 0xc2 && byte <= 0xdf) {
      length = 2;
    } else if (byte >= 0xe0 && byte <= 0xef) {
      length = 3;
      if (byte == 0xe0) low = 0xa0;
      if (byte == 0xed) high = 0x9f;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      length = 4;
      if (byte == 0xf0) low = 0x90;
      if (byte == 0xf4) high = 0x8f;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < low || second > high) return i;
    for (size_t k = 2; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return std::nullopt;
}

namespace {

Status ParseError(std::string_view kind, std::string_view text) {
  return InvalidArgumentError("expected " + std::string(kind) + ", got '" + std::string(text) +
                              "'");
}

}  // namespace

StatusOr<int64_t> ParseInt64(std::string_view text) {
  std::string s(Trim(text));
  if (s.empty()) return ParseError("an integer", text);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return ParseError("an integer", text);
  return static_cast<int64_t>(v);
}

StatusOr<uint64_t> ParseUint64(std::string_view text) {
  std::string s(Trim(text));
  if (s.empty() || s[0] == '-') return ParseError("a non-negative integer", text);
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return ParseError("a non-negative integer", text);
  return static_cast<uint64_t>(v);
}

StatusOr<double> ParseDouble(std::string_view text) {
  std::string s(Trim(text));
  if (s.empty()) return ParseError("a number", text);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || end != s.c_str() + s.size()) return ParseError("a number", text);
  return v;
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace zeus
