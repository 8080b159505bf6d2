// Test helpers for the server: a fresh database per test on SQLite or on the
// throwaway PostgreSQL cluster started by the ctest fixture
// (tests/server/postgres_cluster.sh), and a running server on a free
// loopback port.

#ifndef ZEUS_TESTS_SERVER_SERVER_TEST_UTIL_H_
#define ZEUS_TESTS_SERVER_SERVER_TEST_UTIL_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/types.h>

#include "zeus/device/fake.h"
#include "zeus/http/client.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_server.h"
#include "zeus/server/store.h"

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

enum class Backend { kSqlite, kPostgres };

// "Sqlite" or "Postgres" (for test names).
std::string BackendName(Backend backend);
std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info);

// The URL of an empty database for one test, or an empty string with
// `*skip_reason` set when PostgreSQL is unavailable (binaries absent).
// PostgreSQL databases are fresh schemas in the shared test cluster.
std::string NewDatabaseUrl(Backend backend, const TempDir& dir, std::string* skip_reason);

// Runs `sql` on the database at `url` with the backend's own client library
// (for tests that tamper with the database behind the store's back).
Status ExecRawSql(const std::string& url, const std::string& sql);

// A JSON registration body with sensible defaults for `job_id`.
nlohmann::json JobBody(const std::string& job_id, int64_t seed = 1);

// Store + service (on a FakeClock) + HTTP server on 127.0.0.1:<free port>.
class TestServer {
 public:
  // Check ok() after construction; error() says why not.
  TestServer(const std::string& url, HttpServerOptions options = {},
             BatchSizeServiceOptions service_options = {});
  ~TestServer();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int port() const { return server_->port(); }
  FakeClock& clock() { return clock_; }
  BatchSizeService& service() { return *service_; }
  Store& store() { return *store_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }

 private:
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BatchSizeService> service_;
  std::unique_ptr<HttpServer> server_;
  std::string error_;
};

// HTTP status, header fields and parsed JSON body (null when the body is not
// JSON). status -1: no answer, `raw` says why.
struct HttpReply {
  int status = 0;
  HttpClientFields headers;
  nlohmann::json body;
  std::string raw;

  // The first value of header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

// The options of a TestClient unless given: one connection per request
// (Connection: close), a deadline of 30 s per request.
HttpClientOptions TestClientOptions();

// An HttpClient of one server: requests name only the path ("/jobs?..."),
// sent to `base_url` ("http://127.0.0.1:<port>"). Not thread-safe (one per
// thread), like HttpClient.
class TestClient {
 public:
  explicit TestClient(int port, HttpClientOptions options = TestClientOptions());
  explicit TestClient(std::string base_url, HttpClientOptions options = TestClientOptions());

  const std::string& base_url() const { return base_url_; }
  HttpClient& http() { return http_; }

 private:
  std::string base_url_;
  HttpClient http_;
};

// Sends `method` `path` with `body` (as application/json for POST, PATCH and
// PUT) and `headers`.
HttpReply Send(TestClient& client, const std::string& method, const std::string& path,
               const std::string& body = "", const HttpClientFields& headers = {});

// A TestServer on the parameter's backend with a client and the API's
// calls: the fixture of the HTTP-level tests. SetUp starts the server with
// default options; StartServer() (re)starts it with others.
class ServiceHttpTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { StartServer(HttpServerOptions{}); }

  // Skips the test when the backend is unavailable (PostgreSQL not found).
  void StartServer(HttpServerOptions options, BatchSizeServiceOptions service_options = {});

  HttpReply Do(const std::string& method, const std::string& path, const std::string& body = "");
  HttpReply Register(const nlohmann::json& body);
  HttpReply Next(const std::string& job_id);
  static nlohmann::json ReportBody(const std::string& job_id, int64_t batch_size, int64_t trial,
                                   double time_s, double energy_j, double metric, int64_t epoch);
  HttpReply Report(const std::string& job_id, int64_t batch_size, int64_t trial, double time_s,
                   double energy_j, double metric, int64_t epoch);
  // Trial `index` of GET /trials for `job_id`.
  nlohmann::json Trial(const std::string& job_id, int index);
  // The server answers /health with 200 (it keeps serving).
  void ExpectHealthy();

  TempDir dir_;
  std::string url_;  // The database of the running server.
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<TestClient> client_;
};

// `zeus serve` (the binary ZEUS_BINARY names) as a child process whose
// stdout is read up to its "listening on" line.
class ServeProcess {
 public:
  ServeProcess() = default;
  ~ServeProcess() { Kill(); }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // Runs `zeus serve <args>` and waits (up to 20 s) until it listens. Its
  // stderr is appended to `stderr_path` when set, else inherited.
  Status Start(const std::vector<std::string>& args, const std::string& stderr_path = "");
  // The port from the "listening on" line.
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // SIGKILL, then reaps the child. Idempotent.
  void Kill();
  // Sends `signal` and returns the exit status from waitpid.
  int SignalAndWait(int signal);

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int port_ = 0;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_SERVER_TEST_UTIL_H_
