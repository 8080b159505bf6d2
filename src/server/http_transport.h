// HTTP/1.1 over TCP without a thread per connection: an event loop
// (Boost.Beast on Boost.Asio) on a few I/O threads reads requests and writes
// answers; each complete request runs on a bounded pool of worker threads
// (the database work), one request per connection at a time.
//
// A connection waits for the first byte of its next request at most
// idle_timeout_s; from that byte on, the whole request (headers and body)
// must arrive within read_timeout_s, so a client that dribbles its headers a
// byte at a time (slowloris) is cut off and holds neither a worker nor the
// loop. Headers over max_header_bytes are answered 431, bodies over
// max_body_bytes 413 (before the body is read), malformed requests 400; each
// of these closes the connection after draining what the client still sends.
//
// Thread-safety: Start() and Stop() from one thread.

#ifndef ZEUS_SRC_SERVER_HTTP_TRANSPORT_H_
#define ZEUS_SRC_SERVER_HTTP_TRANSPORT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zeus/server/http_route.h"
#include "zeus/status.h"

namespace zeus::server_internal {

struct HttpTransportOptions {
  std::string host = "127.0.0.1";
  // 0 binds a free port.
  int port = 0;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 1 << 20;
  // > 0.
  double read_timeout_s = 5.0;
  // > 0.
  double idle_timeout_s = 60.0;
  // >= 1.
  int io_threads = 1;
  // >= 1.
  int worker_threads = 32;
  // Requests for these exact paths (e.g. "/health") run on a worker thread
  // of their own, so that they never wait behind the queue of other
  // requests: a health probe stays fast while clients flood the server.
  std::vector<std::string> priority_paths;
};

// Answers a complete request; runs on a worker thread.
using RequestCallback = std::function<HttpResponse(const HttpRequest&)>;
// Answers a request refused before it was complete (400, 413, 431) with
// `reason`; runs on an I/O thread and must not block. `request` holds what
// was parsed (method and path may be empty).
using RefusalCallback =
    std::function<HttpResponse(const HttpRequest& request, int status, const std::string& reason)>;

class Connection;

class HttpTransport {
 public:
  HttpTransport(HttpTransportOptions options, RequestCallback on_request,
                RefusalCallback on_refusal);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds (SO_REUSEADDR, never SO_REUSEPORT), listens and starts the I/O and
  // worker threads. kUnavailable naming the address and the reason when it
  // cannot bind.
  Status Start();
  // REQUIRES: Start() succeeded.
  int port() const;
  // Open connections now (for tests and metrics).
  size_t connections() const;
  // Stops accepting, closes idle connections, lets in-flight requests finish
  // and be answered (up to 10 s), then joins every thread. Idempotent.
  void Stop();

 private:
  friend class Connection;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_HTTP_TRANSPORT_H_
