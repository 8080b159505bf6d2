#include "zeus/server/http_server.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zeus/http/status_map.h"
#include "zeus/http/transport.h"
#include "zeus/util/file.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

#include "src/server/dashboard.h"
#include "src/server/input_limits.h"
#include "src/server/server_metrics.h"

namespace zeus {

using nlohmann::json;
using server_internal::ServerMetrics;

namespace {

constexpr char kMetricsPath[] = "/metrics";

std::string Dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse Reply(int http_status, const json& body) {
  return JsonResponse(http_status, Dump(body));
}

// Compares in time independent of where the strings differ.
bool SameToken(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Maps a failed service call to its answer; counts store failures
// (unavailable, internal) under `route`.
class Failures {
 public:
  explicit Failures(ServerMetrics* metrics) : metrics_(metrics) {}
  HttpResponse operator()(const char* route, const Status& status) const {
    const int http_status = HttpStatusOf(status.code());
    if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kInternal) {
      metrics_->CountStoreError(route);
    }
    return ErrorResponse(http_status, status.message());
  }

 private:
  ServerMetrics* metrics_;
};

// The parsed body, or the 400 answer (malformed, too deep, duplicate keys:
// see ParseJson).
StatusOr<json> ParseBody(const HttpRequest& req) {
  return ParseJson(req.body, "request body: malformed JSON");
}

// Logs, at debug level, the request fields a parser ignored (fields this
// protocol version does not know; the original server ignores them too).
void LogIgnored(const char* route, const std::vector<std::string>& ignored_fields) {
  if (ignored_fields.empty()) return;
  std::string names;
  for (const std::string& name : ignored_fields)
    names += (names.empty() ? "'" : ", '") + name + "'";
  spdlog::debug("{}: ignoring unknown request field(s) {}", route, names);
}

// The `job_id` query parameter; kInvalidArgument (422) when absent or empty.
StatusOr<std::string> JobIdParam(const HttpRequest& req) {
  std::optional<std::string> job_id = req.Param("job_id");
  if (!job_id || job_id->empty()) {
    return InvalidArgumentError("query parameter 'job_id': required");
  }
  return std::move(*job_id);
}

// The optional `attempt` query parameter of a hand-out: which try of its
// submission the trial is (1 when absent; BatchSizeOptimizer::NextTrial).
// kInvalidArgument (422) naming it for anything but an integer in [1, 1000].
StatusOr<int> AttemptParam(const HttpRequest& req) {
  std::optional<std::string> text = req.Param("attempt");
  if (!text) return 1;
  StatusOr<int64_t> attempt = ParseInt64(*text);
  if (!attempt.ok() || *attempt < 1 || *attempt > 1000) {
    return InvalidArgumentError(
        "query parameter 'attempt': expected an integer in [1, 1000] (the "
        "try of the submission), got '" +
        *text + "'");
  }
  return static_cast<int>(*attempt);
}

// The batch-size API (the original Zeus server's protocol) and /health.
std::vector<HttpRoute> ApiRoutes(BatchSizeService* s, ServerMetrics* metrics) {
  const Failures fail(metrics);
  std::vector<HttpRoute> routes;
  auto add = [&routes](const char* method, const char* path, HttpHandler handler,
                       HttpRoute::Access access = HttpRoute::Access::kToken) {
    routes.push_back(HttpRoute{method, path, std::move(handler), HttpRoute::Match::kExact, access});
  };
  add("POST", kRegisterJobPath, [s, fail](const HttpRequest& req) {
    StatusOr<json> body = ParseBody(req);
    if (!body.ok()) return ErrorResponse(400, body.status().message());
    std::vector<std::string> ignored;
    StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(*body, &ignored);
    if (!spec.ok()) return fail(kRegisterJobPath, spec.status());
    LogIgnored(kRegisterJobPath, ignored);
    StatusOr<BatchSizeService::Registration> reg = s->RegisterJob(std::move(*spec));
    if (!reg.ok()) return fail(kRegisterJobPath, reg.status());
    return Reply(reg->created ? 201 : 200, JobSpecToJson(reg->job));
  });
  add("GET", kRegisterJobPath, [s, fail](const HttpRequest& req) {
    std::optional<std::string> job_id = req.Param("job_id");
    StatusOr<json> view = InvalidArgumentError("unreachable");
    if (job_id) {
      view = s->GetJob(*job_id);
    } else {
      StatusOr<server_internal::JobPage> page =
          server_internal::ParseJobPage(req.Param("limit"), req.Param("after"));
      view = page.ok() ? s->ListJobs(page->after, page->limit) : StatusOr<json>(page.status());
    }
    if (!view.ok()) return fail(kRegisterJobPath, view.status());
    return Reply(200, *view);
  });
  add("DELETE", kRegisterJobPath, [s, fail](const HttpRequest& req) {
    StatusOr<std::string> job_id = JobIdParam(req);
    if (!job_id.ok()) return fail(kRegisterJobPath, job_id.status());
    Status status = s->DeleteJob(*job_id);
    if (!status.ok()) return fail(kRegisterJobPath, status);
    return Reply(200, json{{"job_id", *job_id}, {"deleted", true}});
  });
  add("GET", kNextBatchSizePath, [s, fail](const HttpRequest& req) {
    StatusOr<std::string> job_id = JobIdParam(req);
    if (!job_id.ok()) return fail(kNextBatchSizePath, job_id.status());
    StatusOr<int> attempt = AttemptParam(req);
    if (!attempt.ok()) return fail(kNextBatchSizePath, attempt.status());
    StatusOr<TrialId> trial = s->NextBatchSize(*job_id, *attempt);
    if (!trial.ok()) return fail(kNextBatchSizePath, trial.status());
    return Reply(200, ToJson(*trial));
  });
  add("POST", kReportPath, [s, fail](const HttpRequest& req) {
    StatusOr<json> body = ParseBody(req);
    if (!body.ok()) return ErrorResponse(400, body.status().message());
    std::vector<std::string> ignored;
    StatusOr<TrainingResult> result = ParseTrainingResult(*body, &ignored);
    if (!result.ok()) return fail(kReportPath, result.status());
    LogIgnored(kReportPath, ignored);
    StatusOr<ReportResponse> response = s->Report(*result);
    if (!response.ok()) return fail(kReportPath, response.status());
    return Reply(200, ToJson(*response));
  });
  add("POST", kCheckInPath, [s, fail](const HttpRequest& req) {
    StatusOr<json> body = ParseBody(req);
    if (!body.ok()) return ErrorResponse(400, body.status().message());
    std::vector<std::string> ignored;
    StatusOr<ProgressCheckIn> check_in = ParseProgressCheckIn(*body, &ignored);
    if (!check_in.ok()) return fail(kCheckInPath, check_in.status());
    LogIgnored(kCheckInPath, ignored);
    StatusOr<ReportResponse> response = s->CheckIn(*check_in);
    if (!response.ok()) return fail(kCheckInPath, response.status());
    return Reply(200, ToJson(*response));
  });
  add("GET", kEndTrialPath, [s, fail](const HttpRequest& req) {
    StatusOr<std::string> job_id = JobIdParam(req);
    if (!job_id.ok()) return fail(kEndTrialPath, job_id.status());
    StatusOr<server_internal::TrialPage> page =
        server_internal::ParseTrialPage(req.Param("limit"), req.Param("after"));
    if (!page.ok()) return fail(kEndTrialPath, page.status());
    StatusOr<json> view = s->ListTrials(*job_id, page->after, page->limit);
    if (!view.ok()) return fail(kEndTrialPath, view.status());
    return Reply(200, *view);
  });
  add("PATCH", kEndTrialPath, [s, fail](const HttpRequest& req) {
    StatusOr<json> body = ParseBody(req);
    if (!body.ok()) return ErrorResponse(400, body.status().message());
    std::vector<std::string> ignored;
    StatusOr<TrialId> id = ParseTrialId(*body, &ignored);
    if (!id.ok()) return fail(kEndTrialPath, id.status());
    LogIgnored(kEndTrialPath, ignored);
    StatusOr<TrialRecord> trial = s->EndTrial(*id);
    if (!trial.ok()) return fail(kEndTrialPath, trial.status());
    return Reply(200, TrialRecordToJson(*trial));
  });
  add("GET", kArmsPath, [s, fail](const HttpRequest& req) {
    StatusOr<std::string> job_id = JobIdParam(req);
    if (!job_id.ok()) return fail(kArmsPath, job_id.status());
    StatusOr<json> view = s->ArmStates(*job_id);
    if (!view.ok()) return fail(kArmsPath, view.status());
    return Reply(200, *view);
  });
  add(
      "GET", kHealthPath,
      [s, fail](const HttpRequest&) {
        Status healthy = s->store()->CheckHealth();
        if (!healthy.ok()) return fail(kHealthPath, healthy);
        StatusOr<int> version = s->store()->SchemaVersion();
        if (!version.ok()) return fail(kHealthPath, version.status());
        return Reply(200, json{{"status", "ok"},
                               {"store", std::string(s->store()->backend())},
                               {"schema_version", *version}});
      },
      HttpRoute::Access::kPublic);
  add("GET", kMetricsPath, [s, metrics](const HttpRequest&) {
    HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = metrics->Scrape(s);
    return response;
  });
  return routes;
}

// The read-only dashboard (src/server/dashboard.h) at "/", "/dashboard" and
// under "/dashboard/": public routes, because its handler applies the token
// rule itself (bearer header or cookie) and answers 405 itself.
std::vector<HttpRoute> DashboardRoutes(BatchSizeService* s, const HttpServerOptions& options) {
  DashboardOptions dashboard;
  dashboard.token = options.token;
  dashboard.chartjs_path = options.dashboard_chartjs_path;
  HttpHandler handler = [s, dashboard](const HttpRequest& req) {
    DashboardRequest request{
        req.method, req.path, {}, req.Header("Authorization"), req.Header("Cookie")};
    // Repeated parameters were refused before routing.
    for (const auto& [name, value] : req.params) request.query[name] = value;
    DashboardResponse answer = HandleDashboardRequest(request, s, dashboard);
    HttpResponse response;
    response.status = answer.status;
    response.content_type = std::move(answer.content_type);
    response.body = std::move(answer.body);
    response.headers = std::move(answer.headers);
    return response;
  };
  std::vector<HttpRoute> routes;
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    for (const auto& [path, match] : {std::pair{"/", HttpRoute::Match::kExact},
                                      std::pair{"/dashboard", HttpRoute::Match::kExact},
                                      std::pair{"/dashboard/", HttpRoute::Match::kPrefix}}) {
      routes.push_back(HttpRoute{method, path, handler, match, HttpRoute::Access::kPublic});
    }
  }
  return routes;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::chrono::milliseconds Milliseconds(double s, double fallback_s) {
  const double chosen = s > 0 ? s : fallback_s;
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::milliseconds(static_cast<int64_t>(std::ceil(chosen * 1000))));
}

// The service's refusals before routing, as it has always worded them.
std::string RefusalReason(HttpRefusal refusal, const std::string& detail,
                          const HttpServerOptions& options) {
  switch (refusal) {
    case HttpRefusal::kHeadTooLarge:
      return fmt::format("request header fields too large: more than {} bytes",
                         options.max_header_bytes);
    case HttpRefusal::kBodyTooLarge:
      return fmt::format("request body too large: more than {} bytes", options.max_body_bytes);
    case HttpRefusal::kTimeout:
      return "request not received in time";
    case HttpRefusal::kTooManyConnections:
      return "too many open connections";
    case HttpRefusal::kMalformed:
      break;
  }
  return "bad request: " + detail;
}

int RefusalStatus(HttpRefusal refusal) {
  switch (refusal) {
    case HttpRefusal::kHeadTooLarge:
      return 431;
    case HttpRefusal::kBodyTooLarge:
      return 413;
    case HttpRefusal::kTimeout:
      return 408;
    case HttpRefusal::kTooManyConnections:
      return 503;
    case HttpRefusal::kMalformed:
      break;
  }
  return 400;
}

}  // namespace

int HttpStatusOf(StatusCode code) {
  static const HttpStatusMap kService{{StatusCode::kOk, 500},
                                      {StatusCode::kInvalidArgument, 422},
                                      {StatusCode::kNotSupported, 500},
                                      {StatusCode::kPermissionDenied, 401}};
  return kService(code);
}

HttpResponse ErrorResponse(int status, std::string_view message) {
  const json body{{"message", std::string(message)}};
  return JsonResponse(status, Dump(body));
}

struct HttpServer::Impl {
  explicit Impl(HttpServerOptions server_options)
      : options(std::move(server_options)), router(RouterOptions(options)) {}

  static HttpRouterOptions RouterOptions(const HttpServerOptions& options) {
    HttpRouterOptions o;
    o.error = ErrorResponse;
    if (options.token) {
      o.access = [token = "Bearer " + *options.token](
                     const HttpRequest& req, const HttpRoute&) -> std::optional<HttpResponse> {
        if (SameToken(req.Header("Authorization"), token)) return std::nullopt;
        return ErrorResponse(401, "authorization: missing or wrong bearer token");
      };
    }
    return o;
  }

  BatchSizeService* service = nullptr;
  HttpServerOptions options;
  ServerMetrics metrics;
  HttpRouter router;
  std::unique_ptr<HttpTransport> transport;

  HttpResponse Handle(const HttpRequest& req);
  HttpResponse Refuse(const HttpRequest& req, HttpRefusal refusal, const std::string& detail);
  void Log(const HttpRequest& req, const std::string& pattern, int status, double latency_s);
};

HttpResponse HttpServer::Impl::Handle(const HttpRequest& req) {
  std::string pattern;
  HttpResponse response = router.Route(req, &pattern);
  Log(req, pattern, response.status, SecondsSince(req.headers_read_at));
  return response;
}

HttpResponse HttpServer::Impl::Refuse(const HttpRequest& req, HttpRefusal refusal,
                                      const std::string& detail) {
  const int status = RefusalStatus(refusal);
  HttpResponse response = ErrorResponse(status, RefusalReason(refusal, detail, options));
  // Refused before routing: no latency.
  Log(req, HttpRouter::kUnmatched, status, -1.0);
  return response;
}

void HttpServer::Impl::Log(const HttpRequest& req, const std::string& pattern, int status,
                           double latency_s) {
  metrics.ObserveRequest(pattern, req.method.empty() ? "unknown" : EscapeControl(req.method),
                         status, latency_s);
  if (!options.access_log) return;
  AccessLogEntry entry;
  entry.method = EscapeControl(req.method);
  entry.path = EscapeControl(req.path);
  entry.status = status;
  entry.remote_addr = req.remote_addr;
  entry.latency_s = latency_s;
  options.access_log(entry);
}

HttpServer::HttpServer(BatchSizeService* service, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->service = service;
  std::vector<HttpRoute> routes = ApiRoutes(service, &impl_->metrics);
  for (HttpRoute& route : DashboardRoutes(service, impl_->options)) {
    routes.push_back(std::move(route));
  }
  Status added = impl_->router.Add(std::move(routes));
  ZEUS_CHECK(added.ok());
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::AddRoutes(std::vector<HttpRoute> routes) {
  return impl_->router.Add(std::move(routes));
}

Status HttpServer::Start() {
  Impl& impl = *impl_;
  if (impl.transport) return FailedPreconditionError("http: the server was started already");
  HttpTransportOptions t;
  t.name = "zeus serve";
  t.tcp_host = impl.options.host;
  t.tcp_port = impl.options.port;
  t.max_header_bytes = impl.options.max_header_bytes;
  t.max_body_bytes = impl.options.max_body_bytes;
  t.read_timeout = Milliseconds(impl.options.read_timeout_s, 5.0);
  t.write_timeout = t.read_timeout;
  t.idle_timeout = Milliseconds(impl.options.idle_timeout_s, 60.0);
  t.io_threads = std::max(1, impl.options.io_threads);
  t.worker_threads = std::max(1, impl.options.threads);
  // Health probes never queue behind the API's requests (issue 23: /health
  // took 2.4 s while 40 clients flooded the server).
  t.priority_paths = {kHealthPath};
  auto transport = std::make_unique<HttpTransport>(
      t, [&impl](const HttpRequest& req) { return impl.Handle(req); },
      [&impl](const HttpRequest& req, HttpRefusal refusal, const std::string& detail) {
        return impl.Refuse(req, refusal, detail);
      });
  ZEUS_RETURN_IF_ERROR(transport->Start());
  port_ = transport->tcp_port();
  impl.transport = std::move(transport);
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->transport) impl_->transport->Stop();
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  std::string token(Trim(contents));
  if (token.empty()) return InvalidArgumentError("token file \"" + path + "\": empty");
  return token;
}

}  // namespace zeus
