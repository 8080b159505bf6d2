#include "zeus/server/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include "zeus/util/file.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

namespace zeus {

using nlohmann::json;

namespace {

constexpr char kJson[] = "application/json";

std::string Dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void Reply(httplib::Response& res, int http_status, const json& body) {
  res.status = http_status;
  res.set_content(Dump(body), kJson);
}

void ReplyError(httplib::Response& res, int http_status, const std::string& message) {
  Reply(res, http_status, json{{"message", message}});
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return 422;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kPermissionDenied:
      return 401;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

void ReplyStatus(httplib::Response& res, const Status& status) {
  ReplyError(res, HttpStatusOf(status.code()), status.message());
}

// The parsed body, or nullopt after answering 400 (malformed, too deep,
// duplicate keys: see ParseJson).
std::optional<json> ParseBody(const httplib::Request& req, httplib::Response& res) {
  StatusOr<json> body = ParseJson(req.body, "request body: malformed JSON");
  if (!body.ok()) {
    ReplyError(res, 400, body.status().message());
    return std::nullopt;
  }
  return std::move(*body);
}

// The `job_id` query parameter, or nullopt after answering 422.
std::optional<std::string> JobIdParam(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("job_id") || req.get_param_value("job_id").empty()) {
    ReplyError(res, 422, "query parameter 'job_id': required");
    return std::nullopt;
  }
  return req.get_param_value("job_id");
}

// Compares in time independent of where the strings differ.
bool SameToken(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

std::string ReasonOf(int http_status) {
  switch (http_status) {
    case 400:
      return "bad request";
    case 404:
      return "no such route";
    case 405:
      return "method not allowed";
    case 413:
      return "request body too large";
    case 414:
      return "request URI too long";
    default:
      return "HTTP status " + std::to_string(http_status);
  }
}

}  // namespace

struct HttpServer::Impl {
  BatchSizeService* service;
  HttpServerOptions options;
  httplib::Server server;
  std::thread thread;
  // The listening socket, recorded while binding.
  int listen_fd = -1;
  // Set when listen_after_bind() returned.
  std::atomic<bool> listening_done{false};

  void Routes();
};

void HttpServer::Impl::Routes() {
  BatchSizeService* s = service;
  server.Post(kRegisterJobPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<json> body = ParseBody(req, res);
    if (!body) return;
    StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(*body);
    if (!spec.ok()) return ReplyStatus(res, spec.status());
    StatusOr<BatchSizeService::Registration> reg = s->RegisterJob(std::move(*spec));
    if (!reg.ok()) return ReplyStatus(res, reg.status());
    Reply(res, reg->created ? 201 : 200, JobSpecToJson(reg->job));
  });
  server.Get(kRegisterJobPath, [s](const httplib::Request& req, httplib::Response& res) {
    StatusOr<json> view =
        req.has_param("job_id") ? s->GetJob(req.get_param_value("job_id")) : s->ListJobs();
    if (!view.ok()) return ReplyStatus(res, view.status());
    Reply(res, 200, *view);
  });
  server.Delete(kRegisterJobPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> job_id = JobIdParam(req, res);
    if (!job_id) return;
    Status status = s->DeleteJob(*job_id);
    if (!status.ok()) return ReplyStatus(res, status);
    Reply(res, 200, json{{"job_id", *job_id}, {"deleted", true}});
  });
  server.Get(kNextBatchSizePath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> job_id = JobIdParam(req, res);
    if (!job_id) return;
    StatusOr<TrialId> trial = s->NextBatchSize(*job_id);
    if (!trial.ok()) return ReplyStatus(res, trial.status());
    Reply(res, 200, ToJson(*trial));
  });
  server.Post(kReportPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<json> body = ParseBody(req, res);
    if (!body) return;
    StatusOr<TrainingResult> result = ParseTrainingResult(*body);
    if (!result.ok()) return ReplyStatus(res, result.status());
    StatusOr<ReportResponse> response = s->Report(*result);
    if (!response.ok()) return ReplyStatus(res, response.status());
    Reply(res, 200, ToJson(*response));
  });
  server.Patch(kEndTrialPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<json> body = ParseBody(req, res);
    if (!body) return;
    StatusOr<TrialId> id = ParseTrialId(*body);
    if (!id.ok()) return ReplyStatus(res, id.status());
    StatusOr<TrialRecord> trial = s->EndTrial(*id);
    if (!trial.ok()) return ReplyStatus(res, trial.status());
    Reply(res, 200, TrialRecordToJson(*trial));
  });
  server.Get(kEndTrialPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> job_id = JobIdParam(req, res);
    if (!job_id) return;
    StatusOr<json> view = s->ListTrials(*job_id);
    if (!view.ok()) return ReplyStatus(res, view.status());
    Reply(res, 200, *view);
  });
  server.Get(kArmsPath, [s](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> job_id = JobIdParam(req, res);
    if (!job_id) return;
    StatusOr<json> view = s->ArmStates(*job_id);
    if (!view.ok()) return ReplyStatus(res, view.status());
    Reply(res, 200, *view);
  });
  server.Get(kHealthPath, [s](const httplib::Request&, httplib::Response& res) {
    StatusOr<int> version = s->store()->SchemaVersion();
    if (!version.ok()) return ReplyStatus(res, version.status());
    Reply(res, 200,
          json{{"status", "ok"},
               {"store", std::string(s->store()->backend())},
               {"schema_version", *version}});
  });
}

HttpServer::HttpServer(BatchSizeService* service, HttpServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->service = service;
  impl_->options = std::move(options);
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  Impl& impl = *impl_;
  const int threads = impl.options.threads;
  impl.server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl.server.set_payload_max_length(impl.options.max_body_bytes);
  impl.server.set_keep_alive_max_count(1'000'000);
  impl.server.set_tcp_nodelay(true);
  std::optional<std::string> token = impl.options.token;
  impl.server.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (!token || req.path == kHealthPath) return httplib::Server::HandlerResponse::Unhandled;
    const std::string expected = "Bearer " + *token;
    if (SameToken(req.get_header_value("Authorization"), expected)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    ReplyError(res, 401, "authorization: missing or wrong bearer token");
    return httplib::Server::HandlerResponse::Handled;
  });
  impl.server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(Dump(json{{"message", ReasonOf(res.status)}}), kJson);
    }
  });
  impl.server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        ReplyError(res, 500, "internal error while handling the request");
      });
  impl.Routes();
  // cpp-httplib 0.11 listens with a backlog of 5, so a burst of clients
  // connecting at once overflows it and waits for SYN retries (1 s and
  // more). Remember the listening socket and raise its backlog after bind.
  impl.server.set_socket_options([&impl](socket_t sock) {
    httplib::default_socket_options(sock);
    impl.listen_fd = sock;
  });
  if (impl.options.port == 0) {
    port_ = impl.server.bind_to_any_port(impl.options.host);
  } else {
    port_ = impl.server.bind_to_port(impl.options.host, impl.options.port) ? impl.options.port : -1;
  }
  if (port_ <= 0) {
    return UnavailableError("http: cannot bind " + impl.options.host + ":" +
                            std::to_string(impl.options.port));
  }
  if (impl.listen_fd >= 0) ::listen(impl.listen_fd, SOMAXCONN);
  impl.listening_done = false;
  impl.thread = std::thread([&impl] {
    impl.server.listen_after_bind();
    impl.listening_done = true;
  });
  // Stop() only interrupts a server that runs: wait until it accepts, or
  // a Stop() right after Start() would leave the thread blocked in accept().
  while (!impl.server.is_running() && !impl.listening_done) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (!impl.server.is_running()) {
    impl.thread.join();
    return UnavailableError("http: the server on port " + std::to_string(port_) +
                            " stopped at once");
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  std::string token(Trim(contents));
  if (token.empty()) return InvalidArgumentError("token file \"" + path + "\": empty");
  return token;
}

}  // namespace zeus
