#include "src/device/zeusd/zeusd_client.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "zeus/util/json.h"

namespace zeus::zeusd {
namespace {

// The daemon's {"error": "..."} message, or the body as it is.
std::string ErrorMessage(const std::string& body) {
  StatusOr<nlohmann::json> doc = ParseJson(body, "zeusd answer", JsonLimits{1 << 20, 8});
  if (doc.ok() && doc->is_object()) {
    StatusOr<JsonFields> fields = JsonFields::Of(*doc, "zeusd answer");
    if (fields.ok()) {
      StatusOr<std::optional<std::string>> error = fields->OptionalString("error");
      if (error.ok() && error->has_value()) return **error;
    }
  }
  return body.empty() ? "(no message)" : body.substr(0, 512);
}

}  // namespace

StatusOr<std::string> Request(const std::string& socket_path, const std::string& method,
                              const std::string& target) {
  const std::string context = "zeusd at " + socket_path + ": " + method + " " + target;
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError(context + ": socket path too long");
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(context + ": socket: " + std::strerror(errno));
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return UnavailableError(context + ": cannot connect: " + std::strerror(err) +
                            " (is `zeus daemon` running? unset " + kSockPathEnv +
                            " to use the device directly)");
  }
  std::string authorization;
  if (const char* token = std::getenv(kTokenEnv); token != nullptr && *token != '\0') {
    for (const char* c = token; *c != '\0'; ++c) {
      if (static_cast<unsigned char>(*c) <= ' ' || *c == 0x7f) {
        close(fd);
        return InvalidArgumentError(context + ": " + kTokenEnv +
                                    " holds a space or control character; expected a JWT");
      }
    }
    authorization = std::string("Authorization: Bearer ") + token + "\r\n";
  }
  const std::string request = method + " " + target +
                              " HTTP/1.1\r\nHost: zeusd\r\nConnection: close\r\n" + authorization +
                              "Content-Length: 0\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return UnavailableError(context + ": send: " + std::strerror(err));
    }
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buffer[4096];
  while (answer.size() < (1u << 20)) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return UnavailableError(context + ": no answer: " + std::strerror(err));
    }
    if (n == 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (answer.compare(0, 5, "HTTP/") != 0 || answer.find(' ') == std::string::npos) {
    return UnavailableError(context + ": not an HTTP answer");
  }
  const int status = std::atoi(answer.c_str() + answer.find(' ') + 1);
  const size_t end = answer.find("\r\n\r\n");
  const std::string body = end == std::string::npos ? "" : answer.substr(end + 4);
  if (status == 200) return body;
  const std::string message =
      context + ": HTTP " + std::to_string(status) + ": " + ErrorMessage(body);
  switch (status) {
    case 400:
      return InvalidArgumentError(message);
    case 401:
      return PermissionDeniedError(message + " (the daemon requires a bearer token: set " +
                                   kTokenEnv + ", e.g. from `zeus daemon token issue`)");
    case 403:
      return PermissionDeniedError(message);
    case 404:
      return NotSupportedError(message);
    case 409:
      return FailedPreconditionError(message);
    default:
      return UnavailableError(message);
  }
}

}  // namespace zeus::zeusd
