#include "tests/server/server_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>

#include <libpq-fe.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus::testing {

std::string BackendName(Backend backend) {
  return backend == Backend::kSqlite ? "Sqlite" : "Postgres";
}

std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info) {
  return BackendName(info.param);
}

namespace {

std::string PostgresBaseUrl(std::string* skip_reason) {
  const char* file = std::getenv("ZEUS_TEST_POSTGRES_URL_FILE");
  if (file == nullptr) {
    *skip_reason =
        "PostgreSQL test SKIPPED: ZEUS_TEST_POSTGRES_URL_FILE is not set (run through ctest, "
        "whose fixture starts the cluster)";
    return "";
  }
  StatusOr<std::string> contents = ReadFileToString(file);
  std::string url = contents.ok() ? std::string(Trim(*contents)) : "";
  if (url.empty() || url == "unavailable") {
    *skip_reason = "PostgreSQL test SKIPPED: PostgreSQL server binaries are not installed";
    return "";
  }
  return url;
}

}  // namespace

std::string NewDatabaseUrl(Backend backend, const TempDir& dir, std::string* skip_reason) {
  static std::atomic<int> counter{0};
  if (backend == Backend::kSqlite) {
    return "sqlite:" + dir.File("zeus" + std::to_string(counter++) + ".db");
  }
  std::string base = PostgresBaseUrl(skip_reason);
  if (base.empty()) return "";
  std::random_device random;
  std::string schema = "t" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
                       std::to_string(random() % 1000000);
  PGconn* conn = PQconnectdb(base.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    ADD_FAILURE() << "cannot connect to the test cluster: " << PQerrorMessage(conn);
    PQfinish(conn);
    return "";
  }
  PGresult* result = PQexec(conn, ("CREATE SCHEMA " + schema).c_str());
  bool created = PQresultStatus(result) == PGRES_COMMAND_OK;
  if (!created) ADD_FAILURE() << "CREATE SCHEMA failed: " << PQerrorMessage(conn);
  PQclear(result);
  PQfinish(conn);
  if (!created) return "";
  return base + (base.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         schema;
}

Status ExecRawSql(const std::string& url, const std::string& sql) {
  if (url.rfind("sqlite:", 0) == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open(url.substr(7).c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      return IoError("cannot open " + url);
    }
    char* error = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    std::string message = error != nullptr ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    return rc == SQLITE_OK ? Status::Ok() : InternalError("sqlite: " + message);
  }
  PGconn* conn = PQconnectdb(url.c_str());
  PGresult* result = PQexec(conn, sql.c_str());
  Status status = PQresultStatus(result) == PGRES_COMMAND_OK
                      ? Status::Ok()
                      : InternalError(std::string("postgresql: ") + PQerrorMessage(conn));
  PQclear(result);
  PQfinish(conn);
  return status;
}

nlohmann::json JobBody(const std::string& job_id, int64_t seed) {
  return nlohmann::json{{"job_id", job_id},
                        {"job_id_prefix", job_id.substr(0, job_id.find('-'))},
                        {"batch_sizes", {32, 64, 128, 256}},
                        {"default_batch_size", 128},
                        {"eta_knob", 0.5},
                        {"beta_knob", 2.0},
                        {"target_metric", 0.5},
                        {"higher_is_better_metric", true},
                        {"max_epochs", 10},
                        {"num_pruning_rounds", 2},
                        {"window_size", 0},
                        {"mab_prior_mean", 0.0},
                        {"mab_prior_precision", 0.0},
                        {"mab_num_explorations", 2},
                        {"mab_seed", seed},
                        {"max_power", 300.0},
                        {"number_of_gpus", 1},
                        {"gpu_model", "A40"}};
}

TestServer::TestServer(const std::string& url, HttpServerOptions options,
                       BatchSizeServiceOptions service_options) {
  StatusOr<std::unique_ptr<Store>> store = OpenStore(url);
  if (!store.ok()) {
    error_ = store.status().ToString();
    return;
  }
  store_ = std::move(*store);
  service_ = std::make_unique<BatchSizeService>(store_.get(), &clock_, service_options);
  server_ = std::make_unique<HttpServer>(service_.get(), std::move(options));
  Status status = server_->Start();
  if (!status.ok()) error_ = status.ToString();
}

TestServer::~TestServer() {
  if (server_) server_->Stop();
}

std::string HttpReply::Header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (EqualsIgnoreCase(field, name)) return value;
  }
  return "";
}

HttpClientOptions TestClientOptions() {
  HttpClientOptions options;
  options.timeout_s = 30.0;
  options.keep_alive = false;
  return options;
}

TestClient::TestClient(int port, HttpClientOptions options)
    : TestClient("http://127.0.0.1:" + std::to_string(port), std::move(options)) {}

TestClient::TestClient(std::string base_url, HttpClientOptions options)
    : base_url_(std::move(base_url)), http_(std::move(options)) {}

HttpReply Send(TestClient& client, const std::string& method, const std::string& path,
               const std::string& body, const HttpClientFields& headers) {
  HttpClientRequest request;
  request.method = method;
  request.url = client.base_url() + path;
  request.headers = headers;
  if (method == "POST" || method == "PATCH" || method == "PUT") {
    request.headers.emplace_back("Content-Type", "application/json");
    request.body = body;
  }
  HttpReply reply;
  StatusOr<HttpClientResponse> answer = client.http().Send(request);
  if (!answer.ok()) {
    reply.status = -1;
    reply.raw = answer.status().ToString();
    return reply;
  }
  reply.status = answer->status;
  reply.headers = std::move(answer->headers);
  reply.raw = std::move(answer->body);
  reply.body = nlohmann::json::parse(reply.raw, nullptr, false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

Status ServeProcess::Start(const std::vector<std::string>& args, const std::string& stderr_path) {
  Kill();
  int fds[2];
  if (pipe(fds) != 0) return IoError("pipe failed");
  // Built before fork(): the child of a threaded process may only make
  // async-signal-safe calls until exec.
  std::vector<std::string> storage = {"zeus", "serve"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const char* err_path = stderr_path.empty() ? nullptr : stderr_path.c_str();
  pid_ = fork();
  if (pid_ == 0) {
    if (err_path != nullptr) {
      int err = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) dup2(err, STDERR_FILENO);
    }
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(ZEUS_BINARY, argv.data());
    _exit(127);
  }
  close(fds[1]);
  out_ = fds[0];
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen.find('\n') == std::string::npos) {
    pollfd p{out_, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline || poll(&p, 1, 100) < 0) {
      return UnavailableError("zeus serve did not start: " + seen);
    }
    if (p.revents == 0) continue;
    char buffer[256];
    ssize_t n = read(out_, buffer, sizeof(buffer));
    if (n <= 0) return UnavailableError("zeus serve exited: " + seen);
    seen.append(buffer, n);
  }
  const std::string marker = "listening on http://";
  size_t at = seen.find(marker);
  // The port follows the host, which may be a bracketed IPv6 address.
  size_t host_end = at == std::string::npos ? at : seen.find(']', at);
  if (host_end == std::string::npos || seen.find('\n', at) < host_end) host_end = at;
  size_t colon =
      at == std::string::npos ? at : seen.find(':', std::max(at + marker.size(), host_end));
  if (colon == std::string::npos) return InternalError("unexpected first line: " + seen);
  port_ = std::atoi(seen.c_str() + colon + 1);
  return Status::Ok();
}

void ServeProcess::Kill() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (out_ >= 0) {
    close(out_);
    out_ = -1;
  }
}

int ServeProcess::SignalAndWait(int signal) {
  int status = -1;
  if (pid_ > 0) {
    kill(pid_, signal);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (out_ >= 0) {
    close(out_);
    out_ = -1;
  }
  return status;
}

void ServiceHttpTest::StartServer(HttpServerOptions options,
                                  BatchSizeServiceOptions service_options) {
  std::string skip_reason;
  std::string url = NewDatabaseUrl(GetParam(), dir_, &skip_reason);
  if (url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_FALSE(url.empty());
  url_ = url;
  server_.reset();
  server_ = std::make_unique<TestServer>(url, std::move(options), service_options);
  ASSERT_TRUE(server_->ok()) << server_->error();
  client_ = std::make_unique<TestClient>(server_->port());
}

HttpReply ServiceHttpTest::Do(const std::string& method, const std::string& path,
                              const std::string& body) {
  return Send(*client_, method, path, body);
}

HttpReply ServiceHttpTest::Register(const nlohmann::json& body) {
  return Do("POST", "/jobs", body.dump());
}

HttpReply ServiceHttpTest::Next(const std::string& job_id) {
  return Do("GET", "/jobs/batch_size?job_id=" + job_id);
}

nlohmann::json ServiceHttpTest::ReportBody(const std::string& job_id, int64_t batch_size,
                                           int64_t trial, double time_s, double energy_j,
                                           double metric, int64_t epoch) {
  return nlohmann::json{
      {"job_id", job_id},   {"batch_size", batch_size}, {"trial_number", trial}, {"time", time_s},
      {"energy", energy_j}, {"metric", metric},         {"current_epoch", epoch}};
}

HttpReply ServiceHttpTest::Report(const std::string& job_id, int64_t batch_size, int64_t trial,
                                  double time_s, double energy_j, double metric, int64_t epoch) {
  return Do("POST", "/report",
            ReportBody(job_id, batch_size, trial, time_s, energy_j, metric, epoch).dump());
}

nlohmann::json ServiceHttpTest::Trial(const std::string& job_id, int index) {
  HttpReply trials = Do("GET", "/trials?job_id=" + job_id);
  EXPECT_EQ(trials.status, 200) << trials.raw;
  return trials.body["trials"][index];
}

void ServiceHttpTest::ExpectHealthy() {
  HttpReply health = Do("GET", "/health");
  EXPECT_EQ(health.status, 200) << health.raw;
}

}  // namespace zeus::testing
