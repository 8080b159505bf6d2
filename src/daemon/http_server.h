// The daemon's HTTP server: the HTTP layer's transport (zeus/http/transport.h)
// on a Unix socket, whose clients are known by their peer credentials, and
// optionally a TCP address, answering with the daemon's route table. It keeps
// the daemon's wire: a `Server: zeusd (zeus daemon)` field, the request's HTTP
// version echoed, error bodies {"error": "..."}, and the bounds on what a
// client can make it hold: header and body sizes (431 and 413), the time to
// send a request (408, then the connection closes) and the number of open
// connections (503). Requests are answered on the I/O threads.
//
// Thread-safety: Start/Stop from one thread; the routes are called from
// several I/O threads at once.

#ifndef ZEUS_SRC_DAEMON_HTTP_SERVER_H_
#define ZEUS_SRC_DAEMON_HTTP_SERVER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/http/router.h"
#include "zeus/status.h"

namespace zeus::daemon {

struct HttpServerOptions {
  // The Unix socket to create (its directory is created when missing; a stale
  // socket file is replaced, a live one refused: ClaimSocketPath). Required.
  std::string socket_path;
  // Owner group and mode of the socket file. Default: unchanged group, 0666
  // (the daemon authorises each request by its peer credentials).
  std::optional<gid_t> socket_group;
  mode_t socket_mode = 0666;
  // TCP address; port -1: no TCP, 0: any free port. Default: no TCP.
  std::string tcp_host = "127.0.0.1";
  int tcp_port = -1;
  // Largest accepted body. Default: 64 KiB.
  size_t max_body_bytes = 64 * 1024;
  // Largest accepted request line plus headers. Default: 8 KiB.
  size_t max_header_bytes = 8 * 1024;
  // Time a client has to send one whole request (and, between requests on a
  // kept-alive connection, to start the next). Default: 5 s.
  std::chrono::milliseconds request_timeout{5000};
  // Open connections beyond this are answered 503 and closed. Default: 512.
  int max_connections = 512;
  // I/O threads. Default: 4.
  int threads = 4;
};

class HttpServer {
 public:
  // Serves `routes`, matched on the path as sent (not percent-decoded), and
  // `not_found` for a path none matches; a handler that throws is answered
  // 500 {"error": "internal error: ..."}.
  HttpServer(HttpServerOptions options, std::vector<HttpRoute> routes, HttpHandler not_found);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. kIoError naming the socket path, or
  // kUnavailable naming the TCP address, when binding fails.
  Status Start();
  // Stops serving and removes the socket file. Streams still open get up to
  // 1 s to end (their producers should have ended them first). Idempotent.
  void Stop();
  // Streamed responses being sent now.
  int open_streams() const;
  // The bound TCP port, or -1 without TCP.
  int tcp_port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_HTTP_SERVER_H_
