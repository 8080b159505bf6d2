// Raw sockets for tests and benchmarks that must send what no HTTP client
// would: malformed, dribbled, pipelined or oversized requests, connections
// held open or shared across fork(). Loopback and Unix sockets only.
//
// Thread-safety: a RawClient is used by one thread at a time.

#ifndef ZEUS_TESTS_TESTING_RAW_SOCKET_H_
#define ZEUS_TESTS_TESTING_RAW_SOCKET_H_

#include <string>
#include <string_view>

namespace zeus::testing {

// A connected stream socket (close-on-exec) to 127.0.0.1:`port`, or -1.
int ConnectLoopback(int port);
// A connected stream socket to the Unix socket at `path`, or -1.
int ConnectUnix(const std::string& path);
// Writes all of `data` without SIGPIPE; false when the peer went away first.
bool SendAll(int fd, std::string_view data);
// Reads one whole response: the head, then Content-Length bytes of body.
// "" when the connection ends or `timeout_s` passes before it is complete.
std::string ReadOneResponse(int fd, double timeout_s);
// Reads until the peer closes the connection or `timeout_s` passes.
std::string ReadToClose(int fd, double timeout_s);

// One connection whose received bytes accumulate. Closes it when destroyed.
class RawClient {
 public:
  // TCP to 127.0.0.1:`port`.
  explicit RawClient(int port);
  // The Unix socket at `path`.
  explicit RawClient(const std::string& path);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool Send(std::string_view data) { return SendAll(fd_, data); }
  // Reads until `marker` has been received, the peer closes, or `timeout_s`
  // passes; returns everything received so far.
  std::string ReadUntil(const std::string& marker, double timeout_s);
  // True when the peer closed the connection (EOF or reset) within
  // `timeout_s`; what it sent before is kept.
  bool ClosedWithin(double timeout_s);
  const std::string& received() const { return received_; }

 private:
  // False on timeout or close.
  bool ReadSome(int timeout_ms);

  int fd_;
  bool closed_ = false;
  std::string received_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_TESTING_RAW_SOCKET_H_
