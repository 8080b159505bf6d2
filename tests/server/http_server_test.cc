// Every route and error case of the batch-size server over real HTTP on
// 127.0.0.1, on SQLite and on PostgreSQL.

#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class HttpServerTest : public ServiceHttpTest {
 protected:
  // Every server of these tests takes bodies up to `max_body_bytes`.
  void StartServer(HttpServerOptions options, BatchSizeServiceOptions service_options = {},
                   size_t max_body_bytes = 64 * 1024) {
    options.max_body_bytes = max_body_bytes;
    ServiceHttpTest::StartServer(std::move(options), service_options);
  }
  void SetUp() override { StartServer(HttpServerOptions{}); }
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
  // An unknown field is ignored, not an excuse for a bad known one.
  json unknown = JobBody("job-1");
  unknown["learning_rate"] = 0.1;
  unknown["eta_knob"] = 2;
  HttpReply reply = Register(unknown);
  EXPECT_EQ(reply.status, 422);
  EXPECT_THAT(reply.raw, HasSubstr("eta_knob"));
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
  // A trial reported again (ranks > 0 in the original's distributed flow)
  // gets the original server's answer; nothing is counted twice.
  HttpReply repeated = Report("j-1", 128, 1, 99.0, 9999.0, 0.1, 3);
  EXPECT_EQ(repeated.body, json({{"stop_train", true},
                                 {"converged", true},
                                 {"message", "Result for this trial(1) is already reported."}}))
      << repeated.raw;
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
  // The original's words.
  EXPECT_EQ(last.body["message"], "Train failed to converge within max_epoch(3)") << last.raw;
  ASSERT_EQ(Next("j-1").status, 200);
  HttpReply reached = Report("j-1", 64, 2, 1, 1, 0.1, 1);
  if (reached.status == 422) {  // The walk went elsewhere; find the batch size.
    HttpReply trials = Do("GET", "/trials?job_id=j-1");
    int64_t size = trials.body["trials"][1]["batch_size"];
    reached = Report("j-1", size, 2, 1, 1, 0.1, 1);
  }
  EXPECT_EQ(reached.body["converged"], true) << reached.raw;
  EXPECT_EQ(reached.body["message"], "Train succeeded") << reached.raw;
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
  // The original's words, then the bound it was held to and why.
  EXPECT_EQ(stopped.body["message"],
            "Batch Size(" + std::to_string(size) +
                ") exceeded the cost upper bound: current cost(600.0) > bound(400.0) "
                "(beta_knob(2.0), min_cost(200.0), zeus policy)")
      << stopped.raw;
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
  // An unknown field is ignored (issue 24), a bad known one still refused.
  report["energy"] = "lots";
  report["extra"] = true;
  HttpReply extra = Do("POST", "/report", report.dump());
  EXPECT_EQ(extra.status, 422);
  EXPECT_THAT(extra.raw, HasSubstr("energy"));
  report["energy"] = 1.0;
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
  // A report after the end: already reported, as the original answers.
  HttpReply late = Report("j-1", 128, 1, 1, 1, 0.9, 1);
  EXPECT_EQ(late.body["stop_train"], true);
  EXPECT_EQ(late.body["converged"], false);
  EXPECT_EQ(late.body["message"], "Result for this trial(1) is already reported.");
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
  HttpClientFields auth{{"Authorization", "Bearer s3cret"}};
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

// Issue 24: the original server's request models ignore fields they do not
// know, and its clients and tests send some (`seed` at registration,
// `max_power` in a report). Its bodies, field for field, with those extras.
TEST_P(HttpServerTest, OriginalWireShapesWithUnknownFieldsAreAcceptedAndIgnored) {
  // JobSpecFromClient as the original client posts it: every JobParams field
  // (window_size 0: no window), the GPU config, and an extra `seed`.
  json registration{{"job_id", nullptr},
                    {"job_id_prefix", "orig"},
                    {"batch_sizes", {16, 32, 64}},
                    {"default_batch_size", 32},
                    {"eta_knob", 0.5},
                    {"beta_knob", 2.0},
                    {"target_metric", 0.9},
                    {"higher_is_better_metric", true},
                    {"max_epochs", 5},
                    {"num_pruning_rounds", 2},
                    {"window_size", 0},
                    {"mab_prior_mean", 0.0},
                    {"mab_prior_precision", 0.0},
                    {"mab_num_explorations", 2},
                    {"mab_seed", 123},
                    {"max_power", 300.0},
                    {"number_of_gpus", 1},
                    {"gpu_model", "A100"},
                    {"seed", 7},
                    {"nested_extra", {{"a", {1, 2}}}}};
  HttpReply created = Register(registration);
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string job_id = created.body["job_id"];
  EXPECT_EQ(job_id.rfind("orig-", 0), 0u) << job_id;
  EXPECT_EQ(created.body["window_size"], 0);
  EXPECT_EQ(created.body["mab_seed"], 123);
  EXPECT_FALSE(created.body.contains("seed")) << created.raw;  // Ignored, not stored.
  EXPECT_FALSE(created.body.contains("nested_extra")) << created.raw;

  HttpReply next = Next(job_id);
  ASSERT_EQ(next.status, 200) << next.raw;
  EXPECT_EQ(next.body["batch_size"], 32);
  // TrainingResult with an extra `max_power`, as the original's clients send.
  json report{{"job_id", job_id}, {"batch_size", 32}, {"trial_number", 1}, {"time", 10.0},
              {"energy", 2000.0}, {"max_power", 300}, {"metric", 0.95},    {"current_epoch", 1}};
  HttpReply reported = Do("POST", "/report", report.dump());
  ASSERT_EQ(reported.status, 200) << reported.raw;
  EXPECT_EQ(reported.body["stop_train"], true) << reported.raw;
  EXPECT_EQ(reported.body["converged"], true) << reported.raw;

  // Known fields keep their checks next to unknown ones.
  HttpReply next2 = Next(job_id);
  ASSERT_EQ(next2.status, 200) << next2.raw;
  json bad_report{{"job_id", job_id},
                  {"batch_size", next2.body["batch_size"]},
                  {"trial_number", next2.body["trial_number"]},
                  {"time", "ten"},
                  {"energy", 1.0},
                  {"metric", 0.1},
                  {"current_epoch", 1},
                  {"max_power", 300}};
  HttpReply refused = Do("POST", "/report", bad_report.dump());
  EXPECT_EQ(refused.status, 422) << refused.raw;
  EXPECT_THAT(refused.raw, HasSubstr("'time'"));
  bad_report["time"] = 1.0;
  bad_report["energy"] = -5.0;
  EXPECT_EQ(Do("POST", "/report", bad_report.dump()).status, 422);
  json bad_registration = registration;
  bad_registration["job_id"] = "orig-2";
  bad_registration["max_epochs"] = 0;
  HttpReply bad_reg = Register(bad_registration);
  EXPECT_EQ(bad_reg.status, 422) << bad_reg.raw;
  EXPECT_THAT(bad_reg.raw, HasSubstr("max_epochs"));

  // PATCH /trials (TrialId) with an extra field ends the trial.
  json end{{"job_id", job_id},
           {"batch_size", next2.body["batch_size"]},
           {"trial_number", next2.body["trial_number"]},
           {"reason", "user"}};
  HttpReply ended = Do("PATCH", "/trials", end.dump());
  EXPECT_EQ(ended.status, 200) << ended.raw;
  EXPECT_EQ(ended.body["status"], "failed") << ended.raw;
}

// The original's defaults for every optional field a registration omits.
TEST_P(HttpServerTest, OmittedFieldsTakeTheOriginalsDefaults) {
  json minimal{{"job_id_prefix", "min"},
               {"batch_sizes", {8, 16}},
               {"default_batch_size", 16},
               {"max_power", 250.5},
               {"number_of_gpus", 4},
               {"gpu_model", "H100"},
               {"seed", 3}};
  HttpReply created = Register(minimal);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body["eta_knob"], 0.5);
  EXPECT_EQ(created.body["beta_knob"], 2.0);
  EXPECT_EQ(created.body["target_metric"], 0.5);
  EXPECT_EQ(created.body["higher_is_better_metric"], true);
  EXPECT_EQ(created.body["max_epochs"], 100);
  EXPECT_EQ(created.body["num_pruning_rounds"], 2);
  EXPECT_EQ(created.body["window_size"], 0);
  EXPECT_EQ(created.body["mab_prior_mean"], 0.0);
  EXPECT_EQ(created.body["mab_prior_precision"], 0.0);
  EXPECT_EQ(created.body["mab_num_explorations"], 2);
  EXPECT_TRUE(created.body["mab_seed"].is_null());
  EXPECT_EQ(Next(created.body["job_id"].get<std::string>()).status, 200);
}

// Issue 23 item 3: one registration once carried 100,000 batch sizes, and
// every answer about that job grew with them.
TEST_P(HttpServerTest, BatchSizesPerJobAreBoundedAt1024) {
  json body = JobBody("wide-1");
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= 1025; ++b) sizes.push_back(b);
  body["batch_sizes"] = sizes;
  body["default_batch_size"] = 1;
  HttpReply refused = Register(body);
  EXPECT_EQ(refused.status, 422) << refused.raw.substr(0, 300);
  EXPECT_THAT(refused.raw, HasSubstr("batch_sizes"));
  EXPECT_THAT(refused.raw, HasSubstr("1025 batch sizes, more than the limit of 1024"));
  EXPECT_EQ(Next("wide-1").status, 404);
  sizes.pop_back();
  body["batch_sizes"] = sizes;
  HttpReply created = Register(body);
  ASSERT_EQ(created.status, 201) << created.raw.substr(0, 300);
  HttpReply arms = Do("GET", "/jobs/arms?job_id=wide-1");
  ASSERT_EQ(arms.status, 200);
  EXPECT_EQ(arms.body["arms"].size(), 1024u);
}

// Issue 23 item 3: trials in flight per job are bounded (they are listed in
// the job's state and in /jobs/arms).
TEST_P(HttpServerTest, TrialsInFlightPerJobAreBounded) {
  server_.reset();
  BatchSizeServiceOptions service_options;
  service_options.max_trials_in_flight = 3;
  StartServer(HttpServerOptions{}, service_options);
  if (IsSkipped()) return;
  ASSERT_EQ(Register(JobBody("fly-1")).status, 201);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Next("fly-1").status, 200) << i;
  HttpReply full = Next("fly-1");
  EXPECT_EQ(full.status, 409) << full.raw;
  EXPECT_THAT(full.raw, HasSubstr("3 trials are in flight"));
  EXPECT_EQ(Do("GET", "/jobs/arms?job_id=fly-1").body["in_flight"].size(), 3u);
  json end{{"job_id", "fly-1"}, {"batch_size", 128}, {"trial_number", 1}};
  ASSERT_EQ(Do("PATCH", "/trials", end.dump()).status, 200);
  EXPECT_EQ(Next("fly-1").status, 200);  // Room again.
}

// Issue 23 item 3: a job's trials come in pages of at most 1000.
TEST_P(HttpServerTest, TrialListsArePaged) {
  ASSERT_EQ(Register(JobBody("tp-1")).status, 201);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Next("tp-1").status, 200);
  std::vector<int64_t> seen;
  std::string path = "/trials?job_id=tp-1&limit=2";
  for (int page = 0; page < 5; ++page) {
    HttpReply reply = Do("GET", path);
    ASSERT_EQ(reply.status, 200) << reply.raw;
    ASSERT_LE(reply.body["trials"].size(), 2u);
    for (const json& t : reply.body["trials"]) seen.push_back(t["trial_number"]);
    if (reply.body["next_after"].is_null()) break;
    path = "/trials?job_id=tp-1&limit=2&after=" + reply.body["next_after"].dump();
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  HttpReply all = Do("GET", "/trials?job_id=tp-1");
  EXPECT_EQ(all.body["trials"].size(), 5u);
  EXPECT_TRUE(all.body["next_after"].is_null());
  for (const char* bad : {"limit=0", "limit=1001", "limit=x", "after=-1", "after=two"}) {
    HttpReply refused = Do("GET", std::string("/trials?job_id=tp-1&") + bad);
    EXPECT_EQ(refused.status, 422) << bad << ": " << refused.raw;
    EXPECT_THAT(refused.raw, HasSubstr(std::string("'") + std::string(bad).substr(0, 5)));
  }
}

// Issue 23 item 3: job listings come in pages of at most 1000 jobs.
TEST_P(HttpServerTest, JobListsArePagedOnTheApiAndTheDashboard) {
  for (const char* id : {"p-5", "p-1", "p-3", "p-2", "p-4"}) {
    ASSERT_EQ(Register(JobBody(id)).status, 201) << id;
  }
  for (const std::string list : {"/jobs", "/dashboard/api/jobs"}) {
    std::vector<std::string> seen;
    std::string path = list + "?limit=2";
    for (int page = 0; page < 5; ++page) {
      HttpReply reply = Do("GET", path);
      ASSERT_EQ(reply.status, 200) << list << ": " << reply.raw;
      ASSERT_LE(reply.body["jobs"].size(), 2u) << reply.raw;
      for (const json& job : reply.body["jobs"]) seen.push_back(job["job_id"]);
      if (reply.body["next_after"].is_null()) break;
      path = list + "?limit=2&after=" + reply.body["next_after"].get<std::string>();
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"p-1", "p-2", "p-3", "p-4", "p-5"})) << list;
    HttpReply all = Do("GET", list);
    ASSERT_EQ(all.status, 200);
    EXPECT_EQ(all.body["jobs"].size(), 5u);  // Default page: 100.
    EXPECT_TRUE(all.body["next_after"].is_null());
    for (const char* bad : {"0", "1001", "ten", "-1", "99999999999999999999"}) {
      HttpReply refused = Do("GET", list + "?limit=" + bad);
      EXPECT_EQ(refused.status, 422) << list << " limit=" << bad << ": " << refused.raw;
      EXPECT_THAT(refused.raw, HasSubstr("'limit'"));
      EXPECT_THAT(refused.raw, HasSubstr("1000"));
    }
  }
}

// Issue 23 item 9: a repeated query parameter is refused with its name, as
// the daemon refuses it (one rule: no first or last value silently wins).
TEST_P(HttpServerTest, RepeatedQueryParameterIsRefusedWithItsName) {
  ASSERT_EQ(Register(JobBody("rep-1")).status, 201);
  for (const char* query : {"nope-1&job_id=rep-1", "rep-1&job_id=nope-1", "rep-1&job_id=rep-1"}) {
    HttpReply refused = Next(query);
    EXPECT_EQ(refused.status, 400) << refused.raw;
    EXPECT_THAT(refused.raw, HasSubstr("'job_id' given twice"));
  }
  EXPECT_EQ(Next("rep-1").status, 200);
}

// Issue 23 item 9: reports that cannot be true are refused, and nothing is
// recorded.
TEST_P(HttpServerTest, ImpossibleReportsAndControlCharactersAreRefused) {
  ASSERT_EQ(Register(JobBody("imp-1")).status, 201);  // max_epochs 10.
  ASSERT_EQ(Next("imp-1").status, 200);
  HttpReply late = Report("imp-1", 128, 1, 1, 5.0, 0.1, 9999);
  EXPECT_EQ(late.status, 422) << late.raw;
  EXPECT_THAT(late.raw, HasSubstr("current_epoch"));
  EXPECT_THAT(late.raw, HasSubstr("max_epochs 10"));
  // Converged with neither time nor energy: the batch size would look free.
  HttpReply free_run = Report("imp-1", 128, 1, 0, 0, 0.9, 1);
  EXPECT_EQ(free_run.status, 422) << free_run.raw;
  EXPECT_THAT(free_run.raw, HasSubstr("time and energy"));
  HttpReply trials = Do("GET", "/trials?job_id=imp-1");
  ASSERT_EQ(trials.status, 200);
  EXPECT_EQ(trials.body["trials"][0]["status"], "dispatched") << trials.raw;
  EXPECT_TRUE(trials.body["trials"][0]["current_epoch"].is_null()) << trials.raw;
  // A run that keeps training may report zeros; the last epoch may end it.
  EXPECT_EQ(Report("imp-1", 128, 1, 0, 0, 0.1, 1).status, 200);
  HttpReply done = Report("imp-1", 128, 1, 20, 3000, 0.1, 10);
  EXPECT_EQ(done.status, 200) << done.raw;
  EXPECT_EQ(done.body["stop_train"], true);

  for (const char* model : {"A100\n",
                            "\x01"
                            "A100",
                            "H100\x7f"}) {
    json body = JobBody("ctl-1");
    body["gpu_model"] = model;
    HttpReply reply = Register(body);
    EXPECT_EQ(reply.status, 422) << reply.raw;
    EXPECT_THAT(reply.raw, HasSubstr("gpu_model"));
    EXPECT_THAT(reply.raw, HasSubstr("control character"));
  }
  json bad_id = JobBody("ctl-1");
  bad_id["job_id"] = "ctl-1\r\nX-Injected: 1";
  EXPECT_EQ(Register(bad_id).status, 422);
  EXPECT_EQ(Next("ctl-1%0a").status, 422);
  EXPECT_EQ(Next("ctl-1").status, 404);  // Nothing was created.
}

// Issue 23 item 5: deleting or replacing the SQLite file under a running
// server once went unnoticed (800 more requests "succeeded" into a deleted
// file). Now /health is 503 and writes are refused, naming the file.
TEST_P(HttpServerTest, DeletedOrReplacedDatabaseFileStopsWritesAndHealth) {
  if (GetParam() != Backend::kSqlite) GTEST_SKIP() << "a SQLite file only";
  for (const bool replace : {false, true}) {
    server_.reset();
    StartServer(HttpServerOptions{});
    ASSERT_EQ(Register(JobBody("del-1")).status, 201);
    ExpectHealthy();
    ASSERT_EQ(url_.rfind("sqlite:", 0), 0u) << url_;
    const std::string db = url_.substr(7);
    if (replace) {
      const std::string other = db + ".other";
      FILE* f = fopen(other.c_str(), "w");
      ASSERT_NE(f, nullptr);
      fclose(f);
      ASSERT_EQ(rename(other.c_str(), db.c_str()), 0);
    } else {
      ASSERT_EQ(unlink(db.c_str()), 0);
    }
    HttpReply health = Do("GET", "/health");
    EXPECT_EQ(health.status, 503) << health.raw;
    EXPECT_THAT(health.raw, HasSubstr(replace ? "was replaced" : "was deleted"));
    EXPECT_THAT(health.raw, HasSubstr(db));
    HttpReply write = Register(JobBody("del-2"));
    EXPECT_EQ(write.status, 503) << write.raw;
    EXPECT_THAT(write.raw, HasSubstr("refusing writes"));
    EXPECT_EQ(Next("del-1").status, 503);
    EXPECT_EQ(Do("GET", "/health").status, 503);  // Latched.
  }
}

// Issue 24: ignored request fields are logged at debug level, by name.
TEST(HttpServerLogTest, IgnoredRequestFieldsAreLoggedAtDebugLevel) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto previous = spdlog::default_logger();
  const spdlog::level::level_enum previous_level = spdlog::get_level();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  spdlog::set_level(spdlog::level::debug);
  {
    TempDir dir;
    std::string skip;
    TestServer server(NewDatabaseUrl(Backend::kSqlite, dir, &skip));
    ASSERT_TRUE(server.ok()) << server.error();
    TestClient client(server.port());
    json body = JobBody("log-1");
    body["seed"] = 7;
    body["learning_rate"] = 0.1;
    EXPECT_EQ(Send(client, "POST", "/jobs", body.dump()).status, 201);
  }
  spdlog::set_default_logger(previous);
  spdlog::set_level(previous_level);
  EXPECT_THAT(log.str(), HasSubstr("/jobs: ignoring unknown request field(s) 'learning_rate', "
                                   "'seed'"));
}

// Issue 23 item 3: /health took 2.4 s while clients flooded the server:
// probes queued behind every other request. They now have a worker of their
// own: with the only API worker stuck, /health still answers at once.
TEST(HttpServerHealthTest, HealthAnswersWhileEveryApiWorkerIsBusy) {
  TempDir dir;
  std::string skip;
  StatusOr<std::unique_ptr<Store>> store = OpenStore(NewDatabaseUrl(Backend::kSqlite, dir, &skip));
  ZEUS_ASSERT_OK(store.status());
  FakeClock clock;
  BatchSizeService service(store->get(), &clock);
  HttpServerOptions options;
  options.threads = 1;
  HttpServer server(&service, options);
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  ZEUS_ASSERT_OK(server.AddRoutes({HttpRoute{"GET", "/stuck", [&](const HttpRequest&) {
                                               std::unique_lock<std::mutex> lock(mutex);
                                               released_cv.wait(lock, [&] { return released; });
                                               return JsonResponse(200, "{}");
                                             }}}));
  ZEUS_ASSERT_OK(server.Start());
  std::thread stuck([&] {
    HttpClientOptions slow = TestClientOptions();
    slow.timeout_s = 30;
    TestClient client(server.port(), slow);
    Send(client, "GET", "/stuck");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // /stuck holds the worker.
  HttpClientOptions quick = TestClientOptions();
  quick.timeout_s = 5;
  TestClient probe(server.port(), quick);
  const auto begin = std::chrono::steady_clock::now();
  StatusOr<HttpClientResponse> health = probe.http().Get(probe.base_url() + "/health");
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
  }
  released_cv.notify_all();
  stuck.join();
  ASSERT_TRUE(health.ok()) << "no answer to /health within 5 s while the API worker was busy";
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(waited_s, 2.0);
  server.Stop();
}

INSTANTIATE_TEST_SUITE_P(Stores, HttpServerTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

}  // namespace
}  // namespace zeus::testing
