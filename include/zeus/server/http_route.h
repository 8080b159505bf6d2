// The server's routes, independent of the HTTP transport: a handler maps one
// complete request to one response. HttpServer owns a table of routes
// (method + path -> handler); a module adds its own with
// HttpServer::AddRoutes() before Start(), for example
//
//   std::vector<HttpRoute> DashboardRoutes(BatchSizeService* service);
//   ...
//   ZEUS_RETURN_IF_ERROR(server.AddRoutes(DashboardRoutes(&service)));
//
// The server answers around the table: 404 for a path no route matches, 405
// with an `Allow` header for a known path with another method, HEAD with the
// GET handler (the body dropped), 401 without the bearer token (when one is
// configured) unless the route is public, 500 when a handler throws; every
// answer is counted in /metrics and the access log.
//
// Thread-safety: handlers run concurrently on the server's worker threads
// (where database work may block) and must be safe to call so.

#ifndef ZEUS_SERVER_HTTP_ROUTE_H_
#define ZEUS_SERVER_HTTP_ROUTE_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/status.h"

namespace zeus {

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  // As sent: "GET", "POST", ... ("HEAD" reaches the GET handler).
  std::string method;
  // The percent-decoded path without the query, e.g. "/jobs/batch_size".
  std::string path;
  // The raw query after '?', "" when absent.
  std::string query;
  // The query's parameters, percent-decoded ('+' is a space), in order.
  HttpFields params;
  // Header fields with their names as sent.
  HttpFields headers;
  std::string body;
  // The peer's IP address, e.g. "127.0.0.1".
  std::string remote_addr;
  // When the request's headers had been read (latencies count from here).
  std::chrono::steady_clock::time_point headers_read_at;

  // The value of query parameter `name`, or nullopt. HttpServer refuses a
  // request that repeats a parameter (400 naming it) before any route runs.
  std::optional<std::string> Param(std::string_view name) const;
  // The first value of header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Further header fields (Content-Type and Content-Length are set by the
  // server).
  HttpFields headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpRoute {
  enum class Match {
    // The request path equals `path`.
    kExact,
    // The request path starts with `path` (e.g. "/static/"); exact routes
    // win over prefix routes, longer prefixes over shorter ones.
    kPrefix,
  };
  enum class Access {
    // Needs `Authorization: Bearer <token>` when the server has a token.
    kToken,
    // Never needs the token (like /health).
    kPublic,
  };
  // "GET", "POST", "PATCH", "DELETE", "PUT".
  std::string method;
  std::string path;
  HttpHandler handler;
  Match match = Match::kExact;
  Access access = Access::kToken;
};

// A JSON answer: `status` with `json_text` as the body.
// The HTTP status a library Status maps to: 422 invalid argument, 404 not
// found, 409 conflict (already exists, aborted, failed precondition), 401
// permission denied, 503 unavailable, else 500.
int HttpStatusOf(StatusCode code);
HttpResponse JsonResponse(int status, std::string json_text);
// `{"message": message}` with `status` (the server's error body).
HttpResponse ErrorResponse(int status, std::string_view message);

}  // namespace zeus

#endif  // ZEUS_SERVER_HTTP_ROUTE_H_
