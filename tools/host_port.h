// Listening addresses of the long-running commands' flags (`zeus serve
// --listen`, `zeus daemon --tcp`).

#ifndef ZEUS_TOOLS_HOST_PORT_H_
#define ZEUS_TOOLS_HOST_PORT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "zeus/status.h"
#include "zeus/util/strings.h"

namespace zeus::cli {

// HOST:PORT or [IPV6]:PORT (port 0 to 65535); the host is returned without
// brackets. With a `default_host`, PORT and :PORT also parse, to that host
// (never to every interface); without one, the host is required. An IPv6
// address needs its brackets (::1:80 would be ambiguous). Errors name
// `flag` and the text.
inline StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& flag,
                                                           const std::string& text,
                                                           const std::string& default_host = "") {
  const std::string form = default_host.empty()
                               ? "HOST:PORT or [IPV6]:PORT"
                               : "[HOST:]PORT or [IPV6]:PORT (host default " + default_host + ")";
  const size_t colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  if (host.empty()) {
    if (default_host.empty()) {
      return InvalidArgumentError(flag + " \"" + text + "\": expected " + form);
    }
    host = default_host;
  } else if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return InvalidArgumentError(flag + " \"" + text + "\": expected [IPV6]:PORT");
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return InvalidArgumentError(flag + " \"" + text + "\": an IPv6 address needs brackets: [" +
                                host + "]:" + port_text);
  }
  StatusOr<int64_t> port = ParseInt64(port_text);
  if (!port.ok() || *port < 0 || *port > 65535) {
    return InvalidArgumentError(flag + " \"" + text + "\": port must be in [0, 65535] (expected " +
                                form + ")");
  }
  return std::make_pair(host, static_cast<int>(*port));
}

// `host`:`port` as a URL or a log writes it: an IPv6 address in brackets.
inline std::string HostPortString(const std::string& host, int port) {
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return shown + ":" + std::to_string(port);
}

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_HOST_PORT_H_
