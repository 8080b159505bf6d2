// GET /metrics over real HTTP: the Prometheus text format parsed back into
// samples (name with sorted labels -> value), on SQLite and PostgreSQL; a
// store that goes away is reported (zeus_store_up 0, store errors counted)
// while the server keeps answering; the token guards /metrics.

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/util/strings.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Samples of a text-format exposition keyed `name{k1="v1",k2="v2"}` (labels
// sorted by name; `name` alone without labels). Fails the test on a line
// that is not a comment or a sample.
std::map<std::string, double> ParseExposition(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t at = line.find_first_of("{ ");
    if (at == std::string::npos) {
      ADD_FAILURE() << "not a sample: " << line;
      continue;
    }
    const std::string name = line.substr(0, at);
    std::map<std::string, std::string> labels;
    if (line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const size_t eq = line.find('=', at);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ADD_FAILURE() << "bad label in: " << line;
          return samples;
        }
        const std::string key = line.substr(at, eq - at);
        std::string value;
        size_t i = eq + 2;
        for (; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
        }
        labels[key] = value;
        at = i + 1;
        if (at < line.size() && line[at] == ',') ++at;
      }
      ++at;  // '}'
    }
    std::string key = name;
    if (!labels.empty()) {
      key += "{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        key += (first ? "" : ",") + k + "=\"" + v + "\"";
        first = false;
      }
      key += "}";
    }
    StatusOr<double> value = ParseDouble(std::string(Trim(line.substr(at))));
    if (!value.ok()) {
      ADD_FAILURE() << "bad value in: " << line;
      continue;
    }
    samples[key] = *value;
  }
  return samples;
}

class MetricsTest : public ServiceHttpTest {
 protected:
  std::map<std::string, double> Scrape() {
    HttpReply reply = Do("GET", "/metrics");
    EXPECT_EQ(reply.status, 200) << reply.raw;
    EXPECT_THAT(reply.Header("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
    return ParseExposition(reply.raw);
  }
};

TEST_P(MetricsTest, CountsRequestsJobsTrialsAndEachJobsBatchSizeAndBestCost) {
  ASSERT_EQ(Do("POST", "/jobs", JobBody("j-1").dump()).status, 201);
  ASSERT_EQ(Do("POST", "/jobs", JobBody("k-1").dump()).status, 201);
  ASSERT_EQ(Do("GET", "/jobs/batch_size?job_id=j-1").status, 200);  // 128, the default.
  json report{{"job_id", "j-1"},  {"batch_size", 128}, {"trial_number", 1}, {"time", 20.0},
              {"energy", 2000.0}, {"metric", 0.9},     {"current_epoch", 2}};
  ASSERT_EQ(Do("POST", "/report", report.dump()).status, 200);
  ASSERT_EQ(Do("GET", "/jobs/batch_size?job_id=j-1").status, 200);
  ASSERT_EQ(Do("GET", "/jobs/batch_size?job_id=k-1").status, 200);
  ASSERT_EQ(Do("GET", "/jobs/batch_size?job_id=none-1").status, 404);
  ASSERT_EQ(Do("GET", "/nowhere/a1").status, 404);
  ASSERT_EQ(Do("GET", "/nowhere/b2").status, 404);

  std::map<std::string, double> m = Scrape();
  EXPECT_EQ(m["zeus_store_up"], 1);
  EXPECT_EQ(m["zeus_jobs"], 2);
  EXPECT_EQ(m["zeus_trials{state=\"succeeded\"}"], 1);
  EXPECT_EQ(m["zeus_trials{state=\"dispatched\"}"], 2);
  EXPECT_EQ(m["zeus_trials{state=\"failed\"}"], 0);
  EXPECT_EQ(m["zeus_job_batch_size{job_id=\"k-1\"}"], 128);
  EXPECT_EQ(m.count("zeus_job_batch_size{job_id=\"j-1\"}"), 1u);
  // Cost 0.5 x 2000 J + 0.5 x 300 W x 20 s.
  EXPECT_DOUBLE_EQ(m["zeus_job_best_cost{job_id=\"j-1\"}"], 4000.0);
  EXPECT_EQ(m.count("zeus_job_best_cost{job_id=\"k-1\"}"), 0u);  // Nothing finished yet.
  EXPECT_EQ(m["zeus_job_best_batch_size{job_id=\"j-1\"}"], 128);
  EXPECT_EQ(m["zeus_http_requests_total{method=\"POST\",route=\"/jobs\",status=\"201\"}"], 2);
  EXPECT_EQ(m["zeus_http_requests_total{method=\"GET\",route=\"/jobs/batch_size\",status=\"200\"}"],
            3);
  EXPECT_EQ(m["zeus_http_requests_total{method=\"GET\",route=\"/jobs/batch_size\",status=\"404\"}"],
            1);
  // Unknown paths share one label value.
  EXPECT_EQ(m["zeus_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"}"], 2);
  // Latency histogram: every request counted, the +Inf bucket holds all.
  const std::string next = "{method=\"GET\",route=\"/jobs/batch_size\"}";
  EXPECT_EQ(m["zeus_http_request_duration_seconds_count" + next], 4);
  EXPECT_EQ(m["zeus_http_request_duration_seconds_bucket{le=\"+Inf\",method=\"GET\",route=\"/"
              "jobs/batch_size\"}"],
            4);
  EXPECT_GT(m["zeus_http_request_duration_seconds_sum" + next], 0.0);
  EXPECT_EQ(m["zeus_store_errors_total{operation=\"metrics\"}"], 0);

  // A deleted job's series go away; the scrape itself was counted.
  ASSERT_EQ(Do("DELETE", "/jobs?job_id=k-1").status, 200);
  m = Scrape();
  EXPECT_EQ(m["zeus_jobs"], 1);
  EXPECT_EQ(m.count("zeus_job_batch_size{job_id=\"k-1\"}"), 0u);
  EXPECT_EQ(m.count("zeus_job_best_batch_size{job_id=\"k-1\"}"), 0u);
  EXPECT_EQ(m["zeus_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"200\"}"], 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, MetricsTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

// A store that fails every call with kUnavailable while `down` is set, like
// a database that went away.
class SwitchableStore : public Store {
 public:
  explicit SwitchableStore(std::unique_ptr<Store> store) : store_(std::move(store)) {}
  Status RunTransaction(TransactionMode mode,
                        const std::function<Status(StoreTransaction&)>& body) override {
    if (down) return UnavailableError("postgresql: connection refused (test)");
    return store_->RunTransaction(mode, body);
  }
  std::string_view backend() const override { return store_->backend(); }
  StatusOr<int> SchemaVersion() override {
    if (down) return UnavailableError("postgresql: connection refused (test)");
    return store_->SchemaVersion();
  }
  std::atomic<bool> down{false};

 private:
  std::unique_ptr<Store> store_;
};

TEST(MetricsStoreDownTest, ScrapeSaysTheStoreIsDownAndTheServerLives) {
  TempDir dir;
  std::string skip_reason;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> inner,
                            OpenStore(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason)));
  SwitchableStore store(std::move(inner));
  FakeClock clock;
  BatchSizeService service(&store, &clock);
  HttpServer server(&service, HttpServerOptions{});
  ZEUS_ASSERT_OK(server.Start());
  TestClient client(server.port());
  ASSERT_EQ(Send(client, "POST", "/jobs", JobBody("j-1").dump()).status, 201);
  HttpReply up = Send(client, "GET", "/metrics");
  ASSERT_EQ(up.status, 200);
  EXPECT_EQ(ParseExposition(up.raw)["zeus_store_up"], 1);

  store.down = true;
  HttpReply next = Send(client, "GET", "/jobs/batch_size?job_id=j-1");
  EXPECT_EQ(next.status, 503);
  EXPECT_THAT(next.raw, HasSubstr("connection refused"));
  EXPECT_EQ(Send(client, "GET", "/health").status, 503);
  HttpReply down = Send(client, "GET", "/metrics");
  ASSERT_EQ(down.status, 200) << down.raw;
  std::map<std::string, double> m = ParseExposition(down.raw);
  EXPECT_EQ(m["zeus_store_up"], 0);
  EXPECT_EQ(m["zeus_store_errors_total{operation=\"metrics\"}"], 1);
  EXPECT_EQ(m["zeus_store_errors_total{operation=\"/jobs/batch_size\"}"], 1);
  EXPECT_EQ(m["zeus_store_errors_total{operation=\"/health\"}"], 1);
  EXPECT_EQ(m["zeus_jobs"], 1);  // The last value read.
  EXPECT_EQ(m["zeus_http_requests_total{method=\"GET\",route=\"/jobs/batch_size\",status=\"503\"}"],
            1);

  store.down = false;
  m = ParseExposition(Send(client, "GET", "/metrics").raw);
  EXPECT_EQ(m["zeus_store_up"], 1);
  EXPECT_EQ(m["zeus_store_errors_total{operation=\"metrics\"}"], 1);
  EXPECT_EQ(Send(client, "GET", "/jobs/batch_size?job_id=j-1").status, 200);
  server.Stop();
}

TEST(MetricsTokenTest, MetricsNeedTheTokenWhenOneIsSet) {
  TempDir dir;
  std::string skip_reason;
  HttpServerOptions options;
  options.token = "s3cret";
  TestServer server(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason), options);
  ASSERT_TRUE(server.ok()) << server.error();
  TestClient client(server.port());
  EXPECT_EQ(Send(client, "GET", "/metrics").status, 401);
  HttpReply allowed = Send(client, "GET", "/metrics", "", {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(ParseExposition(allowed.raw)["zeus_store_up"], 1);
}

// A module's routes join the table: exact and prefix matches, the token
// rule, 405 with the module's methods, and a conflict refused.
TEST(HttpRoutesTest, AddedRoutesAreServedBesideTheApi) {
  TempDir dir;
  std::string skip_reason;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store,
                            OpenStore(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason)));
  FakeClock clock;
  BatchSizeService service(store.get(), &clock);
  HttpServerOptions options;
  options.token = "s3cret";
  HttpServer server(&service, options);
  auto page = [](const HttpRequest& req) {
    HttpResponse response;
    response.content_type = "text/html";
    response.body = "<p>" + req.path + "</p>";
    return response;
  };
  ZEUS_ASSERT_OK(server.AddRoutes({
      {"GET", "/about", page, HttpRoute::Match::kExact, HttpRoute::Access::kPublic},
      {"GET", "/static/", page, HttpRoute::Match::kPrefix, HttpRoute::Access::kPublic},
      {"GET", "/private/", page, HttpRoute::Match::kPrefix, HttpRoute::Access::kToken},
  }));
  Status taken = server.AddRoutes({{"GET", "/jobs", page}});
  EXPECT_EQ(taken.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(taken.message(), HasSubstr("GET /jobs"));
  // The dashboard's own routes are taken too.
  EXPECT_EQ(server.AddRoutes({{"GET", "/", page}}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(server.AddRoutes({{"GET", "nope", page}}).code(), StatusCode::kInvalidArgument);
  ZEUS_ASSERT_OK(server.Start());
  TestClient client(server.port());
  HttpReply about = Send(client, "GET", "/about");
  EXPECT_EQ(about.status, 200);
  EXPECT_EQ(about.raw, "<p>/about</p>");
  EXPECT_EQ(Send(client, "GET", "/static/chart.js").raw, "<p>/static/chart.js</p>");
  EXPECT_EQ(Send(client, "GET", "/private/jobs/j-1").status, 401);
  EXPECT_EQ(Send(client, "GET", "/private/jobs/j-1", "", {{"Authorization", "Bearer s3cret"}}).raw,
            "<p>/private/jobs/j-1</p>");
  HttpReply post = Send(client, "POST", "/static/x", "{}");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.Header("Allow"), "GET, HEAD");
  EXPECT_EQ(Send(client, "GET", "/jobs").status, 401);  // The API keeps its rule.
  server.Stop();
}

}  // namespace
}  // namespace zeus::testing
