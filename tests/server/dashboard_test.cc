// The dashboard's handlers (src/server/dashboard.h) with seeded jobs on
// SQLite: the JSON endpoints against the store's own records, the token
// rule, unknown jobs, HTML escaping, Chart.js present and missing; and the
// wiring into the HTTP server on 127.0.0.1.

#include "src/server/dashboard.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

#include "src/server/dashboard_assets.h"
#include "src/server/dashboard_views.h"
#include "tests/server/dashboard_test_util.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using server_internal::ArmBeliefToJson;
using server_internal::CostAgainstDefault;
using server_internal::TrialOutcome;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "s3cret token;=%";
// A job id that is markup, with both quote kinds: it must never reach a page
// as markup.
constexpr char kEvilJobId[] = "evil-<img src=x onerror=\"alert('x')\">&";

std::optional<std::string> Header(const DashboardResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip_reason;
    server_ = std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason));
    ASSERT_TRUE(server_->ok()) << server_->error();
  }

  BatchSizeService& service() { return server_->service(); }

  DashboardResponse Get(const std::string& path, std::map<std::string, std::string> query = {},
                        const std::string& authorization = "", const std::string& cookie = "") {
    DashboardRequest request{"GET", path, std::move(query), authorization, cookie};
    return HandleDashboardRequest(request, &service(), options_);
  }

  // The body of a 200 JSON answer.
  json GetJson(const std::string& path, const std::string& authorization = "") {
    DashboardResponse response = Get(path, {}, authorization);
    EXPECT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(response.content_type, "application/json");
    return json::parse(response.body);
  }

  // The store's view of the job's trials (through the API's service).
  json StoredTrials(const std::string& job_id) {
    StatusOr<json> trials = service().ListTrials(job_id);
    EXPECT_TRUE(trials.ok()) << trials.status().ToString();
    return trials.ok() ? (*trials)["trials"] : json::array();
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  DashboardOptions options_;
};

TEST_F(DashboardTest, ClaimsTheRootAndEverythingUnderDashboardOnly) {
  EXPECT_TRUE(IsDashboardPath("/"));
  EXPECT_TRUE(IsDashboardPath("/dashboard"));
  EXPECT_TRUE(IsDashboardPath("/dashboard/api/jobs/x"));
  EXPECT_FALSE(IsDashboardPath("/jobs"));
  EXPECT_FALSE(IsDashboardPath("/health"));
  EXPECT_FALSE(IsDashboardPath("/dashboardx"));
  EXPECT_FALSE(IsDashboardPath(""));
}

TEST_F(DashboardTest, JobListShowsEverySeededJobWithItsSpec) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 6));
  ZEUS_ASSERT_OK(SeedJob(service(), "gpt-b", 2, /*seed=*/7));
  json list = GetJson("/dashboard/api/jobs");
  ASSERT_EQ(list["jobs"].size(), 2u);
  std::map<std::string, json> by_id;
  for (const json& job : list["jobs"]) by_id[job["job_id"]] = job;
  ASSERT_EQ(by_id.count("bert-a"), 1u);
  ASSERT_EQ(by_id.count("gpt-b"), 1u);
  const json& bert = by_id["bert-a"];
  EXPECT_EQ(bert["default_batch_size"], 128);
  EXPECT_EQ(bert["batch_sizes"], json({32, 64, 128, 256}));
  EXPECT_EQ(bert["gpu_model"], "A40");
  EXPECT_EQ(bert["number_of_gpus"], 1);
  StatusOr<json> arms = service().ArmStates("bert-a");
  ZEUS_ASSERT_OK(arms.status());
  EXPECT_EQ(bert["min_cost"], (*arms)["min_cost"]);
  EXPECT_EQ(bert["best_batch_size"], (*arms)["best_batch_size"]);
  EXPECT_EQ(bert["exploring"], (*arms)["exploring"]);
  // The saving against the default is the job view's.
  for (const std::string id : {"bert-a", "gpt-b"}) {
    EXPECT_EQ(by_id[id]["saved_vs_default"],
              GetJson("/dashboard/api/jobs/" + id)["cost_vs_default"]["saved_fraction"])
        << id;
  }
}

TEST_F(DashboardTest, JobListHasASavingOnceADefaultRunConverged) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 10));  // Has converged default runs.
  ZEUS_ASSERT_OK(SeedJob(service(), "fresh", 0));
  json list = GetJson("/dashboard/api/jobs");
  ASSERT_EQ(list["jobs"].size(), 2u);
  EXPECT_EQ(list["jobs"][0]["job_id"], "bert-a");
  EXPECT_TRUE(list["jobs"][0]["saved_vs_default"].is_number()) << list;
  EXPECT_TRUE(list["jobs"][1]["saved_vs_default"].is_null()) << list;
}

TEST_F(DashboardTest, JobListIsEmptyWithoutJobs) {
  EXPECT_EQ(GetJson("/dashboard/api/jobs"),
            json({{"jobs", json::array()}, {"next_after", nullptr}}));
}

TEST_F(DashboardTest, JobDetailTrialsMatchTheStoredTrials) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 8));
  // One trial still running and one whose client went away.
  ZEUS_ASSERT_OK_AND_ASSIGN(TrialId failed, service().NextBatchSize("bert-a"));
  ZEUS_ASSERT_OK(service().EndTrial(failed).status());
  ZEUS_ASSERT_OK(service().NextBatchSize("bert-a").status());

  json detail = GetJson("/dashboard/api/jobs/bert-a");
  EXPECT_EQ(detail["job_id"], "bert-a");
  EXPECT_EQ(detail["job"]["default_batch_size"], 128);
  json stored = StoredTrials("bert-a");
  ASSERT_EQ(detail["trials"].size(), stored.size());
  ASSERT_EQ(stored.size(), 10u);
  std::map<std::string, int> outcomes;
  for (size_t i = 0; i < stored.size(); ++i) {
    const json& row = detail["trials"][i];
    const json& want = stored[i];
    SCOPED_TRACE("trial " + want["trial_number"].dump());
    EXPECT_EQ(row["trial_number"], want["trial_number"]);
    EXPECT_EQ(row["batch_size"], want["batch_size"]);
    EXPECT_EQ(row["energy_j"], want["energy"]);
    EXPECT_EQ(row["time_s"], want["time"]);
    EXPECT_EQ(row["cost"], want["cost"]);
    EXPECT_EQ(row["converged"], want["converged"]);
    EXPECT_EQ(row["message"], want["message"]);
    ++outcomes[row["outcome"].get<std::string>()];
    if (want["status"] == "dispatched") {
      EXPECT_EQ(row["outcome"], "running");
    }
    if (want["status"] == "failed") {
      EXPECT_EQ(row["outcome"], "failed");
    }
    if (want["converged"] == true) {
      EXPECT_EQ(row["outcome"], "converged");
    }
  }
  EXPECT_EQ(outcomes["running"], 1);
  EXPECT_EQ(outcomes["failed"], 1);
  EXPECT_GT(outcomes["converged"], 0);
  // Batch size 256 never reaches the target and is stopped by the cost bound.
  EXPECT_GT(outcomes["stopped_early"], 0);
  EXPECT_EQ(outcomes["not_converged"], 0);
}

// Issue 23 item 3: the job view lists (and charts) the latest 1000 trials;
// the cost totals still count every trial.
TEST_F(DashboardTest, JobDetailListsAtMostTheLatest1000Trials) {
  ZEUS_ASSERT_OK(SeedJob(service(), "long-a", 1));
  ZEUS_ASSERT_OK(
      server_->store().RunTransaction(TransactionMode::kWrite, [](StoreTransaction& txn) -> Status {
        for (int64_t n = 2; n <= 1005; ++n) {
          TrialRecord t;
          t.job_id = "long-a";
          t.trial_number = n;
          t.batch_size = 128;
          t.kind = "thompson";
          t.status = TrialStatus::kSucceeded;
          t.time_s = 10.0;
          t.energy_j = 1000.0;
          t.metric = 0.9;
          t.current_epoch = 1;
          t.cost = 1.0;
          t.converged = true;
          ZEUS_RETURN_IF_ERROR(txn.InsertTrial(t));
        }
        return Status::Ok();
      }));
  json detail = GetJson("/dashboard/api/jobs/long-a");
  EXPECT_EQ(detail["trials_total"], 1005);
  ASSERT_EQ(detail["trials"].size(), 1000u);
  EXPECT_EQ(detail["trials"][0]["trial_number"], 6);
  EXPECT_EQ(detail["trials"][999]["trial_number"], 1005);
  EXPECT_EQ(detail["cost_vs_default"]["points"].size(), 1000u);
  EXPECT_GE(detail["cost_vs_default"]["ended_trials"], 1004);  // Totals count them all.
}

TEST_F(DashboardTest, JobDetailBeliefIsTheBanditsArmsInCostTerms) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 10));
  json belief = GetJson("/dashboard/api/jobs/bert-a")["belief"];
  ZEUS_ASSERT_OK_AND_ASSIGN(json arms, service().ArmStates("bert-a"));
  EXPECT_EQ(belief["exploring"], arms["exploring"]);
  EXPECT_EQ(belief["best_batch_size"], arms["best_batch_size"]);
  EXPECT_EQ(belief["min_cost"], arms["min_cost"]);
  ASSERT_EQ(belief["arms"].size(), arms["arms"].size());
  std::vector<int64_t> arm_sizes;
  for (size_t i = 0; i < arms["arms"].size(); ++i) {
    const json& want = arms["arms"][i];
    const json& got = belief["arms"][i];
    arm_sizes.push_back(want["batch_size"]);
    EXPECT_EQ(got["batch_size"], want["batch_size"]);
    EXPECT_EQ(got["num_observations"], want["num_observations"]);
    if (want["num_observations"].get<int>() > 0) {
      EXPECT_DOUBLE_EQ(got["mean_cost"].get<double>(), -want["mean"].get<double>());
    }
  }
  // Every batch size is an arm or pruned, never both.
  json pruned = belief["pruned_batch_sizes"];
  for (int64_t size : {32, 64, 128, 256}) {
    const bool is_arm = std::count(arm_sizes.begin(), arm_sizes.end(), size) == 1;
    const bool is_pruned = std::count(pruned.begin(), pruned.end(), json(size)) == 1;
    EXPECT_NE(is_arm, is_pruned) << "batch size " << size;
  }
  if (belief["exploring"] == false) {
    // 256 never converged: pruned.
    EXPECT_EQ(std::count(pruned.begin(), pruned.end(), json(256)), 1);
  }
}

TEST_F(DashboardTest, JobDetailCostAgainstDefaultUsesConvergedDefaultRuns) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 10));
  json c = GetJson("/dashboard/api/jobs/bert-a")["cost_vs_default"];
  // Recomputed here from the stored trials.
  double default_sum = 0.0, total = 0.0;
  int default_runs = 0, converged = 0, ended = 0;
  for (const json& t : StoredTrials("bert-a")) {
    if (t["status"] != "succeeded") continue;
    ++ended;
    total += t["cost"].get<double>();
    if (t["converged"] != true) continue;
    ++converged;
    if (t["batch_size"] == 128) {
      ++default_runs;
      default_sum += t["cost"].get<double>();
    }
  }
  ASSERT_GT(default_runs, 0);
  EXPECT_EQ(c["default_batch_size"], 128);
  EXPECT_EQ(c["default_runs"], default_runs);
  EXPECT_EQ(c["ended_trials"], ended);
  EXPECT_EQ(c["converged_trials"], converged);
  EXPECT_DOUBLE_EQ(c["default_cost_estimate"].get<double>(), default_sum / default_runs);
  EXPECT_DOUBLE_EQ(c["total_cost"].get<double>(), total);
  EXPECT_DOUBLE_EQ(c["total_default_cost"].get<double>(), converged * default_sum / default_runs);
  EXPECT_DOUBLE_EQ(c["saved_fraction"].get<double>(),
                   1.0 - total / (converged * default_sum / default_runs));
  ASSERT_EQ(c["points"].size(), static_cast<size_t>(ended));
  EXPECT_DOUBLE_EQ(c["points"].back()["cumulative_cost"].get<double>(), total);
  EXPECT_THAT(c["method"].get<std::string>(), HasSubstr("mean cost"));
}

TEST(DashboardCostAgainstDefaultTest, ChargesTheMeanConvergedDefaultCostPerConvergedTrial) {
  auto trial = [](int64_t number, int64_t batch_size, TrialStatus status,
                  std::optional<double> cost, bool converged, int64_t epoch) {
    TrialRecord t;
    t.job_id = "j";
    t.trial_number = number;
    t.batch_size = batch_size;
    t.status = status;
    t.cost = cost;
    t.converged = converged;
    t.current_epoch = epoch;
    return t;
  };
  const auto kOk = TrialStatus::kSucceeded;
  // Out of order on purpose: the points follow trial numbers.
  std::vector<TrialRecord> trials = {
      trial(4, 128, kOk, 14.0, true, 5),
      trial(1, 128, kOk, 10.0, true, 5),
      trial(2, 64, kOk, 6.0, true, 4),
      trial(3, 256, kOk, 4.0, false, 3),
      trial(5, 64, TrialStatus::kFailed, std::nullopt, false, 2),
      trial(6, 32, TrialStatus::kDispatched, std::nullopt, false, 1),
      // Out of epochs at the default: not part of the default's mean.
      trial(7, 128, kOk, 20.0, false, 10),
  };
  json c = CostAgainstDefault(trials, 128, /*max_epochs=*/10);
  EXPECT_EQ(c["default_runs"], 2);
  EXPECT_DOUBLE_EQ(c["default_cost_estimate"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(c["default_cost_min"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(c["default_cost_max"].get<double>(), 14.0);
  EXPECT_EQ(c["ended_trials"], 5);
  EXPECT_EQ(c["converged_trials"], 3);
  EXPECT_EQ(c["failed_trials"], 1);
  EXPECT_EQ(c["running_trials"], 1);
  const std::vector<int64_t> numbers = {1, 2, 3, 4, 7};
  const std::vector<double> cumulative = {10, 16, 20, 34, 54};
  const std::vector<double> cumulative_default = {12, 24, 24, 36, 36};
  const std::vector<std::string> outcomes = {"converged", "converged", "stopped_early", "converged",
                                             "not_converged"};
  ASSERT_EQ(c["points"].size(), numbers.size());
  for (size_t i = 0; i < numbers.size(); ++i) {
    const json& p = c["points"][i];
    EXPECT_EQ(p["trial_number"], numbers[i]);
    EXPECT_DOUBLE_EQ(p["cumulative_cost"].get<double>(), cumulative[i]);
    EXPECT_DOUBLE_EQ(p["cumulative_default_cost"].get<double>(), cumulative_default[i]);
    EXPECT_EQ(p["outcome"], outcomes[i]);
  }
  EXPECT_DOUBLE_EQ(c["total_cost"].get<double>(), 54.0);
  EXPECT_DOUBLE_EQ(c["total_default_cost"].get<double>(), 36.0);
  EXPECT_DOUBLE_EQ(c["saved_fraction"].get<double>(), 1.0 - 54.0 / 36.0);
}

TEST(DashboardCostAgainstDefaultTest, NoEstimateWithoutAConvergedDefaultRun) {
  TrialRecord stopped;
  stopped.trial_number = 1;
  stopped.batch_size = 128;
  stopped.status = TrialStatus::kSucceeded;
  stopped.cost = 9.0;
  stopped.current_epoch = 2;
  TrialRecord other = stopped;
  other.trial_number = 2;
  other.batch_size = 64;
  other.converged = true;
  json c = CostAgainstDefault({stopped, other}, 128, 10);
  EXPECT_EQ(c["default_runs"], 0);
  EXPECT_TRUE(c["default_cost_estimate"].is_null());
  EXPECT_TRUE(c["total_default_cost"].is_null());
  EXPECT_TRUE(c["saved_fraction"].is_null());
  ASSERT_EQ(c["points"].size(), 2u);
  EXPECT_TRUE(c["points"][1]["cumulative_default_cost"].is_null());
  EXPECT_DOUBLE_EQ(c["total_cost"].get<double>(), 18.0);
}

TEST(DashboardArmBeliefTest, SpreadIsOneOverRootPrecisionInCostTerms) {
  ArmState arm;
  arm.batch_size = 64;
  arm.num_observations = 3;
  arm.mean = -200.0;
  arm.precision = 4.0;
  json belief = ArmBeliefToJson(arm);
  EXPECT_EQ(belief["batch_size"], 64);
  EXPECT_EQ(belief["num_observations"], 3);
  EXPECT_DOUBLE_EQ(belief["mean_cost"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(belief["cost_spread"].get<double>(), 0.5);

  arm.precision = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(ArmBeliefToJson(arm)["cost_spread"].get<double>(), 0.0);

  // No observations and a flat prior: nothing is known.
  ArmState unknown;
  unknown.batch_size = 32;
  EXPECT_TRUE(ArmBeliefToJson(unknown)["mean_cost"].is_null());
  EXPECT_TRUE(ArmBeliefToJson(unknown)["cost_spread"].is_null());
}

TEST(DashboardTrialOutcomeTest, NamesHowEachTrialEnded) {
  TrialRecord t;
  t.status = TrialStatus::kDispatched;
  EXPECT_EQ(TrialOutcome(t, 10), "running");
  t.status = TrialStatus::kFailed;
  EXPECT_EQ(TrialOutcome(t, 10), "failed");
  t.status = TrialStatus::kSucceeded;
  t.converged = true;
  t.current_epoch = 4;
  EXPECT_EQ(TrialOutcome(t, 10), "converged");
  t.converged = false;
  EXPECT_EQ(TrialOutcome(t, 10), "stopped_early");
  t.current_epoch = 10;
  EXPECT_EQ(TrialOutcome(t, 10), "not_converged");
}

TEST_F(DashboardTest, UnknownJobIs404OnTheApiAndThePage) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 1));
  DashboardResponse api = Get("/dashboard/api/jobs/no-such-job");
  EXPECT_EQ(api.status, 404);
  EXPECT_EQ(json::parse(api.body)["message"], "job \"no-such-job\": not found");

  DashboardResponse page = Get("/", {{"job", "no-such-job"}});
  EXPECT_EQ(page.status, 404);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(page.body, HasSubstr("job &quot;no-such-job&quot;: not found"));

  // A known job: 200 and no notice.
  DashboardResponse known = Get("/", {{"job", "bert-a"}});
  EXPECT_EQ(known.status, 200);
  EXPECT_THAT(known.body, HasSubstr("<p id=\"notice\" class=\"notice\" role=\"alert\"></p>"));
}

TEST_F(DashboardTest, BadJobIdIs422NamingTheField) {
  DashboardResponse api = Get("/dashboard/api/jobs/" + std::string(300, 'x'));
  EXPECT_EQ(api.status, 422);
  EXPECT_THAT(json::parse(api.body)["message"].get<std::string>(), HasSubstr("'job_id'"));
}

TEST_F(DashboardTest, UnknownRouteAndWritingMethodsAreRefused) {
  DashboardResponse unknown = Get("/dashboard/api/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr("/dashboard/api/nope"));
  EXPECT_EQ(Get("/dashboard/static/index.html").status, 404);
  EXPECT_EQ(Get("/dashboard/static/../../etc/passwd").status, 404);

  DashboardRequest post{"POST", "/dashboard/api/jobs", {}, "", ""};
  DashboardResponse refused = HandleDashboardRequest(post, &service(), options_);
  EXPECT_EQ(refused.status, 405);
  EXPECT_EQ(Header(refused, "Allow"), "GET, HEAD");
}

TEST_F(DashboardTest, JobIdsAndUserStringsAreHtmlEscapedOnServerPages) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  EXPECT_EQ(HtmlEscape("plain-id_1"), "plain-id_1");

  DashboardResponse page = Get("/", {{"job", kEvilJobId}});
  EXPECT_EQ(page.status, 404);
  EXPECT_THAT(page.body, HasSubstr(HtmlEscape(kEvilJobId)));
  EXPECT_THAT(page.body, Not(HasSubstr("<img")));

  // The sign-in page carries the job id in an attribute.
  options_.token = kToken;
  DashboardResponse signin = Get("/", {{"job", kEvilJobId}});
  EXPECT_EQ(signin.status, 401);
  EXPECT_THAT(signin.body, HasSubstr("value=\"" + HtmlEscape(kEvilJobId) + "\""));
  EXPECT_THAT(signin.body, Not(HasSubstr("<img")));
  EXPECT_THAT(signin.body, Not(HasSubstr("alert('")));
}

TEST_F(DashboardTest, EvilJobIdRoundTripsAsJsonData) {
  ZEUS_ASSERT_OK(SeedJob(service(), kEvilJobId, 2));
  json list = GetJson("/dashboard/api/jobs");
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["job_id"], kEvilJobId);
  json detail = GetJson(std::string("/dashboard/api/jobs/") + kEvilJobId);
  EXPECT_EQ(detail["job_id"], kEvilJobId);
  EXPECT_EQ(detail["trials"].size(), 2u);
}

TEST_F(DashboardTest, HtmlAnswersForbidInlineScript) {
  DashboardResponse page = Get("/");
  EXPECT_EQ(page.status, 200);
  std::optional<std::string> csp = Header(page, "Content-Security-Policy");
  ASSERT_TRUE(csp.has_value());
  EXPECT_THAT(*csp, HasSubstr("script-src 'self'"));
  EXPECT_THAT(*csp, Not(HasSubstr("unsafe-inline")));
  EXPECT_EQ(Header(page, "X-Content-Type-Options"), "nosniff");
  // The page loads its code from the server, never inline.
  EXPECT_THAT(page.body, HasSubstr("<script src=\"/dashboard/static/dashboard.js\""));
  EXPECT_THAT(page.body, Not(HasSubstr("<script>")));
}

TEST_F(DashboardTest, WithATokenDataNeedsTheBearerHeaderOrTheCookie) {
  ZEUS_ASSERT_OK(SeedJob(service(), "bert-a", 1));
  options_.token = kToken;
  const std::string bearer = std::string("Bearer ") + kToken;

  DashboardResponse anonymous = Get("/dashboard/api/jobs");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(json::parse(anonymous.body)["message"].get<std::string>(), HasSubstr("token"));
  EXPECT_EQ(Get("/dashboard/api/jobs/bert-a").status, 401);
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, "Bearer wrong").status, 401);
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, bearer).status, 200);
  // The API's Bearer rule is not weakened: the token must match exactly.
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, bearer + "x").status, 401);

  // The cookie holds the token's bytes in hex (it has ' ', ';', '=', '%').
  const std::string cookie = "other=1; zeus_token=73336372657420746f6b656e3b3d25";
  EXPECT_EQ(Get("/dashboard/api/jobs/bert-a", {}, "", cookie).status, 200);
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, "", "zeus_token=s3cret").status, 401);
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, "", "zeus_token=73336372657420746f6b656e3b3d").status,
            401);
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, "", "zeus_token=s3cret token;=%").status, 401);

  // The page: a sign-in form without the token, the page with it.
  DashboardResponse signin = Get("/");
  EXPECT_EQ(signin.status, 401);
  EXPECT_THAT(signin.body, HasSubstr("name=\"token\""));
  EXPECT_THAT(signin.body, Not(HasSubstr(kToken)));
  EXPECT_EQ(Get("/", {}, "", cookie).status, 200);

  // Static files hold no data and need no token.
  EXPECT_EQ(Get("/dashboard/static/dashboard.js").status, 200);
  EXPECT_EQ(Get("/dashboard/static/dashboard.css").status, 200);
}

TEST_F(DashboardTest, SigningInSetsTheCookieAndDropsTheTokenFromTheAddress) {
  options_.token = kToken;
  DashboardResponse response = Get("/", {{"token", kToken}, {"job", "a b&c"}});
  EXPECT_EQ(response.status, 303);
  EXPECT_EQ(Header(response, "Location"), "/?job=a%20b%26c");
  std::optional<std::string> cookie = Header(response, "Set-Cookie");
  ASSERT_TRUE(cookie.has_value());
  EXPECT_EQ(*cookie,
            "zeus_token=73336372657420746f6b656e3b3d25; Path=/; HttpOnly; SameSite=Strict");
  // The cookie it sets opens the API.
  const std::string value = cookie->substr(0, cookie->find(';'));
  EXPECT_EQ(Get("/dashboard/api/jobs", {}, "", value).status, 200);

  DashboardResponse wrong = Get("/", {{"token", "guess"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(wrong.body, HasSubstr("The token is wrong."));
  EXPECT_FALSE(Header(wrong, "Set-Cookie").has_value());
}

TEST_F(DashboardTest, WithoutATokenEverythingIsOpen) {
  EXPECT_EQ(Get("/").status, 200);
  EXPECT_EQ(Get("/dashboard").status, 200);
  EXPECT_EQ(Get("/dashboard/api/jobs").status, 200);
}

TEST_F(DashboardTest, ServesChartJsFromItsPathOrSaysItIsMissing) {
  const std::string path = dir_.WriteFile("chart.min.js", "/* Chart.js stand-in */ var Chart;");
  options_.chartjs_path = path;
  DashboardResponse served = Get("/dashboard/static/chart.js");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.body, "/* Chart.js stand-in */ var Chart;");
  EXPECT_EQ(served.content_type, "text/javascript; charset=utf-8");

  options_.chartjs_path = dir_.File("absent/chart.min.js");
  DashboardResponse missing = Get("/dashboard/static/chart.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.body, HasSubstr(options_.chartjs_path));
  EXPECT_THAT(missing.body, HasSubstr("libjs-chart.js"));
}

TEST_F(DashboardTest, DefaultChartJsPathIsDebiansInBothOptions) {
  EXPECT_EQ(DashboardOptions{}.chartjs_path, kDebianChartJsPath);
  EXPECT_EQ(HttpServerOptions{}.dashboard_chartjs_path, kDebianChartJsPath);
}

TEST(DashboardAssetsTest, EmbedsThePageFilesVerbatim) {
  for (const char* name : {"index.html", "signin.html", "dashboard.js", "dashboard.css"}) {
    ZEUS_ASSERT_OK_AND_ASSIGN(
        std::string on_disk,
        ReadFileToString(std::string(ZEUS_SOURCE_DIR) + "/src/server/dashboard_assets/" + name));
    EXPECT_EQ(server_internal::DashboardAsset(name), on_disk) << name;
  }
  EXPECT_TRUE(server_internal::DashboardAsset("nope.js").empty());
}

// The transport's wiring (http_server.cc) over real HTTP.
class DashboardHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip_reason;
    HttpServerOptions options;
    options.token = kToken;
    server_ =
        std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason), options);
    ASSERT_TRUE(server_->ok()) << server_->error();
    client_ = std::make_unique<TestClient>(server_->port());
    ZEUS_ASSERT_OK(SeedJob(server_->service(), "bert-a", 3));
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<TestClient> client_;
};

TEST_F(DashboardHttpTest, CookieOpensTheDashboardButNeverTheApi) {
  const HttpClientFields cookie = {{"Cookie", "zeus_token=73336372657420746f6b656e3b3d25"}};
  HttpReply page = Send(*client_, "GET", "/?job=bert-a", "", cookie);
  EXPECT_EQ(page.status, 200) << page.raw;
  EXPECT_THAT(page.raw, HasSubstr("<canvas id=\"belief-chart\""));
  HttpReply detail = Send(*client_, "GET", "/dashboard/api/jobs/bert-a", "", cookie);
  ASSERT_EQ(detail.status, 200) << detail.raw;
  EXPECT_EQ(detail.body["trials"].size(), 3u);
  // The API's own routes still want the bearer header.
  EXPECT_EQ(Send(*client_, "GET", "/jobs", "", cookie).status, 401);
  EXPECT_EQ(Send(*client_, "DELETE", "/jobs?job_id=bert-a", "", cookie).status, 401);
  EXPECT_EQ(Send(*client_, "GET", "/dashboard/api/jobs").status, 401);
  const HttpClientFields bearer = {{"Authorization", std::string("Bearer ") + kToken}};
  EXPECT_EQ(Send(*client_, "GET", "/dashboard/api/jobs", "", bearer).status, 200);
}

TEST_F(DashboardHttpTest, PercentEncodedJobIdsReachTheHandlerDecoded) {
  ZEUS_ASSERT_OK(SeedJob(server_->service(), "odd-a b/c?d", 1));
  const HttpClientFields bearer = {{"Authorization", std::string("Bearer ") + kToken}};
  HttpReply detail = Send(*client_, "GET", "/dashboard/api/jobs/odd-a%20b%2Fc%3Fd", "", bearer);
  ASSERT_EQ(detail.status, 200) << detail.raw;
  EXPECT_EQ(detail.body["job_id"], "odd-a b/c?d");
}

TEST_F(DashboardHttpTest, SignInRedirectsWithTheCookieAndWritesAre405) {
  StatusOr<HttpClientResponse> signin =
      client_->http().Get(client_->base_url() + "/?token=s3cret%20token%3B%3D%25");
  ASSERT_TRUE(signin.ok()) << signin.status();
  EXPECT_EQ(signin->status, 303);
  EXPECT_EQ(signin->Header("Location"), "/");
  EXPECT_THAT(signin->Header("Set-Cookie"), HasSubstr("HttpOnly"));
  HttpReply post = Send(*client_, "POST", "/", "{}");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.Header("Allow"), "GET, HEAD");
  StatusOr<HttpClientResponse> head = client_->http().Send(
      {"HEAD", client_->base_url() + "/dashboard/static/dashboard.js", {}, ""});
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(Send(*client_, "GET", "/health").status, 200);
}

}  // namespace
}  // namespace zeus::testing
