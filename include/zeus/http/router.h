// A route table over transport-independent HttpRequest / HttpResponse: method
// + path -> handler. A server (or a module of one) builds its routes, for
// example
//
//   std::vector<HttpRoute> DashboardRoutes(BatchSizeService* service);
//   ...
//   ZEUS_RETURN_IF_ERROR(router.Add(DashboardRoutes(&service)));
//
// and the router answers around them: 404 for a path no route matches, 405
// with an `Allow` header for a known path with another method, HEAD with the
// GET handler (the transport drops the body), the server's access hook
// (e.g. a bearer token) for routes that are not public, 400 for a repeated
// query parameter (when asked), 500 when a handler throws.
//
// Thread-safety: Add() before the first Route(); Route() may then be called
// concurrently, and so are the handlers.

#ifndef ZEUS_HTTP_ROUTER_H_
#define ZEUS_HTTP_ROUTER_H_

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/http/message.h"
#include "zeus/status.h"

namespace zeus {

struct HttpRoute {
  enum class Match {
    // The request path equals `path`.
    kExact,
    // The request path starts with `path` (e.g. "/static/"); exact routes
    // win over prefix routes, longer prefixes over shorter ones.
    kPrefix,
  };
  enum class Access {
    // Passes the router's access hook first (e.g. a bearer token).
    kToken,
    // Never passes through the access hook (like /health).
    kPublic,
  };
  // "GET", "POST", "PATCH", "DELETE", "PUT"; "" takes every method (the
  // handler answers the ones it does not serve itself).
  std::string method;
  std::string path;
  HttpHandler handler;
  Match match = Match::kExact;
  Access access = Access::kToken;
};

struct HttpRouterOptions {
  // Formats the router's own answers (404, 405, 400, 500) from a status and
  // a message. Default: JSON {"message": message}.
  std::function<HttpResponse(int status, std::string_view message)> error;
  // Answers a path no route matches. Default: error(404, "no such route").
  HttpHandler not_found;
  // Runs before the handler of a kToken route; an answer refuses the request
  // with it. Default: none (every route is open).
  std::function<std::optional<HttpResponse>(const HttpRequest&, const HttpRoute&)> access;
  // A query parameter given twice is refused with 400 naming it (after 404,
  // 405 and the access hook; no first or last value wins). Default: true.
  bool refuse_repeated_params = true;
  // The answer when a handler throws (`e` null for a non-std exception).
  // Default: error(500, "internal error while handling the request").
  std::function<HttpResponse(const std::exception* e)> on_exception;
};

class HttpRouter {
 public:
  // The route label of a request no route matched (for metrics).
  static constexpr char kUnmatched[] = "unmatched";

  explicit HttpRouter(HttpRouterOptions options = {});

  // Adds routes. kAlreadyExists naming the method and path when a route with
  // the same method, path and match kind exists; kInvalidArgument for a route
  // without a handler or with a path not starting with '/'. Nothing is added
  // on error.
  // REQUIRES: before the first Route().
  Status Add(std::vector<HttpRoute> routes);

  // Answers `request`; `*pattern` gets the matched route's path, or
  // kUnmatched.
  HttpResponse Route(const HttpRequest& request, std::string* pattern) const;

  // The router's error formatter (options.error).
  HttpResponse Error(int status, std::string_view message) const;

 private:
  std::vector<const HttpRoute*> RoutesOn(const std::string& path, std::string* pattern) const;
  // `handler`'s answer, or 500 when it throws.
  HttpResponse Handle(const HttpHandler& handler, const HttpRequest& req) const;

  HttpRouterOptions options_;
  std::vector<HttpRoute> routes_;
};

}  // namespace zeus

#endif  // ZEUS_HTTP_ROUTER_H_
