#include "zeus/server/http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include "zeus/util/file.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

#include "src/server/dashboard.h"

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

// The methods each route answers (HEAD with GET, as cpp-httplib does);
// nullptr for an unknown path.
const char* AllowedMethods(const std::string& path) {
  static const std::pair<const char*, const char*> kRoutes[] = {
      {kRegisterJobPath, "GET, HEAD, POST, DELETE"},
      {kNextBatchSizePath, "GET, HEAD"},
      {kReportPath, "POST"},
      {kEndTrialPath, "GET, HEAD, PATCH"},
      {kArmsPath, "GET, HEAD"},
      {kHealthPath, "GET, HEAD"},
  };
  for (const auto& [route, methods] : kRoutes) {
    if (path == route) return methods;
  }
  return nullptr;
}

bool MethodAllowed(const std::string& allowed, const std::string& method) {
  size_t at = allowed.find(method);
  if (method.empty() || at == std::string::npos) return false;
  const size_t end = at + method.size();
  return (at == 0 || allowed[at - 1] == ' ') && (end == allowed.size() || allowed[end] == ',');
}

// `text` with control characters escaped, for a log line.
std::string EscapeControl(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

// "host:port", bracketing an IPv6 host.
std::string Address(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Why binding `host`:`port` fails, found by trying it the way the server
// does (cpp-httplib keeps errno to itself).
std::string BindFailureReason(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &result); rc != 0) {
    return std::string("cannot resolve the host: ") + gai_strerror(rc);
  }
  std::string reason = "no usable address";
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    const bool bound = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    const int error = errno;
    close(fd);
    if (bound) {
      reason = "bound on retry; another process may have released the port meanwhile";
      break;
    }
    reason = std::strerror(error);
    if (error == EADDRINUSE) {
      reason += " (another process already listens there; zeus serve never shares a port)";
      break;
    }
  }
  freeaddrinfo(result);
  return reason;
}

// Gives each calling thread an alternate signal stack, once, so that a
// handler of SIGSEGV can run after the thread overflowed its stack.
void EnsureAlternateSignalStack() {
  struct AltStack {
    std::vector<char> memory;
    AltStack() : memory(std::max<size_t>(SIGSTKSZ, 64 * 1024)) {
      stack_t stack{};
      stack.ss_sp = memory.data();
      stack.ss_size = memory.size();
      if (sigaltstack(&stack, nullptr) != 0) memory.clear();
    }
    ~AltStack() {
      if (memory.empty()) return;
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
  };
  thread_local AltStack alt_stack;
}

// cpp-httplib's pool whose threads have an alternate signal stack.
class WorkerPool final : public httplib::ThreadPool {
 public:
  explicit WorkerPool(size_t threads) : httplib::ThreadPool(threads) {}
  void enqueue(std::function<void()> fn) override {
    httplib::ThreadPool::enqueue([fn = std::move(fn)] {
      EnsureAlternateSignalStack();
      fn();
    });
  }
};

// When the current request's headers were read (per worker thread: a
// connection's requests are handled one after another on one thread).
thread_local std::optional<std::chrono::steady_clock::time_point> request_start;

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
  // ---- Dashboard (src/server/dashboard.h): transport-independent handlers.
  // Every method on its paths goes to HandleDashboardRequest (it answers 405
  // itself); it checks the token itself, so the pre-routing handler below
  // skips the bearer check for IsDashboardPath().
  DashboardOptions dashboard;
  dashboard.token = options.token;
  dashboard.chartjs_path = options.dashboard_chartjs_path;
  auto serve_dashboard = [s, dashboard](const httplib::Request& req, httplib::Response& res) {
    DashboardRequest request{req.method,
                             req.path,
                             {},
                             req.get_header_value("Authorization"),
                             req.get_header_value("Cookie")};
    for (const auto& [name, value] : req.params) request.query.emplace(name, value);
    DashboardResponse answer = HandleDashboardRequest(request, s, dashboard);
    for (const auto& [name, value] : answer.headers) res.set_header(name, value);
    res.status = answer.status;
    res.set_content(std::move(answer.body), answer.content_type);
  };
  for (const char* pattern : {"/", "/dashboard(/.*)?"}) {
    server.Get(pattern, serve_dashboard);
    server.Post(pattern, serve_dashboard);
    server.Put(pattern, serve_dashboard);
    server.Patch(pattern, serve_dashboard);
    server.Delete(pattern, serve_dashboard);
  }
  // ---- End of dashboard.
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
  impl.server.new_task_queue = [threads] { return new WorkerPool(threads); };
  impl.server.set_payload_max_length(impl.options.max_body_bytes);
  impl.server.set_keep_alive_max_count(1'000'000);
  impl.server.set_tcp_nodelay(true);
  const double read_timeout_s = impl.options.read_timeout_s > 0 ? impl.options.read_timeout_s : 5.0;
  impl.server.set_read_timeout(
      static_cast<time_t>(read_timeout_s),
      static_cast<time_t>((read_timeout_s - static_cast<time_t>(read_timeout_s)) * 1e6));
  std::optional<std::string> token = impl.options.token;
  const bool timed = static_cast<bool>(impl.options.access_log);
  impl.server.set_pre_routing_handler(
      [token, timed](const httplib::Request& req, httplib::Response& res) {
        if (timed) request_start = std::chrono::steady_clock::now();
        // No Content-Length and no chunked encoding: the body is empty
        // (RFC 9112 6.3). Say so before cpp-httplib reads the body, or it waits
        // for the client to close the connection (the read timeout).
        if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
          // The server owns this request object; only the reference is const.
          const_cast<httplib::Request&>(req).headers.emplace("Content-Length", "0");
        }
        if (const char* allowed = AllowedMethods(req.path);
            allowed != nullptr && !MethodAllowed(allowed, req.method)) {
          res.set_header("Allow", allowed);
          ReplyError(res, 405,
                     "method " + EscapeControl(req.method) + " not allowed on " + req.path +
                         "; allowed: " + allowed);
          return httplib::Server::HandlerResponse::Handled;
        }
        // Dashboard: it applies the token rule itself (header or cookie).
        if (!token || req.path == kHealthPath || IsDashboardPath(req.path)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        const std::string expected = "Bearer " + *token;
        if (SameToken(req.get_header_value("Authorization"), expected)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        ReplyError(res, 401, "authorization: missing or wrong bearer token");
        return httplib::Server::HandlerResponse::Handled;
      });
  if (timed) {
    auto access_log = impl.options.access_log;
    impl.server.set_logger([access_log](const httplib::Request& req, const httplib::Response& res) {
      AccessLogEntry entry;
      entry.method = EscapeControl(req.method);
      entry.path = EscapeControl(req.path);
      entry.status = res.status;
      entry.remote_addr = req.remote_addr;
      if (request_start) {
        entry.latency_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - *request_start)
                .count();
        request_start.reset();
      }
      access_log(entry);
    });
  }
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
  // Its default options set SO_REUSEPORT, with which a second server binds
  // the same port and the kernel splits the connections between the two;
  // SO_REUSEADDR alone still allows a restart while old connections linger
  // in TIME_WAIT, and refuses a port another socket listens on.
  impl.server.set_socket_options([&impl](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    impl.listen_fd = sock;
  });
  if (impl.options.port == 0) {
    port_ = impl.server.bind_to_any_port(impl.options.host);
  } else {
    port_ = impl.server.bind_to_port(impl.options.host, impl.options.port) ? impl.options.port : -1;
  }
  if (port_ <= 0) {
    return UnavailableError("http: cannot bind " + Address(impl.options.host, impl.options.port) +
                            ": " + BindFailureReason(impl.options.host, impl.options.port));
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
