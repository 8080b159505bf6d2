#include "tests/testing/raw_socket.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace zeus::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

int ConnectTo(int domain, const sockaddr* address, socklen_t length) {
  const int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, address, length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int MillisecondsLeft(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

SteadyClock::time_point DeadlineIn(double timeout_s) {
  return SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                  std::chrono::duration<double>(timeout_s));
}

// Appends what arrives within `timeout_ms` to `data`; false on timeout,
// EOF or error.
bool ReadSomeInto(int fd, int timeout_ms, std::string* data) {
  pollfd p{fd, POLLIN, 0};
  if (timeout_ms <= 0 || poll(&p, 1, timeout_ms) <= 0) return false;
  char buffer[4096];
  const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
  if (n <= 0) return false;
  data->append(buffer, static_cast<size_t>(n));
  return true;
}

}  // namespace

int ConnectLoopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ConnectTo(AF_INET, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
}

int ConnectUnix(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  return ConnectTo(AF_UNIX, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
}

bool SendAll(int fd, std::string_view data) {
  if (fd < 0) return false;
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadOneResponse(int fd, double timeout_s) {
  const auto deadline = DeadlineIn(timeout_s);
  std::string data;
  while (true) {
    const size_t end = data.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t length_at = data.find("Content-Length: ");
      const size_t length = length_at == std::string::npos || length_at > end
                                ? 0
                                : std::strtoul(data.c_str() + length_at + 16, nullptr, 10);
      if (data.size() >= end + 4 + length) return data.substr(0, end + 4 + length);
    }
    if (!ReadSomeInto(fd, MillisecondsLeft(deadline), &data)) return "";
  }
}

std::string ReadToClose(int fd, double timeout_s) {
  const auto deadline = DeadlineIn(timeout_s);
  std::string data;
  while (ReadSomeInto(fd, MillisecondsLeft(deadline), &data)) {
  }
  return data;
}

RawClient::RawClient(int port) : fd_(ConnectLoopback(port)) {}

RawClient::RawClient(const std::string& path) : fd_(ConnectUnix(path)) {}

RawClient::~RawClient() {
  if (fd_ >= 0) close(fd_);
}

std::string RawClient::ReadUntil(const std::string& marker, double timeout_s) {
  const auto deadline = DeadlineIn(timeout_s);
  while (received_.find(marker) == std::string::npos) {
    if (!ReadSome(MillisecondsLeft(deadline))) break;
  }
  return received_;
}

bool RawClient::ClosedWithin(double timeout_s) {
  const auto deadline = DeadlineIn(timeout_s);
  while (true) {
    const int left_ms = MillisecondsLeft(deadline);
    if (left_ms <= 0) return false;
    if (!ReadSome(left_ms)) return closed_;
  }
}

bool RawClient::ReadSome(int timeout_ms) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (timeout_ms <= 0 || poll(&p, 1, timeout_ms) <= 0) return false;
  char buffer[4096];
  const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
  if (n <= 0) {
    closed_ = true;
    return false;
  }
  received_.append(buffer, static_cast<size_t>(n));
  return true;
}

}  // namespace zeus::testing
