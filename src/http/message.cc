#include "zeus/http/message.h"

#include <cstdio>

#include "zeus/util/strings.h"

namespace zeus {

std::optional<std::string> HttpRequest::Param(std::string_view name) const {
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return std::nullopt;
}

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

HttpResponse JsonResponse(int status, std::string json_text) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(json_text);
  return response;
}

std::string EscapeControl(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace zeus
