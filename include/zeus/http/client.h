// The one HTTP/1.1 client of Zeus: the batch-size client, the daemon relays
// (a Unix socket) and the trace downloads (https, redirects, progress) all go
// through HttpClient.
//
//   HttpClientOptions options;
//   options.timeout_s = 5;
//   HttpClient client(options);
//   ZEUS_ASSIGN_OR_RETURN(HttpClientResponse answer,
//                         client.Send({"POST", "http://127.0.0.1:8000/report", {}, body}));
//   if (answer.status != 200) ...
//
// Every answer the server gives is returned, whatever its status; a Status
// error means there was no usable answer, and its message reads
// "<METHOD> <url>[ via unix socket <path>]: <what failed>" (a malformed URL:
// "URL '<url>': <what is wrong>"):
//   kInvalidArgument  malformed URL, unsupported scheme, https without a
//                     TlsContext or over a Unix socket, a header field
//                     with a line break, a socket path too long
//   kUnavailable      connection refused, name not resolved, deadline passed
//                     ("timed out after 5 s ..."), TLS handshake or
//                     certificate verification failed, connection closed
//                     before a complete answer, malformed answer, too many
//                     redirects
//   kIoError          the answer's body exceeds max_body_bytes (or its head
//                     max_header_bytes)
//   kInternal         out of memory or of a system resource (an exception
//                     of Asio or the standard library, caught)
// Nothing throws out of this API.
//
// Implemented with Boost.Beast over Asio and, for https, Boost.Asio SSL over
// OpenSSL (src/http/client_tls.cc); none of them appears here.
//
// Thread-safety: an HttpClient is not thread-safe (one per thread); a
// TlsContext is immutable and may be shared by clients on any thread.

#ifndef ZEUS_HTTP_CLIENT_H_
#define ZEUS_HTTP_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// Header fields in order, names as given.
using HttpClientFields = std::vector<std::pair<std::string, std::string>>;

// Trust settings for https:// URLs (an OpenSSL context). The peer's chain is
// verified against the trusted certificates, and its name against the URL's
// host (a DNS name, or an IP address against the certificate's IP entries);
// the host name is sent as SNI. Created only by the functions below; the
// TLS code is linked into a binary only when one of them is called.
class TlsContext;

// The system's CA store (OpenSSL's default paths, /etc/ssl/certs on Debian).
// kUnavailable when OpenSSL cannot set up a context.
StatusOr<std::shared_ptr<TlsContext>> SystemTlsContext();

// Trusts only the PEM certificates in `ca_pem_file` (a private CA, a test's
// self-signed certificate). kInvalidArgument naming the file when it cannot
// be read or holds no certificate.
StatusOr<std::shared_ptr<TlsContext>> TlsContextTrusting(const std::string& ca_pem_file);

// (body bytes received so far, Content-Length or 0 when the answer has none).
using HttpProgress = std::function<void(uint64_t received, uint64_t total)>;

struct HttpClientOptions {
  // Deadline of one request, in s: connecting (and the TLS handshake),
  // sending and receiving the whole answer; redirects followed within one
  // Send() share it. 0: no deadline (set the two below then). Default: 30.
  double timeout_s = 30.0;
  // Longest wait for a connection (and TLS handshake) to complete, in s,
  // within the deadline. 0: only the deadline. Default: 0.
  double connect_timeout_s = 0.0;
  // Longest wait for the next bytes of the answer, in s (a stalled transfer
  // fails after it however long the deadline). 0: only the deadline.
  // Default: 0.
  double idle_timeout_s = 0.0;
  // Largest accepted answer body in bytes, whether announced by
  // Content-Length or arriving in chunks. Default: 64 MiB.
  uint64_t max_body_bytes = uint64_t{64} << 20;
  // Largest accepted status line and header fields, in bytes. Default: 64 KiB.
  uint32_t max_header_bytes = 64u << 10;
  // Redirects (301, 302, 303, 307, 308 with a Location) followed by one
  // Send(); 0 returns the 3xx answer as it is. 303, and 301/302 of a POST,
  // continue as GET without a body; Authorization is dropped when a redirect
  // leaves the original scheme, host and port. Default: 0.
  int max_redirects = 0;
  // Called as the answer's body arrives (on the calling thread). Default: none.
  HttpProgress progress;
  // Keeps a connection open after an answer that allows it and reuses it for
  // the next request to the same scheme, host and port (or socket), unless
  // the server has closed it meanwhile. If the server closes a reused
  // connection as the request goes out (no byte of an answer read), an
  // idempotent request (GET, HEAD, PUT, DELETE, OPTIONS) is sent once more
  // on a new connection; others fail kUnavailable. false sends
  // `Connection: close` and uses one connection per request. Default: true.
  bool keep_alive = true;
  // When not empty, every request connects to this Unix socket instead of
  // the URL's host and port; the URL still gives the Host header and the
  // target ("http://zeusd/discover"). https is refused. Default: empty.
  std::string unix_socket_path;
  // Trust for https:// URLs; https without it is kInvalidArgument. Default:
  // none.
  std::shared_ptr<TlsContext> tls;
  // Sent as User-Agent when not empty. Default: "zeus".
  std::string user_agent = "zeus";
};

struct HttpClientRequest {
  // "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD".
  std::string method = "GET";
  // "http://HOST[:PORT][/PATH][?QUERY]" or "https://..."; HOST may be a name,
  // an IPv4 address or a bracketed IPv6 address.
  std::string url;
  // Further header fields (Authorization, Content-Type, ...). Host,
  // User-Agent, Content-Length and Connection are set by the client.
  HttpClientFields headers;
  // Sent with its Content-Length.
  std::string body;
};

struct HttpClientResponse {
  int status = 0;
  // Header fields as received, in order.
  HttpClientFields headers;
  // The decoded body (chunked transfer coding removed); empty for HEAD.
  std::string body;
  // The URL that gave this answer (the request's, or the last redirect's).
  std::string url;

  // The first value of header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` and returns the server's answer (any status), after
  // following redirects as the options allow. Errors: see the top of this
  // file; after one, the connection is closed.
  StatusOr<HttpClientResponse> Send(const HttpClientRequest& request);

  // Send() of a GET without body.
  StatusOr<HttpClientResponse> Get(const std::string& url);

  // Connections opened so far (keep-alive reuse shows as fewer connections
  // than requests).
  uint64_t connections_opened() const;

  const HttpClientOptions& options() const;

 private:
  StatusOr<HttpClientResponse> SendOrThrow(const HttpClientRequest& request);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zeus

#endif  // ZEUS_HTTP_CLIENT_H_
