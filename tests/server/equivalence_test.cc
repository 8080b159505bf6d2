// A recurring job driven through HTTP with a fixed seed hands out the same
// batch-size sequence as the simulator's `zeus` (or `frugal`) policy with
// that seed, when both see the same run outcomes (taken from the simulator on
// the paper's A40 traces: early-stopped, failed and retried runs included),
// and stops each run where the simulator's plan bounded it. frugal's runs
// report their learning curve epoch by epoch (the traces' milestones as the
// metric), and the server stops a probe that learns slower than the run of
// the lowest cost where the simulator did.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/equivalence_util.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

// Forwards to a policy and records every plan with its outcome, in
// the order the simulator used them.
class RecordingPolicy final : public Policy {
 public:
  struct Step {
    RunPlan plan;
    RunOutcome outcome;
  };

  explicit RecordingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  RunPlan Next(int attempt) override { return inner_->Next(attempt); }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    // One run at a time: the bounds in force at its report are those it
    // was handed out with, which the replay holds it to; a near miss that
    // ran on is held to its run-on limit, with no curve.
    if (outcome.ran_on.has_value()) {
      EXPECT_EQ(inner_->CostLimitAtReport(plan), plan.run_on_cost_limit);
      EXPECT_TRUE(inner_->ProgressLimitsAtReport(plan).empty());
    } else {
      EXPECT_EQ(inner_->CostLimitAtReport(plan), plan.cost_limit);
      EXPECT_EQ(inner_->ProgressLimitsAtReport(plan), plan.progress_limits);
    }
    steps_.push_back(Step{plan, outcome});
    return inner_->Observe(plan, outcome);
  }
  Status RunOn(const RunPlan& plan, double progress) override {
    return inner_->RunOn(plan, progress);
  }
  std::optional<double> RunOnLimitAtReport(const RunPlan& plan) const override {
    return inner_->RunOnLimitAtReport(plan);
  }
  const std::vector<Step>& steps() const { return steps_; }

 private:
  std::unique_ptr<Policy> inner_;
  std::vector<Step> steps_;
};

struct Compared {
  // Steps the server and the simulator agreed on.
  int steps = 0;
  // Runs of a batch size whose first run had failed (frugal's censored sizes
  // tried again by the bandit).
  int retries_after_failure = 0;
  // Runs replayed as their learning curve.
  CurveReplayStats curves;
};

// Registers one job per A40 workload and seed in `seeds` with `policy` and
// checks that the server follows the simulator's plans step by step.
Compared CompareWithSimulator(const std::string& policy_name, const std::vector<uint64_t>& seeds) {
  Compared compared;
  SqliteServerWithWorkloads setup;
  if (!setup.ok()) return compared;
  TestClient& client = setup.http();

  for (const Workload& workload : setup.workloads()) {
    for (uint64_t seed : seeds) {
      SimulationOptions options;
      options.seed = seed;
      options.num_recurrences = 60;
      std::unique_ptr<Policy> inner = MakeSimulatedPolicy(policy_name, workload, options, seed);
      if (inner == nullptr) return compared;
      RecordingPolicy policy(std::move(inner));
      Status simulated = SimulateRecurringJob(workload, policy, options).status();
      EXPECT_TRUE(simulated.ok()) << simulated;
      if (!simulated.ok()) return compared;

      const std::string job_id =
          "eq-" + policy_name + "-" + workload.job.dataset + "-" + std::to_string(seed);
      const HttpReply registered =
          Send(client, "POST", "/jobs",
               RegistrationBody(job_id, "eq", policy_name, workload, seed).dump());
      EXPECT_EQ(registered.status, 201) << registered.raw;
      if (registered.status != 201) return compared;

      int step_number = 0;
      // By batch size: whether its first run passed (a near miss that ran on
      // finished its submission but failed the walk).
      std::map<int, bool> first_passed;
      for (const RecordingPolicy::Step& step : policy.steps()) {
        auto [first, inserted] = first_passed.emplace(
            step.plan.batch_size, step.outcome.reached && !step.outcome.ran_on.has_value());
        if (!inserted && !first->second) ++compared.retries_after_failure;
        SCOPED_TRACE(job_id + " step " + std::to_string(step_number++));
        HttpReply trial = Send(client, "GET", "/jobs/batch_size?job_id=" + job_id);
        EXPECT_EQ(trial.status, 200) << trial.raw;
        EXPECT_EQ(trial.body["batch_size"], step.plan.batch_size);
        if (trial.status != 200 || trial.body["batch_size"] != step.plan.batch_size) {
          return compared;
        }
        // The server's bounds for this trial are the simulator's: a report
        // at the cost limit does not stop a run without a curve; the stored
        // bounds of a run with one (its cost limit and, for frugal's
        // probes, its learning-curve limits) are the plan's.
        ProbeAtBound(client, trial.body, step.plan);
        if (step.plan.record_progress) {
          ExpectServerBounds(setup.store(), job_id, trial.body["trial_number"].get<int64_t>(),
                             step.plan.cost_limit, step.plan.progress_limits);
        }
        const double target = TargetMetric(workload);
        if (!step.outcome.progress.empty() || step.outcome.stopped_at_check_in) {
          // The run's learning curve, epoch by epoch (a near miss runs on at
          // the server where the simulator ran it on: held to its run-on
          // limit from there), and the check-in that stopped it, if one did.
          const bool ran_on = step.outcome.ran_on.has_value();
          compared.curves.ran_on += ran_on;
          const SimulatedRun run{&step.plan, &step.outcome,
                                 ran_on ? step.plan.run_on_cost_limit : step.plan.cost_limit,
                                 step.plan.progress_limits, false};
          ReplayRun({&client}, 0, trial.body, run, target, &compared.curves);
          if (::testing::Test::HasFailure()) return compared;
          ++compared.steps;
          continue;
        }
        // The outcome the policy observed, as a final report: cost = energy
        // (eta 0.5, time 0). A run that could not start costs 100 x limit.
        const json report = FinalReport(trial.body, step.plan, step.outcome, target);
        HttpReply answer = Send(client, "POST", "/report", report.dump());
        EXPECT_EQ(answer.status, 200) << answer.raw;
        EXPECT_EQ(answer.body["stop_train"], true);
        EXPECT_EQ(answer.body["converged"], step.outcome.reached) << answer.raw;
        if (answer.status != 200 || answer.body["converged"] != step.outcome.reached) {
          return compared;
        }
        ++compared.steps;
      }
    }
  }
  return compared;
}

TEST(EquivalenceTest, HttpJobFollowsSimulatorZeusPolicySequence) {
  const Compared compared = CompareWithSimulator("zeus", {1, 7});
  EXPECT_GT(compared.steps, 500);
  // zeus's runs report once, at their end.
  EXPECT_EQ(compared.curves.runs, 0);
}

TEST(EquivalenceTest, HttpJobFollowsSimulatorFrugalPolicySequence) {
  // Seed 11 has A40 movielens-1m prune 16384 by bad luck at the exploration
  // bound and the bandit try it again as a censored arm.
  const Compared compared = CompareWithSimulator("frugal", {1, 7, 11});
  EXPECT_GT(compared.steps, 600);
  EXPECT_GT(compared.retries_after_failure, 10);
  // Runs reported epoch by epoch; probes the server stopped on the learning
  // curve where the simulator did, some at a check-in before their first
  // report, and probes at a curve's bound that it let go on. (A probe's
  // whole bound is above its curve's first point, which holds it from the
  // start: alone, failed runs stop on the curve; the group tests have
  // whole-bound stops.)
  EXPECT_GT(compared.curves.runs, 600);
  EXPECT_GE(compared.curves.curve_stops, 10);
  EXPECT_GE(compared.curves.check_in_stops, 6);
  EXPECT_GT(compared.curves.curve_probes, 0);
  // One run at a time: no bound tightens mid-run.
  EXPECT_EQ(compared.curves.stopped_early, 0);
  // Near misses that ran on past their exploration bound.
  EXPECT_GT(compared.curves.ran_on, 0);
}

}  // namespace
}  // namespace zeus::testing
