// HTTP/1.1 without a thread per connection: an event loop (Boost.Beast on
// Boost.Asio, hidden in src/http/transport.cc) on a few I/O threads accepts
// on TCP and/or a Unix socket, reads requests and writes answers; each
// complete request is answered by a callback, on a bounded pool of worker
// threads (blocking work such as a database) or directly on the I/O thread
// (quick answers), one request per connection at a time.
//
// It bounds what a client can make it hold: the request head
// (max_header_bytes, 431) and body (max_body_bytes, 413, refused before the
// body is read), the time to start a request (idle_timeout) and to send all
// of it (read_timeout: a client that dribbles its headers a byte at a time is
// cut off, or answered 408), the time to read an answer (write_timeout), and
// the number of open connections (503). Malformed requests are answered 400.
// Each refusal closes the connection.
//
// A response with a stream (HttpResponse::stream, Server-Sent Events) is sent
// chunked (HTTP/1.1; HTTP/1.0: until the connection closes) as its events
// come; a reader that stops reading for write_timeout is cut off.
//
// Thread-safety: Start() and Stop() from one thread; the callbacks are called
// from several threads at once.

#ifndef ZEUS_HTTP_TRANSPORT_H_
#define ZEUS_HTTP_TRANSPORT_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/http/message.h"
#include "zeus/status.h"

namespace zeus {

struct HttpTransportOptions {
  // Names the server in log lines and bind errors, e.g. "zeus serve".
  std::string name = "http";
  // TCP address; a host name is resolved. Default: loopback.
  std::string tcp_host = "127.0.0.1";
  // -1: no TCP listener; 0: any free port (see HttpTransport::tcp_port()).
  // Default: 0.
  int tcp_port = 0;
  // The Unix socket to create; "" for none. Its directory is created (0755)
  // when missing; `claim_unix_socket` runs before binding (e.g. to replace a
  // stale socket file and refuse a live one); the file is removed by Stop().
  // Default: none.
  std::string unix_socket_path;
  std::function<Status(const std::string& path)> claim_unix_socket;
  // Mode and owner group of the socket file. Default: 0666, group unchanged.
  mode_t unix_socket_mode = 0666;
  std::optional<gid_t> unix_socket_group;

  // Larger request heads (request line and header fields) are refused with
  // 431. Default: 16 KiB.
  size_t max_header_bytes = 16 * 1024;
  // Larger request bodies are refused with 413 before they are read.
  // Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // A connection with no request started for this long is closed. > 0.
  // Default: 60 s.
  std::chrono::milliseconds idle_timeout{60'000};
  // Once its first byte arrived (or, with read_deadline_includes_idle, once
  // the connection started waiting for it), a request (head and body) must
  // be complete within this. > 0. Default: 5 s.
  std::chrono::milliseconds read_timeout{5'000};
  bool read_deadline_includes_idle = false;
  // An answer (or a streamed chunk) must be written within this. > 0.
  // Default: 5 s.
  std::chrono::milliseconds write_timeout{5'000};
  // A request not complete within read_timeout is answered 408 (through
  // on_refusal) instead of the connection just closing. Default: false.
  bool answer_read_timeout = false;
  // Open connections beyond this, counted per budget, are answered 503
  // (through on_refusal) without reading a request, and closed: TCP is one
  // budget, and the Unix socket has one per value of unix_budget (one in
  // all without it). 0: no limit. Default: 0.
  int max_connections = 0;
  // The budget a Unix-socket connection counts against, from its peer's
  // credentials, so that one kind of local peer cannot take the connections
  // of another (e.g. readers those of the peers who may change settings).
  // Called once per connection, on an I/O thread; must be quick. Default:
  // unset (one budget).
  std::function<int(const Peer& peer)> unix_budget;

  // Event-loop threads. >= 1. Default: 1.
  int io_threads = 1;
  // Worker threads running on_request; 0 runs it on the I/O thread (it must
  // then be quick). Default: 0.
  int worker_threads = 0;
  // Requests for these exact paths (e.g. "/health") run on a worker thread
  // of their own, so that they never wait behind the queue of other
  // requests. Only with worker_threads > 0.
  std::vector<std::string> priority_paths;

  // Wire details, kept per server so each answers as it always did:
  // HttpRequest::path is percent-decoded, else the path as sent;
  bool decode_path = true;
  // a `Server` header field on every answer (none when empty);
  std::string server_header;
  // answers carry the request's HTTP version (1.0 or 1.1), else always 1.1;
  bool echo_http_version = false;
  // an answer to HEAD has no body (its Content-Length is the GET's);
  bool omit_body_for_head = true;
  // `Expect: 100-continue` is answered "100 Continue" before the body is
  // read;
  bool answer_expect_continue = true;
  // after a refusal (400, 408, 413, 431) the connection is half-closed and
  // what the client still sends is read and dropped (up to 64 MiB, 2 s) so
  // that it reads the answer, rather than closed at once.
  bool drain_after_refusal = true;
  // How long Stop() waits for in-flight requests and streams. Default: 10 s.
  std::chrono::milliseconds stop_grace{10'000};
};

// Why a request was refused before it was complete.
enum class HttpRefusal {
  kMalformed,           // 400
  kHeadTooLarge,        // 431
  kBodyTooLarge,        // 413
  kTimeout,             // 408
  kTooManyConnections,  // 503
};

// Answers a complete request.
using HttpRequestCallback = std::function<HttpResponse(const HttpRequest&)>;
// Answers a refused request (`detail`: the parser's message for kMalformed);
// runs on an I/O thread and must not block. `request` holds what was parsed
// (method and path may be empty) and the peer.
using HttpRefusalCallback = std::function<HttpResponse(
    const HttpRequest& request, HttpRefusal refusal, const std::string& detail)>;

class HttpTransport {
 public:
  HttpTransport(HttpTransportOptions options, HttpRequestCallback on_request,
                HttpRefusalCallback on_refusal);
  // Stops.
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds (TCP with SO_REUSEADDR, never SO_REUSEPORT), listens and starts the
  // threads, which run on an alternate signal stack (a fatal-signal handler
  // still runs after a stack overflow). TCP: kUnavailable "http: cannot bind
  // <address>: <reason>"; Unix socket: kIoError naming the path and the
  // failing step, or what claim_unix_socket returned. Call once.
  Status Start();
  // The bound TCP port, or -1 without TCP. REQUIRES: Start() succeeded.
  int tcp_port() const;
  // Open connections now.
  size_t connections() const;
  // Streamed responses being sent now.
  int open_streams() const;
  // Stops accepting, closes idle connections, lets in-flight requests be
  // answered and streams end (up to stop_grace), then joins every thread and
  // removes the Unix socket file. Idempotent.
  void Stop();

  // Opaque (src/http/transport.cc); named here so that its connections can
  // refer to it.
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace zeus

#endif  // ZEUS_HTTP_TRANSPORT_H_
