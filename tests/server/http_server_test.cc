// Every route and error case of the batch-size server over real HTTP on
// 127.0.0.1, on SQLite and on PostgreSQL.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class HttpServerTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { StartServer(HttpServerOptions{}); }

  void StartServer(HttpServerOptions options, BatchSizeServiceOptions service_options = {},
                   size_t max_body_bytes = 64 * 1024) {
    std::string skip_reason;
    std::string url = NewDatabaseUrl(GetParam(), dir_, &skip_reason);
    if (url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
    ASSERT_FALSE(url.empty());
    options.max_body_bytes = max_body_bytes;
    server_ = std::make_unique<TestServer>(url, std::move(options), service_options);
    ASSERT_TRUE(server_->ok()) << server_->error();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  HttpReply Do(const std::string& method, const std::string& path, const std::string& body = "") {
    return Send(*client_, method, path, body);
  }
  HttpReply Register(const json& body) { return Do("POST", "/jobs", body.dump()); }
  HttpReply Next(const std::string& job_id) {
    return Do("GET", "/jobs/batch_size?job_id=" + job_id);
  }
  HttpReply Report(const std::string& job_id, int64_t batch_size, int64_t trial, double time_s,
                   double energy_j, double metric, int64_t epoch) {
    json body{{"job_id", job_id},      {"batch_size", batch_size}, {"trial_number", trial},
              {"time", time_s},        {"energy", energy_j},       {"metric", metric},
              {"current_epoch", epoch}};
    return Do("POST", "/report", body.dump());
  }
  // The server answers /health with 200 (it keeps serving).
  void ExpectHealthy() {
    HttpReply health = Do("GET", "/health");
    EXPECT_EQ(health.status, 200) << health.raw;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_P(HttpServerTest, HealthNamesStoreAndSchemaVersion) {
  HttpReply reply = Do("GET", "/health");
  ASSERT_EQ(reply.status, 200) << reply.raw;
  EXPECT_EQ(reply.body["status"], "ok");
  EXPECT_EQ(reply.body["store"], GetParam() == Backend::kSqlite ? "sqlite" : "postgresql");
  EXPECT_EQ(reply.body["schema_version"], kStoreSchemaVersion);
}

TEST_P(HttpServerTest, RegisterCreatesThenAcceptsIdenticalAndRejectsConflict) {
  json body = JobBody("mnist-a");
  body["batch_sizes"] = {256, 32, 128, 64};
  HttpReply created = Register(body);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body["job_id"], "mnist-a");
  EXPECT_EQ(created.body["batch_sizes"], json({32, 64, 128, 256}));  // Stored sorted.
  HttpReply again = Register(body);
  EXPECT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body, created.body);
  body["eta_knob"] = 0.7;
  HttpReply conflict = Register(body);
  EXPECT_EQ(conflict.status, 409) << conflict.raw;
  EXPECT_THAT(conflict.body["message"].get<std::string>(), HasSubstr("mnist-a"));
}

TEST_P(HttpServerTest, NullJobIdGetsPrefixAndEightHexChars) {
  json body = JobBody("mnist-x");
  body["job_id"] = nullptr;
  body["job_id_prefix"] = "mnist";
  HttpReply created = Register(body);
  ASSERT_EQ(created.status, 201) << created.raw;
  std::string id = created.body["job_id"];
  ASSERT_EQ(id.size(), std::string("mnist-").size() + 8) << id;
  EXPECT_EQ(id.rfind("mnist-", 0), 0u);
  EXPECT_EQ(id.substr(6).find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(Next(id).status, 200);
}

TEST_P(HttpServerTest, DefaultsApplyToMissingOptionalFields) {
  json body{{"job_id", "p-1"},         {"job_id_prefix", "p"}, {"batch_sizes", {8, 16}},
            {"default_batch_size", 8}, {"max_power", 250},     {"number_of_gpus", 2},
            {"gpu_model", "V100"}};
  HttpReply created = Register(body);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body["eta_knob"], 0.5);
  EXPECT_EQ(created.body["beta_knob"], 2.0);
  EXPECT_EQ(created.body["target_metric"], 0.5);
  EXPECT_EQ(created.body["higher_is_better_metric"], true);
  EXPECT_EQ(created.body["max_epochs"], 100);
  EXPECT_EQ(created.body["num_pruning_rounds"], 2);
  EXPECT_EQ(created.body["window_size"], 0);
  EXPECT_EQ(created.body["mab_num_explorations"], 2);
  EXPECT_TRUE(created.body["mab_seed"].is_null());
}

struct BadField {
  const char* field;
  json value;
};

TEST_P(HttpServerTest, InvalidRegistrationsAre422NamingTheField) {
  const BadField cases[] = {
      {"batch_sizes", json::array()},
      {"batch_sizes", {32, -64}},
      {"batch_sizes", "32,64"},
      {"batch_sizes", {32, 32, 64}},
      {"default_batch_size", 100},
      {"default_batch_size", 0},
      {"default_batch_size", "128"},
      {"eta_knob", 1.5},
      {"eta_knob", -0.1},
      {"beta_knob", 0},
      {"beta_knob", -1},
      {"max_epochs", 0},
      {"max_epochs", 2.5},
      {"num_pruning_rounds", -1},
      {"window_size", -3},
      {"mab_num_explorations", -1},
      {"mab_prior_precision", -1.0},
      {"mab_seed", "seven"},
      {"max_power", 0},
      {"max_power", "300W"},
      {"number_of_gpus", 0},
      {"gpu_model", ""},
      {"gpu_model", 40},
      {"higher_is_better_metric", "yes"},
      {"job_id", "other-1"},  // Does not start with the prefix.
      {"job_id_prefix", ""},
  };
  for (const BadField& c : cases) {
    json body = JobBody("job-1");
    body[c.field] = c.value;
    HttpReply reply = Register(body);
    EXPECT_EQ(reply.status, 422) << c.field << "=" << c.value << ": " << reply.raw;
    ASSERT_TRUE(reply.body.is_object()) << reply.raw;
    EXPECT_THAT(reply.body["message"].get<std::string>(), HasSubstr(c.field)) << reply.raw;
  }
  for (const char* required : {"batch_sizes", "default_batch_size", "max_power", "number_of_gpus",
                               "gpu_model", "job_id_prefix"}) {
    json body = JobBody("job-1");
    body.erase(required);
    HttpReply reply = Register(body);
    EXPECT_EQ(reply.status, 422) << required << ": " << reply.raw;
    EXPECT_THAT(reply.raw, HasSubstr(required));
  }
  std::string overflow = JobBody("job-1").dump();
  overflow.replace(overflow.find("300.0"), 5, "1e400");  // Out of double's range.
  HttpReply infinite = Do("POST", "/jobs", overflow);
  EXPECT_EQ(infinite.status, 400) << infinite.raw;
  json unknown = JobBody("job-1");
  unknown["learning_rate"] = 0.1;
  HttpReply reply = Register(unknown);
  EXPECT_EQ(reply.status, 422);
  EXPECT_THAT(reply.raw, HasSubstr("learning_rate"));
  EXPECT_EQ(Register(json::array({1, 2})).status, 422);
  EXPECT_EQ(Next("job-1").status, 404);  // Nothing was created.
  ExpectHealthy();
}

TEST_P(HttpServerTest, MalformedJsonIs400AndHugeBodyIs413) {
  for (const char* body : {"{", "{\"job_id\": ", "not json", "{\"energy\": NaN}", ""}) {
    HttpReply reply = Do("POST", "/jobs", body);
    EXPECT_EQ(reply.status, 400) << body;
    EXPECT_THAT(reply.body["message"].get<std::string>(), HasSubstr("malformed JSON"));
    EXPECT_EQ(Do("POST", "/report", body).status, 400) << body;
    EXPECT_EQ(Do("PATCH", "/trials", body).status, 400) << body;
  }
  json huge = JobBody("big-1");
  huge["gpu_model"] = std::string(200 * 1024, 'x');
  HttpReply reply = Register(huge);
  EXPECT_EQ(reply.status, 413) << reply.raw.substr(0, 200);
  EXPECT_TRUE(reply.body.contains("message")) << reply.raw.substr(0, 200);
  ExpectHealthy();
  EXPECT_EQ(Register(JobBody("big-1")).status, 201);
}

// Issue 14: 100,000 balanced brackets (200 KB) once overflowed the stack and
// killed the server. Bodies nested deeper than ParseJson's limit are 400.
TEST_P(HttpServerTest, DeeplyNestedBodyIs400AndTheServerKeepsServing) {
  server_.reset();
  StartServer(HttpServerOptions{}, {}, /*max_body_bytes=*/1 << 20);
  if (IsSkipped()) return;
  const std::string balanced = std::string(100000, '[') + std::string(100000, ']');
  std::string objects;
  for (int i = 0; i < 20000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(20000, '}');
  for (const std::string& body : {balanced, objects}) {
    for (const char* route : {"/jobs", "/report"}) {
      HttpReply reply = Do("POST", route, body);
      EXPECT_EQ(reply.status, 400) << route << ": " << reply.raw.substr(0, 200);
      ASSERT_TRUE(reply.body.is_object()) << reply.raw.substr(0, 200);
      EXPECT_THAT(reply.body["message"].get<std::string>(),
                  HasSubstr("nesting deeper than 64 levels"));
    }
    EXPECT_EQ(Do("PATCH", "/trials", body).status, 400);
    ExpectHealthy();
  }
  // Nesting within the limit is only a wrong type, and duplicate keys are refused.
  HttpReply nested = Do("POST", "/jobs", std::string(10, '[') + std::string(10, ']'));
  EXPECT_EQ(nested.status, 422) << nested.raw;
  std::string duplicate = JobBody("dup-1").dump();
  duplicate.insert(1, "\"gpu_model\": \"other\", ");
  HttpReply dup = Do("POST", "/jobs", duplicate);
  EXPECT_EQ(dup.status, 400) << dup.raw;
  EXPECT_THAT(dup.body["message"].get<std::string>(), HasSubstr("duplicate key 'gpu_model'"));
  EXPECT_EQ(Register(JobBody("dup-1")).status, 201);
}

TEST_P(HttpServerTest, UnknownRoutesAndMissingQueryAreJsonErrors) {
  HttpReply missing = Do("GET", "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(missing.body.contains("message"));
  HttpReply no_id = Do("GET", "/jobs/batch_size");
  EXPECT_EQ(no_id.status, 422);
  EXPECT_THAT(no_id.raw, HasSubstr("job_id"));
  EXPECT_EQ(Do("DELETE", "/jobs").status, 422);
  EXPECT_EQ(Do("GET", "/trials").status, 422);
  EXPECT_EQ(Do("GET", "/jobs/arms").status, 422);
}

TEST_P(HttpServerTest, TrialNumbersStartAtOneAndFirstTrialIsTheDefault) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  HttpReply first = Next("j-1");
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(first.body, json({{"job_id", "j-1"}, {"batch_size", 128}, {"trial_number", 1}}));
  HttpReply second = Next("j-1");
  EXPECT_EQ(second.body["trial_number"], 2);
  EXPECT_EQ(Next("missing-1").status, 404);
}

TEST_P(HttpServerTest, ReportKeepsTrainingThenStopsWhenTargetReached) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply keep = Report("j-1", 128, 1, 10.0, 1000.0, 0.3, 1);
  ASSERT_EQ(keep.status, 200) << keep.raw;
  EXPECT_EQ(keep.body["stop_train"], false);
  EXPECT_EQ(keep.body["converged"], false);
  HttpReply done = Report("j-1", 128, 1, 20.0, 2000.0, 0.6, 2);
  ASSERT_EQ(done.status, 200) << done.raw;
  EXPECT_EQ(done.body["stop_train"], true);
  EXPECT_EQ(done.body["converged"], true);
  // A repeated final report answers the stored outcome; nothing is counted twice.
  HttpReply repeated = Report("j-1", 128, 1, 99.0, 9999.0, 0.1, 3);
  EXPECT_EQ(repeated.body, done.body);
  HttpReply trials = Do("GET", "/trials?job_id=j-1");
  ASSERT_EQ(trials.status, 200);
  ASSERT_EQ(trials.body["trials"].size(), 1u);
  const json& t = trials.body["trials"][0];
  EXPECT_EQ(t["status"], "succeeded");
  EXPECT_EQ(t["energy"], 2000.0);
  EXPECT_EQ(t["current_epoch"], 2);
  // cost = 0.5 * 2000 + 0.5 * 300 * 20.
  EXPECT_DOUBLE_EQ(t["cost"].get<double>(), 4000.0);
  HttpReply arms = Do("GET", "/jobs/arms?job_id=j-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  EXPECT_DOUBLE_EQ(arms.body["min_cost"].get<double>(), 4000.0);
  EXPECT_EQ(arms.body["exploring"], true);
}

TEST_P(HttpServerTest, LowerIsBetterMetricAndMaxEpochs) {
  json body = JobBody("j-1");
  body["higher_is_better_metric"] = false;
  body["target_metric"] = 0.2;
  body["max_epochs"] = 3;
  ASSERT_EQ(Register(body).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  EXPECT_EQ(Report("j-1", 128, 1, 1, 1, 0.5, 1).body["stop_train"], false);
  EXPECT_EQ(Report("j-1", 128, 1, 2, 2, 0.3, 2).body["stop_train"], false);
  HttpReply last = Report("j-1", 128, 1, 3, 3, 0.25, 3);
  EXPECT_EQ(last.body["stop_train"], true);
  EXPECT_EQ(last.body["converged"], false);
  EXPECT_THAT(last.body["message"].get<std::string>(), HasSubstr("max_epochs"));
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply reached = Report("j-1", 64, 2, 1, 1, 0.1, 1);
  if (reached.status == 422) {  // The walk went elsewhere; find the batch size.
    HttpReply trials = Do("GET", "/trials?job_id=j-1");
    int64_t size = trials.body["trials"][1]["batch_size"];
    reached = Report("j-1", size, 2, 1, 1, 0.1, 1);
  }
  EXPECT_EQ(reached.body["converged"], true) << reached.raw;
}

TEST_P(HttpServerTest, EarlyStopsPastBetaTimesLowestCost) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  // Cost 0.5 * 100 + 0.5 * 300 * 1 = 200.
  ASSERT_EQ(Report("j-1", 128, 1, 1.0, 100.0, 0.9, 1).body["converged"], true);
  HttpReply next = Next("j-1");
  int64_t size = next.body["batch_size"];
  // Cost 0.5 * 200 + 150 = 250 <= 400: keep going.
  EXPECT_EQ(Report("j-1", size, 2, 1.0, 200.0, 0.1, 1).body["stop_train"], false);
  // Cost 0.5 * 600 + 0.5 * 300 * 2 = 600 > 2 x 200.
  HttpReply stopped = Report("j-1", size, 2, 2.0, 600.0, 0.9, 2);
  EXPECT_EQ(stopped.body["stop_train"], true);
  EXPECT_EQ(stopped.body["converged"], false);
  EXPECT_THAT(stopped.body["message"].get<std::string>(), HasSubstr("cost upper bound"));
}

TEST_P(HttpServerTest, BadReportsAre4xxAndServerKeepsServing) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  EXPECT_EQ(Report("j-1", 128, 7, 1, 1, 0.1, 1).status, 404);       // Unknown trial.
  EXPECT_EQ(Report("nope-1", 128, 1, 1, 1, 0.1, 1).status, 404);    // Unknown job.
  EXPECT_EQ(Report("j-1", 64, 1, 1, 1, 0.1, 1).status, 422);        // Wrong batch size.
  EXPECT_EQ(Report("j-1", 128, 1, 1, -5.0, 0.1, 1).status, 422);    // Negative energy.
  EXPECT_EQ(Report("j-1", 128, 1, -1.0, 5.0, 0.1, 1).status, 422);  // Negative time.
  EXPECT_EQ(Report("j-1", 128, 1, 1, 5.0, 0.1, 0).status, 422);     // Epoch 0.
  EXPECT_EQ(Report("j-1", 128, 0, 1, 5.0, 0.1, 1).status, 422);     // Trial 0.
  json report{{"job_id", "j-1"}, {"batch_size", 128}, {"trial_number", 1}, {"time", 1.0},
              {"energy", "NaN"}, {"metric", 0.1},     {"current_epoch", 1}};
  HttpReply nan = Do("POST", "/report", report.dump());
  EXPECT_EQ(nan.status, 422);
  EXPECT_THAT(nan.raw, HasSubstr("energy"));
  std::string raw_nan = report.dump();
  raw_nan.replace(raw_nan.find("\"NaN\""), 5, "NaN");
  EXPECT_EQ(Do("POST", "/report", raw_nan).status, 400);
  report["energy"] = 1.0;
  report["extra"] = true;
  HttpReply extra = Do("POST", "/report", report.dump());
  EXPECT_EQ(extra.status, 422);
  EXPECT_THAT(extra.raw, HasSubstr("extra"));
  report.erase("extra");
  report.erase("metric");
  EXPECT_EQ(Do("POST", "/report", report.dump()).status, 422);
  report["metric"] = 0.1;
  report["trial_number"] = "1";
  EXPECT_EQ(Do("POST", "/report", report.dump()).status, 422);
  ExpectHealthy();
  // The trial is untouched and still accepts a good report.
  EXPECT_EQ(Report("j-1", 128, 1, 1, 5.0, 0.1, 1).body["stop_train"], false);
}

TEST_P(HttpServerTest, EndTrialFailsDispatchedTrialOnce) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  json id{{"job_id", "j-1"}, {"batch_size", 128}, {"trial_number", 1}};
  HttpReply ended = Do("PATCH", "/trials", id.dump());
  ASSERT_EQ(ended.status, 200) << ended.raw;
  EXPECT_EQ(ended.body["status"], "failed");
  HttpReply again = Do("PATCH", "/trials", id.dump());
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body["status"], "failed");
  // A report after the end answers the stored outcome.
  HttpReply late = Report("j-1", 128, 1, 1, 1, 0.9, 1);
  EXPECT_EQ(late.body["stop_train"], true);
  EXPECT_EQ(late.body["converged"], false);
  // The abandoned exploration step is handed out again.
  HttpReply retry = Next("j-1");
  EXPECT_EQ(retry.body["batch_size"], 128);
  EXPECT_EQ(retry.body["trial_number"], 2);
  id["trial_number"] = 9;
  EXPECT_EQ(Do("PATCH", "/trials", id.dump()).status, 404);
  id["job_id"] = "zzz";
  EXPECT_EQ(Do("PATCH", "/trials", id.dump()).status, 404);
  EXPECT_EQ(Do("PATCH", "/trials", "{\"job_id\": \"j-1\"}").status, 422);
}

TEST_P(HttpServerTest, SilentTrialsAreFailedAfterTimeout) {
  BatchSizeServiceOptions service_options;
  service_options.silent_trial_timeout_s = 60.0;
  StartServer(HttpServerOptions{}, service_options);
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  ASSERT_EQ(Next("j-1").status, 200);
  server_->clock().AdvanceSeconds(40);
  EXPECT_EQ(Report("j-1", 128, 2, 1, 1, 0.1, 1).body["stop_train"], false);  // Trial 2 speaks.
  server_->clock().AdvanceSeconds(30);
  ZEUS_ASSERT_OK_AND_ASSIGN(int failed, server_->service().FailSilentTrials());
  EXPECT_EQ(failed, 1);
  HttpReply trials = Do("GET", "/trials?job_id=j-1");
  EXPECT_EQ(trials.body["trials"][0]["status"], "failed");
  EXPECT_THAT(trials.body["trials"][0]["message"].get<std::string>(), HasSubstr("no report"));
  EXPECT_EQ(trials.body["trials"][1]["status"], "dispatched");
}

TEST_P(HttpServerTest, DeleteRemovesJobAndTrials) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  ASSERT_EQ(Register(JobBody("k-1")).status, 201);
  ASSERT_EQ(Next("j-1").status, 200);
  EXPECT_EQ(Do("DELETE", "/jobs?job_id=j-1").status, 200);
  EXPECT_EQ(Do("DELETE", "/jobs?job_id=j-1").status, 404);
  EXPECT_EQ(Next("j-1").status, 404);
  EXPECT_EQ(Do("GET", "/trials?job_id=j-1").status, 404);
  HttpReply jobs = Do("GET", "/jobs");
  ASSERT_EQ(jobs.status, 200);
  ASSERT_EQ(jobs.body["jobs"].size(), 1u);
  EXPECT_EQ(jobs.body["jobs"][0]["job_id"], "k-1");
  // Re-registering the deleted id starts afresh.
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  EXPECT_EQ(Next("j-1").body["trial_number"], 1);
}

TEST_P(HttpServerTest, ReadEndpointsShowJobTrialsAndArms) {
  ASSERT_EQ(Register(JobBody("j-1")).status, 201);
  HttpReply job = Do("GET", "/jobs?job_id=j-1");
  ASSERT_EQ(job.status, 200) << job.raw;
  EXPECT_EQ(job.body["job"]["gpu_model"], "A40");
  EXPECT_TRUE(job.body["min_cost"].is_null());
  EXPECT_EQ(Do("GET", "/jobs?job_id=none-1").status, 404);
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply arms = Do("GET", "/jobs/arms?job_id=j-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  EXPECT_EQ(arms.body["in_flight"].size(), 1u);
  EXPECT_EQ(arms.body["in_flight"][0]["kind"], "exploration");
  EXPECT_EQ(arms.body["best_batch_size"], 128);
  HttpReply trials = Do("GET", "/trials?job_id=j-1");
  EXPECT_EQ(trials.body["trials"][0]["kind"], "exploration");
  EXPECT_EQ(trials.body["trials"][0]["status"], "dispatched");
}

TEST_P(HttpServerTest, TokenGuardsEveryRouteButHealth) {
  TempDir token_dir;
  std::string token_file = token_dir.WriteFile("token", "s3cret\n");
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string token, ReadTokenFile(token_file));
  EXPECT_EQ(token, "s3cret");
  HttpServerOptions options;
  options.token = token;
  StartServer(options);
  HttpReply denied = Register(JobBody("j-1"));
  EXPECT_EQ(denied.status, 401);
  EXPECT_THAT(denied.raw, HasSubstr("token"));
  EXPECT_EQ(
      Send(*client_, "POST", "/jobs", JobBody("j-1").dump(), {{"Authorization", "Bearer wrong"}})
          .status,
      401);
  EXPECT_EQ(Do("GET", "/jobs").status, 401);
  EXPECT_EQ(Do("GET", "/health").status, 200);
  httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  EXPECT_EQ(Send(*client_, "POST", "/jobs", JobBody("j-1").dump(), auth).status, 201);
  EXPECT_EQ(Send(*client_, "GET", "/jobs/batch_size?job_id=j-1", "", auth).status, 200);
}

// The request sequence of Zeus's Python client (zeus.optimizer.batch_size.
// client.BatchSizeOptimizer): pydantic's JobSpecFromClient.json() with every
// field (job_id null, integer max_power), TrialId.parse_obj of the answer,
// TrainingResult per epoch, and an atexit PATCH /trials even after the run
// finished, which must leave the finished trial alone.
TEST_P(HttpServerTest, PythonClientRequestSequenceWorks) {
  const std::string registration =
      R"({"job_id": null, "job_id_prefix": "mnist", "batch_sizes": [32, 64, 256, 128],)"
      R"( "default_batch_size": 64, "eta_knob": 0.5, "beta_knob": 2.0, "target_metric": 0.5,)"
      R"( "higher_is_better_metric": true, "max_epochs": 100, "num_pruning_rounds": 2,)"
      R"( "window_size": 0, "mab_prior_mean": 0.0, "mab_prior_precision": 0.0,)"
      R"( "mab_num_explorations": 2, "mab_seed": null, "max_power": 3000,)"
      R"( "number_of_gpus": 1, "gpu_model": "NVIDIA A40"})";
  HttpReply job = Do("POST", "/jobs", registration);
  ASSERT_EQ(job.status, 201) << job.raw;
  const std::string job_id = job.body["job_id"];
  EXPECT_EQ(job.body["batch_sizes"], json({32, 64, 128, 256}));
  HttpReply trial = Next(job_id);
  ASSERT_EQ(trial.status, 200) << trial.raw;
  EXPECT_EQ(trial.body["batch_size"], 64);
  const json trial_id = trial.body;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    HttpReply r =
        Report(job_id, 64, 1, 10.0 * epoch, 2000.0 * epoch, epoch == 3 ? 0.6 : 0.2, epoch);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["stop_train"], epoch == 3);
  }
  HttpReply at_exit = Do("PATCH", "/trials", trial_id.dump());
  ASSERT_EQ(at_exit.status, 200) << at_exit.raw;
  EXPECT_EQ(at_exit.body["status"], "succeeded");
  EXPECT_EQ(at_exit.body["converged"], true);
}

INSTANTIATE_TEST_SUITE_P(Stores, HttpServerTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

}  // namespace
}  // namespace zeus::testing
