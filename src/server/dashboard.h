// The read-only web dashboard of `zeus serve`: a page at `/` and the JSON it
// reads under /dashboard/api/, as transport-independent handlers. The
// server (src/server/http_server.cc, public routes on zeus/http/router.h)
// hands every request whose path satisfies IsDashboardPath() to
// HandleDashboardRequest() and writes back the answer; the dashboard does its
// own token check, so the server must not apply the API's bearer-token rule
// to these paths.
//
// Routes (GET and HEAD; another method is 405 with `Allow: GET, HEAD`):
//   /  (also /dashboard, /dashboard/)   the page; `?job=ID` selects a job
//                                       (404 page naming it when unknown)
//   /dashboard/api/jobs                 every job: id, spec summary, lowest cost
//   /dashboard/api/jobs/ID              one job: trials, the bandit's belief
//                                       per batch size, cost against the default
//   /dashboard/static/{dashboard.js, dashboard.css}   the page's own code
//                                       (embedded at build time)
//   /dashboard/static/chart.js          Chart.js, read from
//                                       DashboardOptions::chartjs_path at each
//                                       request (404 naming the path if absent)
// Unknown paths under /dashboard/ are 404.
//
// Token rule (when a token is set): the page and the API answer only a
// request that carries the token, either as `Authorization: Bearer TOKEN`
// (as the API wants) or as the cookie `zeus_token` (hex of its bytes). A
// browser signs in once by opening `/?token=TOKEN`: the server answers 303 to
// the same page without the token in the URL and sets that cookie (HttpOnly,
// SameSite=Strict, Path=/). The cookie is honoured only by dashboard routes,
// so a cross-site page can never use it against the API's writing routes.
// Without a valid token, the page is a 401 sign-in form and the API a 401
// JSON `{"message": ...}`. Static files hold no data and need no token.
//
// Every HTML answer carries a Content-Security-Policy that allows scripts
// only from this server (no inline script), and every user-supplied string
// reaches the page either HTML-escaped by the server or as DOM text set by
// the page's script, never as markup.
//
// Thread-safety: HandleDashboardRequest may be called concurrently (the
// service allows it); it only reads through the service.

#ifndef ZEUS_SERVER_DASHBOARD_H_
#define ZEUS_SERVER_DASHBOARD_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/server/batch_size_service.h"

namespace zeus {

// Where Debian's libjs-chart.js installs the UMD build (global `Chart`).
inline constexpr char kDebianChartJsPath[] = "/usr/share/javascript/chart.js/chart.min.js";

struct DashboardOptions {
  // The token the API requires; nullopt: none (the dashboard is open).
  // Default: none.
  std::optional<std::string> token;
  // Chart.js file served at /dashboard/static/chart.js. Default: Debian's.
  std::string chartjs_path = kDebianChartJsPath;
};

struct DashboardRequest {
  // "GET", "HEAD", ...
  std::string method;
  // Percent-decoded path without the query, e.g. "/dashboard/api/jobs/a b".
  std::string path;
  // Percent-decoded query parameters (HttpServer refuses repeated ones).
  std::map<std::string, std::string> query;
  // The Authorization and Cookie header values; empty when absent.
  std::string authorization;
  std::string cookie;
};

struct DashboardResponse {
  int status = 200;
  // E.g. "application/json" or "text/html; charset=utf-8".
  std::string content_type;
  std::string body;
  // Headers to add besides Content-Type (Set-Cookie, Location, Allow,
  // Cache-Control, Content-Security-Policy, ...), in order.
  std::vector<std::pair<std::string, std::string>> headers;
};

// True for "/", "/dashboard" and every path under "/dashboard/".
bool IsDashboardPath(std::string_view path);

// Answers one dashboard request. `service` must be non-null; it is only
// read. A store error is answered as 503 (unavailable) or 500 with the
// store's message, never thrown. HEAD is answered as GET (the transport
// drops the body).
DashboardResponse HandleDashboardRequest(const DashboardRequest& request, BatchSizeService* service,
                                         const DashboardOptions& options);

}  // namespace zeus

#endif  // ZEUS_SERVER_DASHBOARD_H_
