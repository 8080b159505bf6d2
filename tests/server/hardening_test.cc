// Hostile and careless clients (issue 14) against the HTTP server and the
// service, on SQLite and on PostgreSQL: reports never move a trial back,
// absurd numbers never reach the bandit, wrong methods and bad identifiers
// get clear 4xx answers, a body-less POST is answered at once, a second
// server cannot share a port, interrupted trials are given up on at the
// pace of their job, and the access log sees every request.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"
#include "tests/testing/raw_socket.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class HardeningTest : public ServiceHttpTest {};

TEST_P(HardeningTest, OlderEpochReportIsANoOpAnsweredWithCurrentState) {
  json job = JobBody("j-1");
  job["max_epochs"] = 100;
  ASSERT_EQ(Register(job).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply at35 = Report("j-1", 128, 1, 350.0, 35000.0, 0.3, 35);
  ASSERT_EQ(at35.status, 200) << at35.raw;
  EXPECT_EQ(at35.body["stop_train"], false);
  // A late report of epoch 30 (a retry after a timeout) must not rewrite it.
  HttpReply late = Report("j-1", 128, 1, 1.0, 1.0, 0.3, 30);
  ASSERT_EQ(late.status, 200) << late.raw;
  EXPECT_EQ(late.body["stop_train"], false);
  EXPECT_EQ(late.body["converged"], false);
  EXPECT_THAT(late.body["message"].get<std::string>(), HasSubstr("epoch 35"));
  json trial = Trial("j-1", 0);
  EXPECT_EQ(trial["current_epoch"], 35);
  EXPECT_EQ(trial["time"], 350.0);
  EXPECT_EQ(trial["energy"], 35000.0);
  EXPECT_EQ(trial["status"], "dispatched");
  // Even a late report that would reach the target changes nothing.
  EXPECT_EQ(Report("j-1", 128, 1, 1.0, 1.0, 0.9, 34).body["stop_train"], false);
  EXPECT_EQ(Trial("j-1", 0)["status"], "dispatched");
  // The next epoch still counts.
  HttpReply done = Report("j-1", 128, 1, 360.0, 36000.0, 0.9, 36);
  EXPECT_EQ(done.body["stop_train"], true);
  EXPECT_EQ(done.body["converged"], true);
  EXPECT_EQ(Trial("j-1", 0)["current_epoch"], 36);
}

TEST_P(HardeningTest, SameReportTwiceIsIdempotent) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply first = Report("j-1", 128, 1, 10.0, 1000.0, 0.3, 1);
  ASSERT_EQ(first.status, 200) << first.raw;
  json stored = Trial("j-1", 0);
  server_->clock().AdvanceSeconds(5);
  HttpReply second = Report("j-1", 128, 1, 10.0, 1000.0, 0.3, 1);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body, first.body);
  EXPECT_EQ(Trial("j-1", 0), stored);  // Not even updated_at_s moved.
  // The same epoch with other numbers is not a rewrite either.
  HttpReply other = Report("j-1", 128, 1, 1.0, 1.0, 0.3, 1);
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body["stop_train"], false);
  EXPECT_EQ(Trial("j-1", 0), stored);
}

TEST_P(HardeningTest, ReportNumbersOutOfPhysicalRangeAre422AndLeaveTheTrialUsable) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  struct Case {
    const char* field;
    json value;
  };
  const Case cases[] = {{"time", 1e160},    {"time", 1.7e308},         {"time", 2e9},
                        {"energy", 1e160},  {"energy", 1.7e308},       {"metric", 1e300},
                        {"metric", -1e300}, {"current_epoch", 2e9 + 1}};
  for (const Case& c : cases) {
    json body = ReportBody("j-1", 128, 1, 10.0, 1000.0, 0.9, 1);
    body[c.field] = c.value;
    if (std::string(c.field) == "current_epoch") body[c.field] = int64_t{2'000'000'001};
    HttpReply reply = Do("POST", "/report", body.dump());
    EXPECT_EQ(reply.status, 422) << c.field << "=" << c.value << ": " << reply.raw;
    ASSERT_TRUE(reply.body.is_object()) << reply.raw;
    const std::string message = reply.body["message"];
    EXPECT_THAT(message, HasSubstr(c.field));
    EXPECT_THAT(message, HasSubstr("outside ["));
  }
  // Nothing was stored, the trial is still dispatched and takes a good report.
  json trial = Trial("j-1", 0);
  EXPECT_EQ(trial["status"], "dispatched");
  EXPECT_TRUE(trial["time"].is_null());
  HttpReply good = Report("j-1", 128, 1, 10.0, 1000.0, 0.9, 1);
  EXPECT_EQ(good.body["converged"], true) << good.raw;
  HttpReply arms = Do("GET", "/jobs/arms?job_id=j-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  for (const json& arm : arms.body["arms"]) {
    EXPECT_FALSE(arm["mean"].is_null()) << arms.raw;
  }
}

TEST_P(HardeningTest, AbsurdReportsNeverPoisonTheBandit) {
  json body = JobBody("j-1");
  body["num_pruning_rounds"] = 0;  // Straight to the bandit.
  body["mab_num_explorations"] = 1;
  ASSERT_EQ(Register(body).status, 201);
  // Every arm gets a few huge and a few tiny (but legal) costs, then absurd
  // ones that must be refused.
  for (int round = 0; round < 8; ++round) {
    HttpReply next = Next("j-1");
    ASSERT_EQ(next.status, 200) << next.raw;
    const int64_t size = next.body["batch_size"];
    const int64_t number = next.body["trial_number"];
    EXPECT_EQ(Report("j-1", size, number, 1e160, 1.0, 0.9, 1).status, 422);
    const double time_s = round % 2 == 0 ? 1e9 : 1e-300;
    const double energy_j = round % 2 == 0 ? 1e15 : 1e-300;
    HttpReply final = Report("j-1", size, number, time_s, energy_j, 0.9, 1);
    ASSERT_EQ(final.status, 200) << final.raw;
    EXPECT_EQ(final.body["stop_train"], true);
  }
  HttpReply arms = Do("GET", "/jobs/arms?job_id=j-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  for (const json& arm : arms.body["arms"]) {
    ASSERT_TRUE(arm["mean"].is_number()) << arms.raw;
    EXPECT_TRUE(std::isfinite(arm["mean"].get<double>())) << arms.raw;
  }
  // A restarted server loads the same finite state.
  server_ = std::make_unique<TestServer>(url_);
  ASSERT_TRUE(server_->ok()) << server_->error();
  client_ = std::make_unique<TestClient>(server_->port());
  HttpReply reloaded = Do("GET", "/jobs/arms?job_id=j-1");
  ASSERT_EQ(reloaded.status, 200) << reloaded.raw;
  EXPECT_EQ(reloaded.body["arms"], arms.body["arms"]);
}

TEST_P(HardeningTest, RegistrationNumbersOutOfPhysicalRangeAre422) {
  struct Case {
    const char* field;
    json value;
  };
  const Case cases[] = {{"max_power", 1e300},
                        {"max_power", 1e8},
                        {"number_of_gpus", int64_t{10'000'000}},
                        {"max_epochs", 2'000'000'000},
                        {"target_metric", 1e300},
                        {"mab_prior_mean", -1e300},
                        {"mab_prior_precision", 1e300}};
  for (const Case& c : cases) {
    json body = JobBody("j-1");
    body[c.field] = c.value;
    HttpReply reply = Register(body);
    EXPECT_EQ(reply.status, 422) << c.field << ": " << reply.raw;
    EXPECT_THAT(reply.raw, HasSubstr(c.field));
  }
  EXPECT_EQ(Next("j-1").status, 404);  // Nothing was created.
}

TEST_P(HardeningTest, WrongMethodOnKnownPathIs405WithAllow) {
  HttpReply put = Do("PUT", "/jobs", "{}");
  EXPECT_EQ(put.status, 405) << put.raw;
  EXPECT_EQ(put.Header("Allow"), "GET, HEAD, POST, DELETE");
  EXPECT_THAT(put.body["message"].get<std::string>(), HasSubstr("PUT"));
  HttpReply post = Do("POST", "/jobs/batch_size", "{}");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.Header("Allow"), "GET, HEAD");
  EXPECT_EQ(Do("DELETE", "/report").status, 405);
  EXPECT_EQ(Do("GET", "/report").status, 405);
  EXPECT_EQ(Do("POST", "/health", "{}").status, 405);
  EXPECT_EQ(Do("HEAD", "/health").status, 200);
  EXPECT_EQ(Do("PUT", "/nowhere", "{}").status, 404);
}

TEST_P(HardeningTest, IdentifiersMustBePrintableAndBounded) {
  // Through the query string: CR/LF and NUL, and an overlong id.
  for (const std::string& encoded : {std::string("a%0D%0Ab"), std::string("a%00b"),
                                     std::string("a%7Fb"), std::string(300, 'a')}) {
    for (const char* path :
         {"/jobs/batch_size?job_id=", "/trials?job_id=", "/jobs/arms?job_id=", "/jobs?job_id="}) {
      HttpReply reply = Do("GET", path + encoded);
      EXPECT_EQ(reply.status, 422) << path << encoded << ": " << reply.raw;
      EXPECT_THAT(reply.raw, HasSubstr("job_id")) << path << encoded;
    }
    EXPECT_EQ(Do("DELETE", "/jobs?job_id=" + encoded).status, 422);
  }
  // Through bodies.
  json body = JobBody("j-1");
  body["job_id"] = nullptr;
  body["job_id_prefix"] = "evil\r\nSet-Cookie: x";
  HttpReply reply = Register(body);
  EXPECT_EQ(reply.status, 422) << reply.raw;
  EXPECT_THAT(reply.raw, HasSubstr("job_id_prefix"));
  body["job_id_prefix"] = std::string("nul") + '\0' + "x";
  EXPECT_EQ(Register(body).status, 422);
  body["job_id_prefix"] = std::string(250, 'p');  // Too long with "-" and 8 hex chars.
  EXPECT_EQ(Register(body).status, 422);
  body = JobBody("j-1");
  body["job_id"] = "j-" + std::string(300, 'x');
  reply = Register(body);
  EXPECT_EQ(reply.status, 422);
  EXPECT_THAT(reply.raw, HasSubstr("job_id"));
  body["job_id"] = "j-\n";
  EXPECT_EQ(Register(body).status, 422);
  EXPECT_EQ(Do("POST", "/report", ReportBody("j-\n1", 128, 1, 1, 1, 0.1, 1).dump()).status, 422);
  json id{{"job_id", "j\r1"}, {"batch_size", 128}, {"trial_number", 1}};
  EXPECT_EQ(Do("PATCH", "/trials", id.dump()).status, 422);
  // UTF-8 text is printable.
  body = JobBody("j-1");
  body["job_id"] = "j-r\xC3\xA9sum\xC3\xA9";
  EXPECT_EQ(Register(body).status, 201);
  HttpReply jobs = Do("GET", "/jobs");
  ASSERT_EQ(jobs.body["jobs"].size(), 1u) << jobs.raw;
}

// Sends `request` on a fresh connection and returns the answer's head (and
// what came with it), read until the server closes or 60 s pass.
std::string RawExchange(int port, const std::string& request) {
  RawClient client(port);
  if (!client.connected()) return "connect failed";
  client.Send(request);
  return client.ReadUntil("\r\n\r\n", 60);
}

TEST_P(HardeningTest, BodylessRequestsAreAnsweredWithoutWaitingForTheBody) {
  HttpServerOptions options;
  // Far beyond RawExchange's 60 s: the answer can only come from the fix.
  options.read_timeout_s = 600;
  StartServer(options);
  // The connection stays open (keep-alive), so the server cannot wait for EOF.
  std::string answer = RawExchange(server_->port(), "POST /jobs HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 400")) << answer;
  answer = RawExchange(server_->port(), "DELETE /jobs?job_id=none-1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 404")) << answer;
  answer = RawExchange(server_->port(), "PATCH /trials HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 400")) << answer;
}

TEST_P(HardeningTest, InterruptedTrialIsFailedAtThePaceOfItsJob) {
  BatchSizeServiceOptions service_options;
  service_options.silent_trial_timeout_s = 86400;
  service_options.min_silent_trial_timeout_s = 600;
  service_options.silent_epochs = 4;
  StartServer(HttpServerOptions{}, service_options);
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Register(JobBody("k-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);  // Trial 1: exploration, 128.
  ASSERT_EQ(Next("k-1").status, 200);  // A new job's first trial: no pace known.
  server_->clock().AdvanceSeconds(300);
  // 300 s per epoch (wall) is the pace: 4 epochs = 1200 s of silence allowed.
  ASSERT_EQ(Report("j-1", 128, 1, 250.0, 1000.0, 0.1, 1).body["stop_train"], false);
  server_->clock().AdvanceSeconds(1100);
  ZEUS_ASSERT_OK_AND_ASSIGN(int failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 0);
  server_->clock().AdvanceSeconds(200);
  ZEUS_ASSERT_OK_AND_ASSIGN(failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 1);
  json trial = Trial("j-1", 0);
  EXPECT_EQ(trial["status"], "failed");
  EXPECT_THAT(trial["message"].get<std::string>(), HasSubstr("no report for more than 1200 s"));
  // The lost exploration step is handed out again at once, not after a day.
  HttpReply retry = Next("j-1");
  EXPECT_EQ(retry.body["batch_size"], 128);
  EXPECT_EQ(retry.body["trial_number"], 2);
  // Before its first report a trial gets its job's slowest pace: here the
  // failed trial's reported 250 s per epoch (its wall time ends at the
  // failure, so it does not count), so 1000 s.
  server_->clock().AdvanceSeconds(999);
  ZEUS_ASSERT_OK_AND_ASSIGN(failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 0);
  server_->clock().AdvanceSeconds(2);
  ZEUS_ASSERT_OK_AND_ASSIGN(failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(Trial("j-1", 1)["status"], "failed");
  // The other job's trial (43 min silent, no pace known) waits for the day.
  EXPECT_EQ(Trial("k-1", 0)["status"], "dispatched");
  server_->clock().AdvanceSeconds(86400);
  ZEUS_ASSERT_OK_AND_ASSIGN(failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(Trial("k-1", 0)["status"], "failed");
}

TEST_P(HardeningTest, PacedTimeoutNeverFailsSoonerThanTheFloor) {
  BatchSizeServiceOptions service_options;
  service_options.silent_trial_timeout_s = 86400;
  service_options.min_silent_trial_timeout_s = 600;
  StartServer(HttpServerOptions{}, service_options);
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  server_->clock().AdvanceSeconds(1);
  ASSERT_EQ(Report("j-1", 128, 1, 1.0, 10.0, 0.1, 1).body["stop_train"], false);  // 1 s/epoch.
  server_->clock().AdvanceSeconds(599);
  ZEUS_ASSERT_OK_AND_ASSIGN(int failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 0);
  server_->clock().AdvanceSeconds(2);
  ZEUS_ASSERT_OK_AND_ASSIGN(failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 1);
}

TEST_P(HardeningTest, AccessLogRecordsMethodPathStatusAndLatency) {
  std::mutex mutex;
  std::vector<AccessLogEntry> entries;
  HttpServerOptions options;
  options.access_log = [&](const AccessLogEntry& entry) {
    std::lock_guard<std::mutex> lock(mutex);
    entries.push_back(entry);
  };
  StartServer(options);
  ASSERT_EQ(Do("GET", "/health").status, 200);
  ASSERT_EQ(Do("PUT", "/jobs", "{}").status, 405);
  ASSERT_EQ(Do("GET", "/jobs/batch_size?job_id=a%0Ab").status, 422);
  server_.reset();  // Joins the workers.
  std::lock_guard<std::mutex> lock(mutex);
  // Each request came on its own connection, so the log lines may come in
  // any order.
  ASSERT_EQ(entries.size(), 3u);
  std::sort(entries.begin(), entries.end(),
            [](const AccessLogEntry& a, const AccessLogEntry& b) { return a.status < b.status; });
  EXPECT_EQ(entries[0].method, "GET");
  EXPECT_EQ(entries[0].path, "/health");
  EXPECT_EQ(entries[0].status, 200);
  EXPECT_GE(entries[0].latency_s, 0.0);
  EXPECT_EQ(entries[0].remote_addr, "127.0.0.1");
  EXPECT_EQ(entries[1].method, "PUT");
  EXPECT_EQ(entries[1].path, "/jobs");
  EXPECT_EQ(entries[1].status, 405);
  EXPECT_GE(entries[1].latency_s, 0.0);
  EXPECT_EQ(entries[2].method, "GET");
  EXPECT_EQ(entries[2].path, "/jobs/batch_size");  // Without the query.
  EXPECT_EQ(entries[2].status, 422);
}

TEST_P(HardeningTest, MigrationFromSchema1DropsMinCostAndKeepsTheJob) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  // Cost 0.5 * 2000 + 0.5 * 300 * 20 = 4000.
  ASSERT_EQ(Report("j-1", 128, 1, 20.0, 2000.0, 0.9, 2).body["converged"], true);
  server_.reset();
  // Turn the database back into schema 1: the min_cost column, here with a
  // value that disagrees with the optimizer state.
  ZEUS_ASSERT_OK(ExecRawSql(url_,
                            "ALTER TABLE zeus_jobs ADD COLUMN min_cost DOUBLE PRECISION; "
                            "UPDATE zeus_jobs SET min_cost = 7; "
                            "UPDATE zeus_schema_version SET version = 1"));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, OpenStore(url_));
  ZEUS_ASSERT_OK_AND_ASSIGN(int version, store->SchemaVersion());
  EXPECT_EQ(version, 2);
  store.reset();
  Status gone = ExecRawSql(url_, "UPDATE zeus_jobs SET min_cost = 1");
  EXPECT_FALSE(gone.ok());
  EXPECT_THAT(gone.ToString(), HasSubstr("min_cost"));
  // The job goes on, its lowest cost read from the optimizer state.
  server_ = std::make_unique<TestServer>(url_);
  ASSERT_TRUE(server_->ok()) << server_->error();
  client_ = std::make_unique<TestClient>(server_->port());
  HttpReply job = Do("GET", "/jobs?job_id=j-1");
  ASSERT_EQ(job.status, 200) << job.raw;
  EXPECT_DOUBLE_EQ(job.body["min_cost"].get<double>(), 4000.0);
  HttpReply next = Next("j-1");
  ASSERT_EQ(next.status, 200) << next.raw;
  EXPECT_EQ(next.body["trial_number"], 2);
}

INSTANTIATE_TEST_SUITE_P(Stores, HardeningTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

// A port is never shared: a second server on the port of a running one fails
// to start, naming the address, and the first keeps serving.
TEST(HttpServerPortTest, SecondServerOnABusyPortIsRefused) {
  TempDir dir;
  std::string skip_reason;
  TestServer first(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason));
  ASSERT_TRUE(first.ok()) << first.error();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store,
                            OpenStore(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason)));
  FakeClock clock;
  BatchSizeService service(store.get(), &clock);
  HttpServerOptions options;
  options.port = first.port();
  HttpServer second(&service, options);
  Status status = second.Start();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("127.0.0.1:" + std::to_string(first.port())));
  EXPECT_THAT(status.message(), HasSubstr("in use"));
  TestClient client(first.port());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Send(client, "GET", "/health").status, 200);
}

}  // namespace
}  // namespace zeus::testing
