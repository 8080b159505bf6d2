// A recurring job driven through HTTP with a fixed seed hands out the same
// batch-size sequence as the simulator's `zeus` policy with that seed, when
// both see the same run outcomes (taken from the simulator on the paper's
// A40 traces: early-stopped, failed and retried runs included).

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

// Forwards to the `zeus` policy and records every plan with its outcome, in
// the order the simulator used them.
class RecordingPolicy final : public Policy {
 public:
  struct Step {
    RunPlan plan;
    RunOutcome outcome;
  };

  explicit RecordingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  RunPlan Next() override { return inner_->Next(); }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    steps_.push_back(Step{plan, outcome});
    return inner_->Observe(plan, outcome);
  }
  const std::vector<Step>& steps() const { return steps_; }

 private:
  std::unique_ptr<Policy> inner_;
  std::vector<Step> steps_;
};

TEST(EquivalenceTest, HttpJobFollowsSimulatorZeusPolicySequence) {
  const std::string traces = DataDir() + "/traces/zeus-nsdi23";
  StatusOr<std::vector<Workload>> workloads = LoadWorkloads(traces, "a40");
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  ASSERT_FALSE(workloads->empty());
  TempDir dir;
  std::string skip_reason;
  TestServer server(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason));
  ASSERT_TRUE(server.ok()) << server.error();
  httplib::Client client("127.0.0.1", server.port());

  int compared = 0;
  for (const Workload& workload : *workloads) {
    for (uint64_t seed : {1, 7}) {
      SimulationOptions options;
      options.seed = seed;
      options.num_recurrences = 60;
      PolicyContext context;
      context.workload = &workload;
      context.eta = options.eta;
      context.beta = options.beta;
      context.seed = seed;
      StatusOr<std::unique_ptr<Policy>> zeus = MakePolicy("zeus", context);
      ZEUS_ASSERT_OK(zeus.status());
      RecordingPolicy policy(std::move(*zeus));
      ZEUS_ASSERT_OK(SimulateRecurringJob(workload, policy, options).status());

      const std::string job_id = "eq-" + workload.job.dataset + "-" + std::to_string(seed);
      json job = JobBody(job_id, static_cast<int64_t>(seed));
      job["job_id_prefix"] = "eq";
      job["batch_sizes"] = workload.BatchSizeList();
      job["default_batch_size"] = workload.default_batch_size;
      job["max_power"] = workload.max_power_w;
      job["max_epochs"] = 1000;
      ASSERT_EQ(Send(client, "POST", "/jobs", job.dump()).status, 201);

      int step_number = 0;
      for (const RecordingPolicy::Step& step : policy.steps()) {
        SCOPED_TRACE(job_id + " step " + std::to_string(step_number++));
        HttpReply trial = Send(client, "GET", "/jobs/batch_size?job_id=" + job_id);
        ASSERT_EQ(trial.status, 200) << trial.raw;
        ASSERT_EQ(trial.body["batch_size"], step.plan.batch_size);
        // The outcome the policy observed, as a final report: cost = energy
        // (eta 0.5, time 0). A run that could not start costs 100 x limit.
        double cost = step.outcome.cost;
        if (!step.outcome.ran) cost = 100.0 * step.plan.cost_limit.value_or(0.0);
        json report = trial.body;
        report["time"] = 0.0;
        report["energy"] = 2.0 * cost;
        report["metric"] = step.outcome.reached ? 1.0 : 0.0;
        report["current_epoch"] = step.outcome.reached ? 1 : 1000;
        HttpReply answer = Send(client, "POST", "/report", report.dump());
        ASSERT_EQ(answer.status, 200) << answer.raw;
        ASSERT_EQ(answer.body["stop_train"], true);
        ASSERT_EQ(answer.body["converged"], step.outcome.reached) << answer.raw;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace zeus::testing
