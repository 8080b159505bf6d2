#include "src/server/dashboard.h"

#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/server/http_route.h"
#include "zeus/util/file.h"
#include "zeus/util/strings.h"

#include "src/server/dashboard_assets.h"
#include "src/server/dashboard_views.h"
#include "src/server/input_limits.h"

namespace zeus {

using nlohmann::json;

namespace {

constexpr char kTokenCookie[] = "zeus_token";
constexpr char kApiJobs[] = "/dashboard/api/jobs";
constexpr char kStaticPrefix[] = "/dashboard/static/";
constexpr char kHtml[] = "text/html; charset=utf-8";
constexpr char kJson[] = "application/json";
// Scripts, styles and requests only from this server; no inline script, no
// framing, no plugins.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

DashboardResponse Respond(int status, std::string content_type, std::string body) {
  DashboardResponse response;
  response.status = status;
  response.content_type = std::move(content_type);
  response.body = std::move(body);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  return response;
}

DashboardResponse DashboardJson(int status, const json& body) {
  DashboardResponse response =
      Respond(status, kJson, body.dump(-1, ' ', false, json::error_handler_t::replace));
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

DashboardResponse JsonError(int status, const std::string& message) {
  return DashboardJson(status, json{{"message", message}});
}

DashboardResponse HtmlResponse(int status, std::string body) {
  DashboardResponse response = Respond(status, kHtml, std::move(body));
  response.headers.emplace_back("Cache-Control", "no-store");
  response.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  return response;
}

// Replaces the first `{{name}}` of `page` with `html` (already escaped).
std::string Fill(std::string page, std::string_view name, const std::string& html) {
  const std::string placeholder = "{{" + std::string(name) + "}}";
  if (size_t at = page.find(placeholder); at != std::string::npos) {
    page.replace(at, placeholder.size(), html);
  }
  return page;
}

// Unreserved characters (RFC 3986) stay; every other byte becomes %XX.
std::string PercentEncode(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Lowercase hex of every byte: a cookie value no HTTP library or proxy
// rewrites (some percent-decode header values).
std::string HexEncode(std::string_view text) {
  std::string out;
  for (char c : text) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexValue(hex[i]), low = HexValue(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
  }
  return out;
}

// The value of cookie `name` in a Cookie header, or nullopt.
std::optional<std::string> CookieValue(std::string_view header, std::string_view name) {
  for (const std::string& part : Split(header, ';')) {
    std::string_view pair = Trim(part);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || Trim(pair.substr(0, eq)) != name) continue;
    return std::string(Trim(pair.substr(eq + 1)));
  }
  return std::nullopt;
}

// Compares in time independent of where the strings differ.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool Authorized(const DashboardRequest& request, const DashboardOptions& options) {
  if (!options.token) return true;
  if (SameSecret(request.authorization, "Bearer " + *options.token)) return true;
  std::optional<std::string> cookie = CookieValue(request.cookie, kTokenCookie);
  std::optional<std::string> token = cookie ? HexDecode(*cookie) : std::nullopt;
  return token && SameSecret(*token, *options.token);
}

// "/" or "/?job=<encoded id>".
std::string PageUrl(const std::optional<std::string>& job_id) {
  return job_id ? "/?job=" + PercentEncode(*job_id) : "/";
}

std::optional<std::string> QueryValue(const DashboardRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  if (it == request.query.end()) return std::nullopt;
  return it->second;
}

DashboardResponse SignInPage(int status, const std::string& message,
                             const std::optional<std::string>& job_id) {
  std::string page(server_internal::DashboardAsset("signin.html"));
  page = Fill(std::move(page), "NOTICE", HtmlEscape(message));
  const std::string job_field =
      job_id ? "<input type=\"hidden\" name=\"job\" value=\"" + HtmlEscape(*job_id) + "\">" : "";
  DashboardResponse response = HtmlResponse(status, Fill(std::move(page), "JOB_FIELD", job_field));
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

DashboardResponse Page(const DashboardRequest& request, BatchSizeService* service,
                       const DashboardOptions& options) {
  const std::optional<std::string> job_id = QueryValue(request, "job");
  if (std::optional<std::string> token = QueryValue(request, "token")) {
    // Signing in: keep the token in a cookie, and out of the address bar
    // and the history.
    if (options.token && !SameSecret(*token, *options.token)) {
      return SignInPage(401, "The token is wrong.", job_id);
    }
    DashboardResponse response = HtmlResponse(303, "");
    std::string location = PageUrl(job_id);
    if (std::optional<std::string> refresh = QueryValue(request, "refresh")) {
      location += (job_id ? "&refresh=" : "?refresh=") + PercentEncode(*refresh);
    }
    response.headers.emplace_back("Location", location);
    if (options.token) {
      response.headers.emplace_back("Set-Cookie", std::string(kTokenCookie) + "=" +
                                                      HexEncode(*token) +
                                                      "; Path=/; HttpOnly; SameSite=Strict");
    }
    return response;
  }
  if (!Authorized(request, options)) {
    return SignInPage(401, "", job_id);
  }
  int status = 200;
  std::string notice;
  if (job_id) {
    StatusOr<json> job = service->GetJob(*job_id);
    if (!job.ok()) {
      status = HttpStatusOf(job.status().code());
      notice = job.status().message();
    }
  }
  std::string page(server_internal::DashboardAsset("index.html"));
  return HtmlResponse(status, Fill(std::move(page), "NOTICE", HtmlEscape(notice)));
}

DashboardResponse StaticFile(std::string_view name, const DashboardOptions& options) {
  std::string content_type;
  if (name == "chart.js") {
    StatusOr<std::string> chartjs = ReadFileToString(options.chartjs_path);
    if (!chartjs.ok()) {
      return Respond(404, "text/plain; charset=utf-8",
                     "Chart.js is missing on the server: " + chartjs.status().message() +
                         " (install Debian's libjs-chart.js, or point zeus serve "
                         "--chartjs at a Chart.js 3 UMD build)\n");
    }
    DashboardResponse response = Respond(200, "text/javascript; charset=utf-8", *chartjs);
    response.headers.emplace_back("Cache-Control", "no-cache");
    return response;
  }
  if (EndsWith(name, ".js")) {
    content_type = "text/javascript; charset=utf-8";
  } else if (EndsWith(name, ".css")) {
    content_type = "text/css; charset=utf-8";
  } else {
    // The HTML templates are served only through Page() and SignInPage().
    return JsonError(404, "no such dashboard file: " + std::string(name));
  }
  std::string_view asset = server_internal::DashboardAsset(name);
  if (asset.empty()) return JsonError(404, "no such dashboard file: " + std::string(name));
  DashboardResponse response = Respond(200, content_type, std::string(asset));
  response.headers.emplace_back("Cache-Control", "no-cache");
  return response;
}

DashboardResponse Api(const DashboardRequest& request, BatchSizeService* service) {
  const std::string& path = request.path;
  StatusOr<json> view = NotFoundError("no such dashboard route: " + path);
  const std::string job_prefix = std::string(kApiJobs) + "/";
  if (path == kApiJobs) {
    auto param = [&request](const char* name) -> std::optional<std::string> {
      auto it = request.query.find(name);
      if (it == request.query.end()) return std::nullopt;
      return it->second;
    };
    StatusOr<server_internal::JobPage> page =
        server_internal::ParseJobPage(param("limit"), param("after"));
    view = page.ok() ? server_internal::DashboardJobList(service->store(), *page)
                     : StatusOr<json>(page.status());
  } else if (StartsWith(path, job_prefix) && path.size() > job_prefix.size()) {
    const std::string job_id = path.substr(job_prefix.size());
    Status valid = server_internal::ValidateIdentifier("job_id", job_id);
    view = valid.ok() ? server_internal::DashboardJobDetail(service->store(), job_id)
                      : StatusOr<json>(valid);
  }
  if (!view.ok()) return JsonError(HttpStatusOf(view.status().code()), view.status().message());
  return DashboardJson(200, *view);
}

}  // namespace

bool IsDashboardPath(std::string_view path) {
  return path == "/" || path == "/dashboard" || StartsWith(path, "/dashboard/");
}

DashboardResponse HandleDashboardRequest(const DashboardRequest& request, BatchSizeService* service,
                                         const DashboardOptions& options) {
  if (request.method != "GET" && request.method != "HEAD") {
    DashboardResponse response =
        JsonError(405, "method " + request.method + " not allowed on " + request.path +
                           "; the dashboard is read-only (allowed: GET, HEAD)");
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  const std::string& path = request.path;
  if (path == "/" || path == "/dashboard" || path == "/dashboard/") {
    return Page(request, service, options);
  }
  if (StartsWith(path, kStaticPrefix)) {
    return StaticFile(std::string_view(path).substr(sizeof(kStaticPrefix) - 1), options);
  }
  if (!Authorized(request, options)) {
    DashboardResponse response =
        JsonError(401,
                  "authorization: missing or wrong token (send `Authorization: Bearer "
                  "TOKEN`, or sign in at /?token=TOKEN for the cookie)");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return response;
  }
  return Api(request, service);
}

}  // namespace zeus
