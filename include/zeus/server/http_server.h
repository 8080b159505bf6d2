// The HTTP front of the batch-size optimizer server (cpp-httplib): thin
// routes that parse JSON, call BatchSizeService and map its Status to an
// HTTP status with a JSON body `{"message": "..."}`:
//   400 malformed JSON, 401 bad or missing token (when one is configured),
//   404 unknown job or trial (or route), 409 conflicting job spec,
//   413 body over the size limit, 422 a body or query that fails validation
//   (naming the field), 503 database unavailable, 500 anything else.
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
//
// Thread-safety: Start() and Stop() from one thread; requests are served on
// the server's own thread pool.

#ifndef ZEUS_SERVER_HTTP_SERVER_H_
#define ZEUS_SERVER_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "zeus/server/batch_size_service.h"
#include "zeus/status.h"

namespace zeus {

struct HttpServerOptions {
  // Address to bind. Default: loopback only.
  std::string host = "127.0.0.1";
  // 0 binds a free port (see HttpServer::port()). Default: 0.
  int port = 0;
  // When set, every request but /health must carry
  // `Authorization: Bearer <token>`. Default: none.
  std::optional<std::string> token;
  // Larger request bodies are refused with 413. Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // Worker threads; each keep-alive connection holds one while open.
  // Default: 128.
  int threads = 128;
};

class HttpServer {
 public:
  // `service` must outlive the server.
  HttpServer(BatchSizeService* service, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a background thread. kUnavailable when the
  // address cannot be bound.
  Status Start();
  // The bound port. REQUIRES: Start() succeeded.
  int port() const { return port_; }
  // Stops accepting, finishes in-flight requests and joins. Idempotent.
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
