#include "zeus/http/router.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "zeus/http/query.h"

namespace zeus {
namespace {

HttpResponse MessageError(int status, std::string_view message) {
  const nlohmann::json body{{"message", std::string(message)}};
  return JsonResponse(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// "GET, HEAD" first when GET is among the routes' methods, then the others in
// order.
std::string AllowHeader(const std::vector<const HttpRoute*>& routes) {
  std::vector<std::string> methods;
  auto has = [&methods](const std::string& m) {
    return std::find(methods.begin(), methods.end(), m) != methods.end();
  };
  for (const HttpRoute* route : routes) {
    if (route->method == "GET") methods = {"GET", "HEAD"};
  }
  for (const HttpRoute* route : routes) {
    if (!has(route->method)) methods.push_back(route->method);
  }
  std::string allowed;
  for (const std::string& m : methods) allowed += (allowed.empty() ? "" : ", ") + m;
  return allowed;
}

}  // namespace

HttpRouter::HttpRouter(HttpRouterOptions options) : options_(std::move(options)) {
  if (!options_.error) options_.error = MessageError;
}

HttpResponse HttpRouter::Error(int status, std::string_view message) const {
  return options_.error(status, message);
}

Status HttpRouter::Add(std::vector<HttpRoute> routes) {
  for (size_t i = 0; i < routes.size(); ++i) {
    const HttpRoute& route = routes[i];
    if (!route.handler || route.path.empty() || route.path.front() != '/') {
      return InvalidArgumentError("http route " + route.method + " \"" + route.path +
                                  "\": needs a handler and a path starting with '/'");
    }
    auto same = [&route](const HttpRoute& other) {
      return other.method == route.method && other.path == route.path && other.match == route.match;
    };
    if (std::any_of(routes_.begin(), routes_.end(), same) ||
        std::any_of(routes.begin(), routes.begin() + static_cast<std::ptrdiff_t>(i), same)) {
      return AlreadyExistsError("http route " + route.method + " " + route.path +
                                ": already taken");
    }
  }
  for (HttpRoute& route : routes) routes_.push_back(std::move(route));
  return Status::Ok();
}

std::vector<const HttpRoute*> HttpRouter::RoutesOn(const std::string& path,
                                                   std::string* pattern) const {
  std::vector<const HttpRoute*> exact;
  for (const HttpRoute& route : routes_) {
    if (route.match == HttpRoute::Match::kExact && route.path == path) exact.push_back(&route);
  }
  if (!exact.empty()) {
    *pattern = path;
    return exact;
  }
  size_t longest = 0;
  for (const HttpRoute& route : routes_) {
    if (route.match == HttpRoute::Match::kPrefix && path.rfind(route.path, 0) == 0) {
      longest = std::max(longest, route.path.size());
    }
  }
  std::vector<const HttpRoute*> prefixed;
  for (const HttpRoute& route : routes_) {
    if (route.match == HttpRoute::Match::kPrefix && route.path.size() == longest &&
        path.rfind(route.path, 0) == 0) {
      prefixed.push_back(&route);
      *pattern = route.path;
    }
  }
  return prefixed;
}

HttpResponse HttpRouter::Route(const HttpRequest& req, std::string* pattern) const {
  std::vector<const HttpRoute*> on_path = RoutesOn(req.path, pattern);
  if (on_path.empty()) {
    *pattern = kUnmatched;
    if (options_.not_found) return Handle(options_.not_found, req);
    return Error(404, "no such route");
  }
  const HttpRoute* route = nullptr;
  for (const HttpRoute* r : on_path) {
    if (r->method == req.method) route = r;
  }
  if (route == nullptr && req.method == "HEAD") {
    for (const HttpRoute* r : on_path) {
      if (r->method == "GET") route = r;
    }
  }
  if (route == nullptr) {
    for (const HttpRoute* r : on_path) {
      if (r->method.empty()) route = r;
    }
  }
  if (route == nullptr) {
    const std::string allowed = AllowHeader(on_path);
    HttpResponse response = Error(405, "method " + EscapeControl(req.method) + " not allowed on " +
                                           EscapeControl(req.path) + "; allowed: " + allowed);
    response.headers.emplace_back("Allow", allowed);
    return response;
  }
  if (options_.access && route->access == HttpRoute::Access::kToken) {
    if (std::optional<HttpResponse> refused = options_.access(req, *route)) {
      return std::move(*refused);
    }
  }
  if (options_.refuse_repeated_params) {
    if (std::optional<std::string> repeated = RepeatedParam(req.params)) {
      return Error(400,
                   "query: parameter '" + EscapeControl(repeated->substr(0, 64)) + "' given twice");
    }
  }
  return Handle(route->handler, req);
}

HttpResponse HttpRouter::Handle(const HttpHandler& handler, const HttpRequest& req) const {
  try {
    return handler(req);
  } catch (const std::exception& e) {
    if (options_.on_exception) return options_.on_exception(&e);
  } catch (...) {
    if (options_.on_exception) return options_.on_exception(nullptr);
  }
  return Error(500, "internal error while handling the request");
}

}  // namespace zeus
