// Learning-curve early stopping over HTTP: under frugal and swarm each
// report is a point of the trial's curve, kept in the job state, and a run
// that learns slower than the run of the lowest cost stops before its whole
// bound; zeus jobs are held to the whole bound only. On SQLite and on
// PostgreSQL.
//
// Every job below has eta_knob 0.5 and reports no time: a report's cost is
// half its energy. The first trial (the default 128, an exploration step)
// reaches the target at epoch 4 for a cost of 200 and becomes the
// reference; frugal's next exploration step is then held to 1.25 x 200 =
// 250 as a whole, and to 1.25 x what the reference had spent when it first
// got further than the step's best metric so far. Check-ins during an epoch
// (POST /report/progress) are held to the whole bound only.

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kCurveMessage[] = "is learning slower than the run of the lowest cost";

class CurveStopTest : public ServiceHttpTest {
 protected:
  // Registers `job_id` under `policy`, lower metrics better when
  // `higher_is_better` is false.
  void RegisterJob(const std::string& job_id, const std::string& policy, bool higher_is_better,
                   double target_metric) {
    json body = JobBody(job_id);
    body["policy"] = policy;
    body["higher_is_better_metric"] = higher_is_better;
    body["target_metric"] = target_metric;
    HttpReply created = Register(body);
    ASSERT_EQ(created.status, 201) << created.raw;
  }

  // The next trial of `job_id`: {batch_size, trial_number}.
  std::pair<int64_t, int64_t> NextTrial(const std::string& job_id) {
    HttpReply next = Next(job_id);
    EXPECT_EQ(next.status, 200) << next.raw;
    return {next.body.value("batch_size", int64_t{0}), next.body.value("trial_number", int64_t{0})};
  }

  // Reports epochs 1, 2, ... of a trial with cumulative costs `costs` and
  // metrics `metrics` until the server stops it; returns the last answer
  // and sets `*epochs` to the number of reports sent.
  HttpReply RunTrial(const std::string& job_id, std::pair<int64_t, int64_t> trial,
                     const std::vector<double>& costs, const std::vector<double>& metrics,
                     int* epochs) {
    HttpReply reply;
    *epochs = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
      // eta_knob 0.5 and no time: the cost is half the energy.
      reply = Report(job_id, trial.first, trial.second, 0.0, 2.0 * costs[i], metrics[i],
                     static_cast<int64_t>(i) + 1);
      ++*epochs;
      EXPECT_EQ(reply.status, 200) << reply.raw;
      if (reply.status != 200 || reply.body["stop_train"] == true) break;
    }
    return reply;
  }

  // A check-in of `trial` of `job_id` having spent `cost` (energy 2 x cost,
  // no time).
  HttpReply CheckIn(const std::string& job_id, std::pair<int64_t, int64_t> trial, double cost) {
    return Do("POST", "/report/progress",
              json{{"job_id", job_id},
                   {"batch_size", trial.first},
                   {"trial_number", trial.second},
                   {"time", 0.0},
                   {"energy", 2.0 * cost}}
                  .dump());
  }

  // The stored optimizer state of `job_id`, as the database holds it now.
  std::string StoredState(const std::string& job_id) {
    std::string state;
    Status status =
        server_->store().RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
          ZEUS_ASSIGN_OR_RETURN(std::optional<JobRecord> job, txn.GetJob(job_id));
          if (!job) return NotFoundError(job_id);
          state = job->state_json;
          return Status::Ok();
        });
    EXPECT_TRUE(status.ok()) << status;
    return state;
  }

  double MinCost(const std::string& job_id) {
    HttpReply job = Do("GET", "/jobs?job_id=" + job_id);
    EXPECT_EQ(job.status, 200) << job.raw;
    return job.body["min_cost"].is_number() ? job.body["min_cost"].get<double>() : -1.0;
  }

  // A new server (and service: an empty optimizer cache) on the same
  // database.
  void Restart() {
    server_.reset();
    server_ = std::make_unique<TestServer>(url_);
    ASSERT_TRUE(server_->ok()) << server_->error();
    client_ = std::make_unique<TestClient>(server_->port());
  }

  // Runs the reference: trial 1 reaches `metrics.back()` (the target) at
  // epoch 4 for a cost of 200.
  void RunReference(const std::string& job_id, const std::vector<double>& metrics) {
    std::pair<int64_t, int64_t> first = NextTrial(job_id);
    ASSERT_EQ(first, std::make_pair(int64_t{128}, int64_t{1}));
    int epochs = 0;
    HttpReply done = RunTrial(job_id, first, {50, 100, 150, 200}, metrics, &epochs);
    ASSERT_EQ(epochs, 4) << done.raw;
    ASSERT_EQ(done.body["converged"], true) << done.raw;
    ASSERT_EQ(MinCost(job_id), 200.0);
  }
};

TEST_P(CurveStopTest, FrugalStopsARunLearningSlowerThanTheReferenceBeforeItsWholeBound) {
  RegisterJob("cs-1", "frugal", true, 0.5);
  RunReference("cs-1", {0.1, 0.2, 0.3, 0.5});
  // The down step, 64: at the reference's pace of cost, its metric lags.
  std::pair<int64_t, int64_t> slow = NextTrial("cs-1");
  ASSERT_EQ(slow.first, 64);
  int epochs = 0;
  HttpReply stopped = RunTrial("cs-1", slow, {50, 100, 150, 200, 250, 300},
                               {0.05, 0.1, 0.15, 0.2, 0.25, 0.3}, &epochs);
  // Epoch 3: best metric 0.15; the reference first got past it at cost 100:
  // bound 1.25 x 100 = 125 < 150, while the whole bound is 250.
  EXPECT_EQ(epochs, 3);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  const std::string message = stopped.body.value("message", "");
  EXPECT_THAT(message, HasSubstr("Batch size 64 " + std::string(kCurveMessage))) << message;
  EXPECT_THAT(message, HasSubstr("cost 150 > bound 125 at metric 0.15")) << message;
  EXPECT_THAT(message, HasSubstr("frugal policy")) << message;
  json trial = Trial("cs-1", 1);
  EXPECT_EQ(trial["converged"], false);
  EXPECT_EQ(trial["cost"], 150.0);
  EXPECT_EQ(trial["message"], message);
  EXPECT_EQ(MinCost("cs-1"), 200.0);
  // The up step, 256, keeps pace with the reference: never stopped.
  std::pair<int64_t, int64_t> apace = NextTrial("cs-1");
  ASSERT_EQ(apace.first, 256);
  HttpReply done = RunTrial("cs-1", apace, {55, 110, 165, 220}, {0.1, 0.2, 0.3, 0.5}, &epochs);
  EXPECT_EQ(epochs, 4);
  EXPECT_EQ(done.body["converged"], true) << done.raw;
}

TEST_P(CurveStopTest, LowerIsBetterMetricsAreHeldToTheCurveToo) {
  // A word error rate: lower is better, target 0.2.
  RegisterJob("wer-1", "frugal", false, 0.2);
  RunReference("wer-1", {0.9, 0.7, 0.5, 0.2});
  std::pair<int64_t, int64_t> slow = NextTrial("wer-1");
  ASSERT_EQ(slow.first, 64);
  int epochs = 0;
  HttpReply stopped = RunTrial("wer-1", slow, {50, 100, 150, 200}, {0.95, 0.95, 0.9, 0.8}, &epochs);
  // Epoch 2: best 0.95; the reference got past it at once (cost 50): bound
  // 1.25 x 50 = 62.5 < 100.
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  const std::string message = stopped.body.value("message", "");
  EXPECT_THAT(message, HasSubstr(kCurveMessage)) << message;
  EXPECT_THAT(message, HasSubstr("cost 100 > bound 62.5 at metric 0.95")) << message;
  std::pair<int64_t, int64_t> apace = NextTrial("wer-1");
  ASSERT_EQ(apace.first, 256);
  HttpReply done = RunTrial("wer-1", apace, {50, 100, 150, 200}, {0.9, 0.7, 0.5, 0.2}, &epochs);
  EXPECT_EQ(epochs, 4);
  EXPECT_EQ(done.body["converged"], true) << done.raw;
}

TEST_P(CurveStopTest, SwarmStopsARunLearningSlowerThanTheReference) {
  RegisterJob("sw-1", "swarm", true, 0.5);
  RunReference("sw-1", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> slow = NextTrial("sw-1");
  ASSERT_EQ(slow.first, 64);
  int epochs = 0;
  HttpReply stopped = RunTrial("sw-1", slow, {50, 100, 150, 200, 250, 300},
                               {0.05, 0.1, 0.15, 0.2, 0.25, 0.3}, &epochs);
  EXPECT_EQ(epochs, 3);
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr("swarm policy")) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr(kCurveMessage)) << stopped.raw;
}

// A near miss runs on: a probe past its whole bound (250) that, within it,
// had got as far as the reference's last level before the target (0.3) fails
// the walk there and finishes its submission as a concurrent run under beta
// x 200 = 400.
TEST_P(CurveStopTest, FrugalRunsANearMissOnPastItsWholeBoundToFinishItsSubmission) {
  RegisterJob("ro-1", "frugal", true, 0.5);
  RunReference("ro-1", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> near = NextTrial("ro-1");
  ASSERT_EQ(near.first, 64);
  std::vector<HttpReply> answers;
  for (const auto& [cost, metric] : std::vector<std::pair<double, double>>{
           {60, 0.1}, {120, 0.2}, {180, 0.3}, {240, 0.35}, {270, 0.4}}) {
    answers.push_back(Report("ro-1", near.first, near.second, 0.0, 2.0 * cost, metric,
                             static_cast<int64_t>(answers.size()) + 1));
    ASSERT_EQ(answers.back().status, 200) << answers.back().raw;
    ASSERT_EQ(answers.back().body["stop_train"], false) << answers.back().raw;
  }
  const std::string message = answers.back().body.value("message", "");
  EXPECT_THAT(message, HasSubstr("Batch size 64 passed the exploration bound 250 as a near miss"))
      << message;
  EXPECT_THAT(message, HasSubstr("held to 400")) << message;
  // The walk has moved on already (64 failed; the down walk ends): the next
  // trial is the up step, while 64 still runs, through a restart.
  Restart();
  EXPECT_EQ(NextTrial("ro-1"), std::make_pair(int64_t{256}, int64_t{3}));
  HttpReply done = Report("ro-1", near.first, near.second, 0.0, 2.0 * 330, 0.5, 6);
  EXPECT_EQ(done.body["stop_train"], true) << done.raw;
  EXPECT_EQ(done.body["converged"], true) << done.raw;
  EXPECT_EQ(MinCost("ro-1"), 200.0);
}

TEST_P(CurveStopTest, ARunOnStopsAtBetaAndAJumpPastTheBoundIsNoNearMiss) {
  RegisterJob("ro-2", "swarm", true, 0.5);
  RunReference("ro-2", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> near = NextTrial("ro-2");
  ASSERT_EQ(near.first, 64);
  int epochs = 0;
  HttpReply stopped = RunTrial("ro-2", near, {60, 120, 180, 240, 330, 390, 420},
                               {0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.45}, &epochs);
  EXPECT_EQ(epochs, 7);
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""),
              HasSubstr("exceeded the cost upper bound: current cost(420.0) > bound(400.0)"))
      << stopped.raw;
  // 256, within its whole bound at 0.1 only, then past it at once: stopped.
  std::pair<int64_t, int64_t> jump = NextTrial("ro-2");
  ASSERT_EQ(jump.first, 256);
  stopped = RunTrial("ro-2", jump, {60, 300}, {0.1, 0.5}, &epochs);
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr("exceeded the cost upper bound"))
      << stopped.raw;
}

TEST_P(CurveStopTest, ZeusIsHeldToTheWholeBoundAndItsReportsDoNotWriteTheJobState) {
  RegisterJob("z-1", "zeus", true, 0.5);
  RunReference("z-1", {0.1, 0.2, 0.3, 0.5});
  const std::string state = StoredState("z-1");
  EXPECT_EQ(state.find("progress"), std::string::npos) << state;
  std::pair<int64_t, int64_t> slow = NextTrial("z-1");
  const std::string dispatched = StoredState("z-1");
  int epochs = 0;
  // Flat at 0.05: the curve would stop it at epoch 2; beta 2 x 200 = 400
  // stops it once its cost passes 400.
  std::vector<double> costs;
  for (int epoch = 1; epoch <= 10; ++epoch) costs.push_back(50.0 * epoch);
  HttpReply stopped = RunTrial("z-1", slow, costs, std::vector<double>(10, 0.05), &epochs);
  EXPECT_EQ(epochs, 9);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  const std::string message = stopped.body.value("message", "");
  EXPECT_THAT(message,
              HasSubstr("exceeded the cost upper bound: current cost(450.0) > bound(400.0)"))
      << message;
  EXPECT_THAT(message, ::testing::Not(HasSubstr(kCurveMessage))) << message;
  // Only the final report wrote the job state.
  std::pair<int64_t, int64_t> next = NextTrial("z-1");
  const std::string before = StoredState("z-1");
  HttpReply keep = Report("z-1", next.first, next.second, 0.0, 100.0, 0.1, 1);
  EXPECT_EQ(keep.body["stop_train"], false) << keep.raw;
  EXPECT_EQ(StoredState("z-1"), before);
  EXPECT_NE(before, dispatched);
}

TEST_P(CurveStopTest, FrugalIntermediateReportsKeepTheCurveInTheJobState) {
  RegisterJob("kp-1", "frugal", true, 0.5);
  std::pair<int64_t, int64_t> first = NextTrial("kp-1");
  const std::string before = StoredState("kp-1");
  HttpReply keep = Report("kp-1", first.first, first.second, 0.0, 100.0, 0.1, 1);
  EXPECT_EQ(keep.body["stop_train"], false) << keep.raw;
  const std::string after = StoredState("kp-1");
  EXPECT_NE(after, before);
  EXPECT_NE(after.find("trial_progress"), std::string::npos) << after;
  // A retry of the same epoch changes nothing.
  EXPECT_EQ(Report("kp-1", first.first, first.second, 0.0, 100.0, 0.1, 1).body["stop_train"],
            false);
  EXPECT_EQ(StoredState("kp-1"), after);
  // Nor does a late report of an older epoch, however far its metric got.
  HttpReply two = Report("kp-1", first.first, first.second, 0.0, 200.0, 0.2, 2);
  EXPECT_EQ(two.body["stop_train"], false) << two.raw;
  const std::string at_two = StoredState("kp-1");
  EXPECT_NE(at_two, after);
  HttpReply late = Report("kp-1", first.first, first.second, 0.0, 300.0, 0.4, 1);
  EXPECT_THAT(late.body.value("message", ""), HasSubstr("ignored")) << late.raw;
  EXPECT_EQ(StoredState("kp-1"), at_two);
}

TEST_P(CurveStopTest, ACumulativeCostThatGoesDownIsAnsweredAndLeftOffTheCurve) {
  RegisterJob("dn-1", "frugal", true, 0.5);
  std::pair<int64_t, int64_t> first = NextTrial("dn-1");
  HttpReply one = Report("dn-1", first.first, first.second, 0.0, 200.0, 0.1, 1);  // Cost 100.
  ASSERT_EQ(one.status, 200) << one.raw;
  const std::string state = StoredState("dn-1");
  HttpReply down = Report("dn-1", first.first, first.second, 0.0, 100.0, 0.2, 2);  // Cost 50.
  ASSERT_EQ(down.status, 200) << down.raw;
  EXPECT_EQ(down.body["stop_train"], false) << down.raw;
  EXPECT_EQ(StoredState("dn-1"), state);  // Nothing to keep.
  EXPECT_EQ(Trial("dn-1", 0)["current_epoch"], 2);
  HttpReply done = Report("dn-1", first.first, first.second, 0.0, 400.0, 0.6, 3);  // Cost 200.
  ASSERT_EQ(done.status, 200) << done.raw;
  EXPECT_EQ(done.body["converged"], true) << done.raw;
  EXPECT_EQ(MinCost("dn-1"), 200.0);
  // The reference is the curve without the refused point.
  EXPECT_NE(StoredState("dn-1").find("\"reference_progress\":[[100.0,0.1],[200.0,0.6]]"),
            std::string::npos)
      << StoredState("dn-1");
  std::pair<int64_t, int64_t> next = NextTrial("dn-1");
  EXPECT_EQ(next.second, 2);
  EXPECT_EQ(Report("dn-1", next.first, next.second, 0.0, 20.0, 0.2, 1).status, 200);
  ExpectHealthy();
}

TEST_P(CurveStopTest, TheCurveOfARunInFlightSurvivesARestart) {
  RegisterJob("rs-1", "frugal", true, 0.5);
  RunReference("rs-1", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> trial = NextTrial("rs-1");
  ASSERT_EQ(trial.first, 64);
  // Epoch 1 gets to 0.25 at cost 50 (the reference first passed it at 150).
  HttpReply keep = Report("rs-1", trial.first, trial.second, 0.0, 100.0, 0.25, 1);
  ASSERT_EQ(keep.body["stop_train"], false) << keep.raw;
  Restart();
  // Epoch 2 falls back to 0.05 at cost 100: held to its best, 0.25 (bound
  // 1.25 x 150), it goes on; held to 0.05 alone (bound 1.25 x 50), it would
  // stop.
  HttpReply after = Report("rs-1", trial.first, trial.second, 0.0, 200.0, 0.05, 2);
  ASSERT_EQ(after.status, 200) << after.raw;
  EXPECT_EQ(after.body["stop_train"], false) << after.raw;
  // Epoch 3 at cost 200 passes 187.5.
  HttpReply stopped = Report("rs-1", trial.first, trial.second, 0.0, 400.0, 0.05, 3);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr("bound 187.5 at metric 0.25"))
      << stopped.raw;
}

// A check-in past the whole bound (250) stops the run there, mid-epoch, a
// failure at what it spent; one within it, or past the curve's bound alone
// (the report before it judged its progress against that curve), changes
// nothing.
TEST_P(CurveStopTest, ACheckInPastTheWholeBoundStopsTheRunMidEpoch) {
  RegisterJob("ci-1", "frugal", true, 0.5);
  RunReference("ci-1", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> step = NextTrial("ci-1");
  ASSERT_EQ(step.first, 64);
  const std::string before = StoredState("ci-1");
  // Epoch 1 at 50, metric 0.05: the curve's bound is 1.25 x 50 = 62.5.
  HttpReply report = Report("ci-1", step.first, step.second, 0.0, 2.0 * 50, 0.05, 1);
  ASSERT_EQ(report.body["stop_train"], false) << report.raw;
  for (double cost : {60.0, 200.0, 250.0}) {
    HttpReply going = CheckIn("ci-1", step, cost);
    ASSERT_EQ(going.status, 200) << going.raw;
    EXPECT_EQ(going.body["stop_train"], false) << cost << going.raw;
    EXPECT_EQ(going.body["message"], "Stop condition not met, keep training") << going.raw;
  }
  // A late check-in below what the run reported is ignored.
  HttpReply stale = CheckIn("ci-1", step, 40.0);
  EXPECT_EQ(stale.body["stop_train"], false) << stale.raw;
  EXPECT_THAT(stale.body.value("message", ""), HasSubstr("Check-in ignored")) << stale.raw;
  HttpReply stopped = CheckIn("ci-1", step, 260.0);
  ASSERT_EQ(stopped.status, 200) << stopped.raw;
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  const std::string message = stopped.body.value("message", "");
  EXPECT_THAT(message,
              HasSubstr("Batch Size(64) exceeded the cost upper bound: current cost(260.0) > "
                        "bound(250.0)"))
      << message;
  json trial = Trial("ci-1", 1);
  EXPECT_EQ(trial["status"], "succeeded");
  EXPECT_EQ(trial["converged"], false);
  EXPECT_EQ(trial["cost"], 260.0);
  EXPECT_EQ(trial["energy"], 520.0);
  EXPECT_EQ(trial["current_epoch"], 1);
  EXPECT_NE(StoredState("ci-1"), before);
  EXPECT_EQ(MinCost("ci-1"), 200.0);
  // The trial is over: a check-in or a report answers its outcome.
  HttpReply again = CheckIn("ci-1", step, 270.0);
  EXPECT_EQ(again.body["stop_train"], true) << again.raw;
  EXPECT_EQ(again.body["message"], message) << again.raw;
  report = Report("ci-1", step.first, step.second, 0.0, 2.0 * 300, 0.1, 2);
  EXPECT_EQ(report.body["stop_train"], true) << report.raw;
  // A report answers as the original server does for a trial reported again.
  EXPECT_EQ(report.body["message"],
            "Result for this trial(" + std::to_string(step.second) + ") is already reported.")
      << report.raw;
  // The walk goes on to the up step.
  EXPECT_EQ(NextTrial("ci-1").first, 256);
}

// Before its first report a probe has shown no progress: its check-ins
// hold it to its curve's first point, 1.25 x the reference's 50.
TEST_P(CurveStopTest, ACheckInBeforeTheFirstReportIsHeldToTheCurvesFirstPoint) {
  RegisterJob("ci-4", "frugal", true, 0.5);
  RunReference("ci-4", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> step = NextTrial("ci-4");
  ASSERT_EQ(step.first, 64);
  HttpReply going = CheckIn("ci-4", step, 62.5);
  EXPECT_EQ(going.body["stop_train"], false) << going.raw;
  HttpReply stopped = CheckIn("ci-4", step, 63.0);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_EQ(stopped.body["converged"], false) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""),
              HasSubstr("Batch size 64 is learning slower than the run of the lowest cost: cost "
                        "63 > bound 62.5 before its first report"))
      << stopped.raw;
  json trial = Trial("ci-4", 1);
  EXPECT_EQ(trial["cost"], 63.0);
  EXPECT_EQ(trial["current_epoch"], nullptr);
  // Slower than the reference from the start: the down direction is over.
  EXPECT_EQ(NextTrial("ci-4").first, 256);
}

// After a report, check-ins judge the curve again only once it changed (a
// cheaper run's curve became the reference meanwhile), and then only for a
// run that got to its progress slower than the new curve allows.
TEST_P(CurveStopTest, ACheckInJudgesAChangedCurveForARunBehindIt) {
  RegisterJob("ci-5", "frugal", true, 0.5);
  RunReference("ci-5", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> probe = NextTrial("ci-5");
  std::pair<int64_t, int64_t> concurrent = NextTrial("ci-5");
  ASSERT_EQ(probe.first, 64);
  ASSERT_EQ(concurrent.first, 128);
  // Epoch 1 at 50, metric 0.05: judged against the curve there (62.5).
  HttpReply report = Report("ci-5", probe.first, probe.second, 0.0, 2.0 * 50, 0.05, 1);
  ASSERT_EQ(report.body["stop_train"], false) << report.raw;
  EXPECT_EQ(CheckIn("ci-5", probe, 100.0).body["stop_train"], false);
  // 128 reaches at cost 100: the new reference, {30: 0.2, 100: 0.5}. The
  // probe got to 0.05 at 50, past 1.25 x 30.
  int epochs = 0;
  HttpReply done = RunTrial("ci-5", concurrent, {30, 100}, {0.2, 0.5}, &epochs);
  ASSERT_EQ(done.body["converged"], true) << done.raw;
  ASSERT_EQ(MinCost("ci-5"), 100.0);
  // Within the whole bound (1.25 x 100), past the new curve at 0.05.
  HttpReply stopped = CheckIn("ci-5", probe, 101.0);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""),
              HasSubstr("is learning slower than the run of the lowest cost: cost 101 > bound "
                        "37.5 at metric 0.05"))
      << stopped.raw;
}

// A run on pace with a changed curve where it last reported may show more
// progress at its next report: check-ins hold it to its whole bound, and
// that report to the new curve.
TEST_P(CurveStopTest, ACheckInHoldsARunOnPaceWithAChangedCurveToItsWholeBound) {
  RegisterJob("ci-6", "frugal", true, 0.5);
  RunReference("ci-6", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> probe = NextTrial("ci-6");
  std::pair<int64_t, int64_t> concurrent = NextTrial("ci-6");
  ASSERT_EQ(probe.first, 64);
  ASSERT_EQ(concurrent.first, 128);
  HttpReply report = Report("ci-6", probe.first, probe.second, 0.0, 2.0 * 50, 0.05, 1);
  ASSERT_EQ(report.body["stop_train"], false) << report.raw;
  // The new reference, {50: 0.2, 100: 0.5}: the probe got to 0.05 at 50,
  // within 1.25 x 50.
  int epochs = 0;
  HttpReply done = RunTrial("ci-6", concurrent, {50, 100}, {0.2, 0.5}, &epochs);
  ASSERT_EQ(done.body["converged"], true) << done.raw;
  ASSERT_EQ(MinCost("ci-6"), 100.0);
  // Past the curve at 0.05 (62.5), within the whole bound (125).
  HttpReply going = CheckIn("ci-6", probe, 101.0);
  EXPECT_EQ(going.body["stop_train"], false) << going.raw;
  // Its report there, still at 0.05, is judged against the new curve.
  HttpReply stopped = Report("ci-6", probe.first, probe.second, 0.0, 2.0 * 102, 0.05, 2);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr("cost 102 > bound 62.5 at metric 0.05"))
      << stopped.raw;
}

TEST_P(CurveStopTest, ACheckInPastItsWholeBoundRunsANearMissOn) {
  RegisterJob("ci-2", "frugal", true, 0.5);
  RunReference("ci-2", {0.1, 0.2, 0.3, 0.5});
  std::pair<int64_t, int64_t> near = NextTrial("ci-2");
  ASSERT_EQ(near.first, 64);
  for (const auto& [cost, metric] :
       std::vector<std::pair<double, double>>{{60, 0.1}, {120, 0.2}, {180, 0.3}, {240, 0.35}}) {
    HttpReply going = Report("ci-2", near.first, near.second, 0.0, 2.0 * cost, metric,
                             static_cast<int64_t>(cost / 60));
    ASSERT_EQ(going.body["stop_train"], false) << going.raw;
  }
  // Past 250 between reports, having got as far as 0.3 within it.
  HttpReply ran_on = CheckIn("ci-2", near, 255.0);
  EXPECT_EQ(ran_on.body["stop_train"], false) << ran_on.raw;
  EXPECT_THAT(ran_on.body.value("message", ""),
              HasSubstr("Batch size 64 passed the exploration bound 250 as a near miss"))
      << ran_on.raw;
  // Held to beta x 200 = 400 from there.
  EXPECT_EQ(CheckIn("ci-2", near, 390.0).body["stop_train"], false);
  HttpReply stopped = CheckIn("ci-2", near, 410.0);
  EXPECT_EQ(stopped.body["stop_train"], true) << stopped.raw;
  EXPECT_THAT(stopped.body.value("message", ""), HasSubstr("current cost(410.0) > bound(400.0)"))
      << stopped.raw;
}

TEST_P(CurveStopTest, ABadCheckInIsRefusedNamingWhatWasWrong) {
  RegisterJob("ci-3", "frugal", true, 0.5);
  std::pair<int64_t, int64_t> first = NextTrial("ci-3");
  const json body = {{"job_id", "ci-3"},
                     {"batch_size", first.first},
                     {"trial_number", first.second},
                     {"time", 1.0},
                     {"energy", 2.0}};
  json negative = body;
  negative["energy"] = -1.0;
  HttpReply refused = Do("POST", "/report/progress", negative.dump());
  EXPECT_EQ(refused.status, 422) << refused.raw;
  EXPECT_THAT(refused.raw, HasSubstr("energy")) << refused.raw;
  json missing = body;
  missing.erase("time");
  refused = Do("POST", "/report/progress", missing.dump());
  EXPECT_EQ(refused.status, 422) << refused.raw;
  EXPECT_THAT(refused.raw, HasSubstr("time")) << refused.raw;
  json unknown = body;
  unknown["trial_number"] = 99;
  refused = Do("POST", "/report/progress", unknown.dump());
  EXPECT_EQ(refused.status, 404) << refused.raw;
  // Before any run reached the target, nothing bounds a check-in.
  HttpReply going = Do("POST", "/report/progress", body.dump());
  EXPECT_EQ(going.status, 200) << going.raw;
  EXPECT_EQ(going.body["stop_train"], false) << going.raw;
  EXPECT_EQ(Trial("ci-3", 0)["status"], "dispatched");
}

INSTANTIATE_TEST_SUITE_P(Stores, CurveStopTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

}  // namespace
}  // namespace zeus::testing
