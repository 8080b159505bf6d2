// The HTTP front of the batch-size optimizer server: the HTTP layer's
// transport (zeus/http/transport.h, an event loop that holds any number of
// idle keep-alive connections without a thread each), a bounded pool of
// worker threads that run the routes (the database work), and a route table
// (zeus/http/router.h: method + path -> handler over transport-independent
// HttpRequest / HttpResponse) to which other modules add routes.
//
// The API routes are thin: they parse JSON, call BatchSizeService and map
// its Status to an HTTP status with a JSON body `{"message": "..."}`:
//   400 malformed JSON or HTTP, 401 bad or missing token (when one is
//   configured), 404 unknown job or trial (or route), 405 a known route with
//   another method (with an `Allow` header), 409 conflicting job spec,
//   413 body over max_body_bytes (refused before it is read),
//   422 a body or query that fails validation (naming the field: values out
//   of their physical range, identifiers that are not printable text of at
//   most 256 bytes), 431 headers over max_header_bytes, 503 database
//   unavailable, 500 anything else.
// A request with neither Content-Length nor chunked Transfer-Encoding has an
// empty body (RFC 9112 6.3) and is answered at once.
//
// Routes (wire protocol of the original Zeus server, plus observability):
//   POST   /jobs                     register (201 created, 200 identical)
//   GET    /jobs/batch_size?job_id=  next trial {job_id, batch_size, trial_number}
//   POST   /report                   {stop_train, converged, message}
//   PATCH  /trials                   end a trial whose client died
//   DELETE /jobs?job_id=             the job and its trials
//   GET    /jobs[?job_id=]           all jobs, or one
//   GET    /trials?job_id=           the job's trials
//   GET    /jobs/arms?job_id=        exploration state and bandit arms
//   GET    /health                   {"status": "ok", "store": ..., "schema_version": ...};
//                                    never needs the token
//   GET    /metrics                  Prometheus text format (src/server/server_metrics.h);
//                                    needs the token when one is set
//   GET    / and /dashboard/...      the read-only dashboard (src/server/dashboard.h),
//                                    which takes the token as a header or a cookie
//
// Thread-safety: AddRoutes(), Start() and Stop() from one thread; requests
// are served on the server's own threads.

#ifndef ZEUS_SERVER_HTTP_SERVER_H_
#define ZEUS_SERVER_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_route.h"
#include "zeus/status.h"

namespace zeus {

// One answered request, for an access log.
struct AccessLogEntry {
  std::string method;
  // The path without the query, control characters escaped as \xNN.
  std::string path;
  int status = 0;
  // From the end of the request's headers to the answer; -1 when the
  // request was refused before routing (malformed request line).
  double latency_s = -1.0;
  std::string remote_addr;
};

struct HttpServerOptions {
  // Address to bind. Default: loopback only.
  std::string host = "127.0.0.1";
  // 0 binds a free port (see HttpServer::port()). Default: 0.
  int port = 0;
  // When set, every request but /health must carry
  // `Authorization: Bearer <token>` (the dashboard also takes it as a
  // cookie). Default: none.
  std::optional<std::string> token;
  // Larger request bodies are refused with 413 before they are read.
  // Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // Larger request heads (request line and header fields) are refused with
  // 431. Default: 16 KiB.
  size_t max_header_bytes = 16 * 1024;
  // Worker threads running the routes (database work); connections do not
  // hold one. Default: 32.
  int threads = 32;
  // Event-loop threads reading and writing connections. Default: 1.
  int io_threads = 1;
  // Once its first byte arrived, a request (headers and body) must be
  // complete within this, or the connection is closed (a slow sender holds
  // nothing longer); also the limit for writing an answer. > 0. Default: 5 s.
  double read_timeout_s = 5.0;
  // A keep-alive connection with no request for this long is closed. > 0.
  // Default: 60 s.
  double idle_timeout_s = 60.0;
  // The Chart.js 3 UMD file the dashboard serves (src/server/dashboard.h);
  // read at each request, so a missing file only costs the page its charts.
  // Default: Debian's libjs-chart.js.
  std::string dashboard_chartjs_path = "/usr/share/javascript/chart.js/chart.min.js";
  // Called on a worker or event-loop thread after each answered request
  // (may be called concurrently). Default: none (no access log).
  std::function<void(const AccessLogEntry&)> access_log;
};

class HttpServer {
 public:
  // `service` must outlive the server.
  HttpServer(BatchSizeService* service, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Adds routes beside the API's (e.g. a dashboard's `/`, `/static/`).
  // kAlreadyExists naming the method and path when a route with the same
  // method, path and match kind exists; kInvalidArgument for a route without
  // a handler or with a path not starting with '/'.
  // REQUIRES: before Start().
  Status AddRoutes(std::vector<HttpRoute> routes);

  // Binds and starts serving on background threads. kUnavailable naming the
  // address and the reason when it cannot be bound, e.g. when another
  // process already listens there (the socket is bound without
  // SO_REUSEPORT, so a second server can never share a port). Its
  // threads run on an alternate signal stack, so a fatal-signal handler
  // still runs after a stack overflow.
  Status Start();
  // The bound port. REQUIRES: Start() succeeded.
  int port() const { return port_; }
  // Stops accepting, closes idle connections, finishes and answers
  // in-flight requests (up to 10 s) and joins. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Reads a token file: its contents with surrounding whitespace removed.
// kInvalidArgument when the file is empty.
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace zeus

#endif  // ZEUS_SERVER_HTTP_SERVER_H_
