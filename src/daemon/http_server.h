// The daemon's HTTP/1.1 server (Boost.Beast on Asio): a Unix socket, whose
// clients are known by their peer credentials, and optionally a TCP address.
// It bounds what a client can make it hold: header and body sizes (431 and
// 413), the time to send a request (408, then the connection closes) and the
// number of open connections (503).
//
// Thread-safety: Start/Stop from one thread; the handler is called from
// several I/O threads at once.

#ifndef ZEUS_SRC_DAEMON_HTTP_SERVER_H_
#define ZEUS_SRC_DAEMON_HTTP_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <sys/types.h>

#include "zeus/status.h"

#include "src/daemon/peer.h"

namespace zeus::daemon {

struct HttpRequest {
  std::string method;
  // Path and query, e.g. "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=1".
  std::string target;
  std::string body;
  Peer peer;
  // The Authorization header ("" when absent).
  std::string authorization;
};

// The body of a streamed response (Server-Sent Events): the session writes
// the header, then whatever TakeEvents returns as chunks, each time `wake`
// is called, until Ended() (then the last chunk, and the connection closes)
// or the client goes away (then the session drops the stream; destroying it
// is the producer's cue to forget this reader).
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Called once by the session before it takes events; `wake` may be called
  // from any thread, any number of times, until the stream is destroyed.
  virtual void SetWake(std::function<void()> wake) = 0;
  // The events queued since the last call, as bytes to send ("" if none).
  virtual std::string TakeEvents() = 0;
  virtual bool Ended() const = 0;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string response_body, std::string type = "application/json")
      : status(status_code), body(std::move(response_body)), content_type(std::move(type)) {}

  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  // Non-null: a 200 streamed response of `content_type`; `body` unused.
  std::shared_ptr<EventStream> stream;
  // Extra header (e.g. WWW-Authenticate), sent when both are set.
  std::string extra_header_name, extra_header_value;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // The Unix socket to create (its directory is created when missing; a stale
  // socket file is replaced). Required.
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
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. kIoError naming the address when binding fails.
  Status Start();
  // Stops serving and removes the socket file. Streams still open get up to
  // 1 s to end (their producers should have ended them first). Idempotent.
  void Stop();
  // Streamed responses being sent now.
  int open_streams() const;
  // The bound TCP port, or -1 without TCP.
  int tcp_port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_HTTP_SERVER_H_
