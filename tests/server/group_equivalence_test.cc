// Concurrent submissions through HTTP: a job registered with policy `swarm`
// (or `frugal`) hands out the same batch sizes as the simulator's group
// simulation with that seed, when both see the same run outcomes in the same
// order: several trials in flight at once, reported out of order (overlapping
// generated job groups on the paper's A40 traces, retries included), with
// the same early-stop bound for each trial.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

// Forwards to a policy and records hand-outs and observations in the order
// the group simulation made them.
class RecordingPolicy final : public Policy {
 public:
  struct Event {
    bool hand_out = true;
    RunPlan plan;
    RunOutcome outcome;  // Observations only.
  };

  explicit RecordingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  RunPlan Next() override {
    RunPlan plan = inner_->Next();
    events_.push_back(Event{true, plan, RunOutcome()});
    return plan;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    events_.push_back(Event{false, plan, outcome});
    return inner_->Observe(plan, outcome);
  }
  std::optional<double> CostLimitAtReport(const RunPlan& plan) const override {
    return inner_->CostLimitAtReport(plan);
  }
  const std::vector<Event>& events() const { return events_; }

 private:
  std::unique_ptr<Policy> inner_;
  std::vector<Event> events_;
};

struct Compared {
  // Events (hand-outs and reports) the server and the simulator agreed on.
  int events = 0;
  // Reports that arrived while an earlier-handed trial was still in flight.
  int out_of_order = 0;
  // Most trials in flight at once.
  size_t max_in_flight = 0;
};

Compared CompareGroupsWithSimulator(const std::string& policy_name, uint64_t seed) {
  const std::string traces = DataDir() + "/traces/zeus-nsdi23";
  StatusOr<std::vector<Workload>> workloads = LoadWorkloads(traces, "a40");
  Compared compared;
  EXPECT_TRUE(workloads.ok()) << workloads.status();
  if (!workloads.ok() || workloads->empty()) return compared;
  TempDir dir;
  std::string skip_reason;
  TestServer server(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason));
  EXPECT_TRUE(server.ok()) << server.error();
  if (!server.ok()) return compared;
  httplib::Client client("127.0.0.1", server.port());

  // Heavily overlapping groups: about four submissions in flight.
  JobGroupGeneratorOptions generator;
  generator.num_groups = 1;
  generator.submissions_per_group = 30;
  generator.mean_interarrival_s = 1000.0;
  generator.mean_duration_s = 4000.0;
  generator.seed = seed;
  for (const Workload& workload : *workloads) {
    StatusOr<JobGroups> groups = GenerateJobGroups(generator, {workload.job.dataset});
    EXPECT_TRUE(groups.ok()) << groups.status();
    if (!groups.ok()) return compared;
    const std::vector<JobSubmission>& submissions = groups->begin()->second;
    SimulationOptions options;
    options.seed = seed;
    PolicyContext context;
    context.workload = &workload;
    context.eta = options.eta;
    context.beta = options.beta;
    context.seed = seed;
    StatusOr<std::unique_ptr<Policy>> inner = MakePolicy(policy_name, context);
    EXPECT_TRUE(inner.ok()) << inner.status();
    if (!inner.ok()) return compared;
    RecordingPolicy policy(std::move(*inner));
    Status simulated = SimulateJobGroup(workload, policy, submissions, options).status();
    EXPECT_TRUE(simulated.ok()) << simulated;
    if (!simulated.ok()) return compared;

    const std::string job_id = "grp-" + policy_name + "-" + workload.job.dataset;
    json job = JobBody(job_id, static_cast<int64_t>(seed));
    job["policy"] = policy_name;
    job["job_id_prefix"] = "grp";
    job["batch_sizes"] = workload.BatchSizeList();
    job["default_batch_size"] = workload.default_batch_size;
    job["max_power"] = workload.max_power_w;
    job["max_epochs"] = 1000;
    const HttpReply registered = Send(client, "POST", "/jobs", job.dump());
    EXPECT_EQ(registered.status, 201) << registered.raw;
    if (registered.status != 201) return compared;

    std::map<int64_t, json> trials;  // The server's trial bodies by trial number.
    int event_number = 0;
    for (const RecordingPolicy::Event& event : policy.events()) {
      SCOPED_TRACE(job_id + " event " + std::to_string(event_number++));
      if (event.hand_out) {
        HttpReply trial = Send(client, "GET", "/jobs/batch_size?job_id=" + job_id);
        EXPECT_EQ(trial.status, 200) << trial.raw;
        EXPECT_EQ(trial.body["batch_size"], event.plan.batch_size);
        EXPECT_EQ(trial.body["trial_number"], event.plan.run_id);
        if (trial.status != 200 || trial.body["batch_size"] != event.plan.batch_size) {
          return compared;
        }
        trials[event.plan.run_id] = trial.body;
        compared.max_in_flight = std::max(compared.max_in_flight, trials.size());
        // The server's bound for this trial is the simulator's cost limit: a
        // report at it does not stop the run.
        if (event.plan.cost_limit.has_value() && *event.plan.cost_limit > 0) {
          json probe = trial.body;
          probe["time"] = 0.0;
          probe["energy"] = 2.0 * *event.plan.cost_limit;
          probe["metric"] = 0.0;
          probe["current_epoch"] = 1;
          HttpReply at_bound = Send(client, "POST", "/report", probe.dump());
          EXPECT_EQ(at_bound.status, 200) << at_bound.raw;
          EXPECT_EQ(at_bound.body["stop_train"], false) << at_bound.raw;
        }
        ++compared.events;
        continue;
      }
      auto it = trials.find(event.plan.run_id);
      EXPECT_NE(it, trials.end()) << "report of a trial never handed out";
      if (it == trials.end()) return compared;
      if (it != trials.begin()) ++compared.out_of_order;
      // The outcome the policy observed, held to the bound in force when it
      // reported (replayed by the simulator when that bound had tightened),
      // as a final report: cost = energy (eta 0.5, time 0). A run that could
      // not start costs 100 x limit.
      double cost = event.outcome.cost;
      if (!event.outcome.ran) cost = 100.0 * event.plan.cost_limit.value_or(0.0);
      json report = it->second;
      report["time"] = 0.0;
      report["energy"] = 2.0 * cost;
      report["metric"] = event.outcome.reached ? 1.0 : 0.0;
      report["current_epoch"] = event.outcome.reached ? 2 : 1000;
      HttpReply answer = Send(client, "POST", "/report", report.dump());
      EXPECT_EQ(answer.status, 200) << answer.raw;
      EXPECT_EQ(answer.body["stop_train"], true);
      EXPECT_EQ(answer.body["converged"], event.outcome.reached)
          << answer.raw << " (simulated bound " << event.plan.cost_limit.value_or(-1.0) << ")";
      if (answer.status != 200 || answer.body["converged"] != event.outcome.reached) {
        return compared;
      }
      trials.erase(it);
      ++compared.events;
    }
    EXPECT_TRUE(trials.empty());
  }
  return compared;
}

TEST(GroupEquivalenceTest, HttpJobFollowsSimulatorSwarmPolicyWithConcurrentSubmissions) {
  const Compared compared = CompareGroupsWithSimulator("swarm", 3);
  EXPECT_GT(compared.events, 300);
  EXPECT_GT(compared.out_of_order, 20);
  EXPECT_GE(compared.max_in_flight, 4u);
}

TEST(GroupEquivalenceTest, HttpJobFollowsSimulatorFrugalPolicyWithConcurrentSubmissions) {
  const Compared compared = CompareGroupsWithSimulator("frugal", 3);
  EXPECT_GT(compared.events, 300);
  EXPECT_GT(compared.out_of_order, 20);
}

}  // namespace
}  // namespace zeus::testing
