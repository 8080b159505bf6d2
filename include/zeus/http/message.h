// The HTTP layer's request and response, independent of the transport: a
// handler maps one complete request to one response. Both servers (`zeus
// serve`, `zeus daemon`) use these; src/http/transport.cc reads and writes
// them on the wire.
//
// Thread-safety: plain values.

#ifndef ZEUS_HTTP_MESSAGE_H_
#define ZEUS_HTTP_MESSAGE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/http/peer.h"

namespace zeus {

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  // As sent: "GET", "POST", ... ("HEAD" reaches the GET handler).
  std::string method;
  // The request target as sent, path and query, e.g. "/jobs?job_id=a%20b".
  std::string target;
  // The percent-decoded path without the query ('+' stays '+'), e.g.
  // "/jobs/batch_size" (as sent, undecoded, where the transport is told so:
  // HttpTransportOptions::decode_path).
  std::string path;
  // The raw query after '?', "" when absent.
  std::string query;
  // The query's parameters, percent-decoded ('+' is a space; a '%' not
  // followed by two hex digits kept as is), in order. A route table may refuse
  // repeated ones (HttpRouterOptions::refuse_repeated_params).
  HttpFields params;
  // Header fields with their names as sent.
  HttpFields headers;
  std::string body;
  // The peer's IP address, e.g. "127.0.0.1"; "" on a Unix socket.
  std::string remote_addr;
  // Who sent it: a TCP client's address, or a Unix-socket client's
  // credentials (zeus/http/peer.h).
  Peer peer;
  // When the request's headers had been read (latencies count from here).
  std::chrono::steady_clock::time_point headers_read_at;

  // The value of query parameter `name` (the last one), or nullopt.
  std::optional<std::string> Param(std::string_view name) const;
  // The first value of header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

// The body of a streamed response (Server-Sent Events): the transport writes
// the header, then whatever TakeEvents returns as chunks, each time `wake` is
// called, until Ended() (then the last chunk, and the connection closes) or
// the client goes away (then the transport drops the stream; destroying it is
// the producer's cue to forget this reader).
class HttpEventStream {
 public:
  virtual ~HttpEventStream() = default;
  // Called once by the transport before it takes events; `wake` may be
  // called from any thread, any number of times, until the stream is
  // destroyed.
  virtual void SetWake(std::function<void()> wake) = 0;
  // The events queued since the last call, as bytes to send ("" if none).
  virtual std::string TakeEvents() = 0;
  virtual bool Ended() const = 0;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string response_body, std::string type = "application/json")
      : status(status_code), content_type(std::move(type)), body(std::move(response_body)) {}

  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Further header fields (Content-Type and Content-Length are set by the
  // transport).
  HttpFields headers;
  // Non-null: a 200 streamed response of `content_type` (`body` unused): the
  // connection carries this stream until it ends, then closes.
  std::shared_ptr<HttpEventStream> stream;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// A JSON answer: `status` with `json_text` as the body.
HttpResponse JsonResponse(int status, std::string json_text);

// `text` with control characters, DEL and '\' escaped as \xNN, for a log
// line or an error message that quotes client input.
std::string EscapeControl(std::string_view text);

}  // namespace zeus

#endif  // ZEUS_HTTP_MESSAGE_H_
