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

#include <memory>
#include <vector>

#include "zeus/daemon/daemon.h"
#include "zeus/http/router.h"
#include "zeus/status.h"

namespace zeus::daemon {

class HttpServer {
 public:
  // Serves `routes`, matched on the path as sent (not percent-decoded), and
  // `not_found` for a path none matches; a handler that throws is answered
  // 500 {"error": "internal error: ..."}.
  // The sockets and limits are the daemon's (`options`: socket_path, its
  // group and mode, tcp_host/tcp_port, max_body_bytes, request_timeout,
  // max_connections, each for TCP, for root and the control group on the
  // Unix socket, and for everyone else there; request heads up to 8 KiB;
  // 4 I/O threads); a stale
  // socket file is replaced, a live one refused (ClaimSocketPath).
  // `options` must outlive the server.
  HttpServer(const DaemonOptions& options, std::vector<HttpRoute> routes, HttpHandler not_found);
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
