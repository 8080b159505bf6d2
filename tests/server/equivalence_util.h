// Shared pieces of the server-versus-simulator equivalence tests
// (equivalence_test.cc, group_equivalence_test.cc,
// replica_equivalence_test.cc): recording the simulator's group hand-outs and
// observations, registering a job for a workload, and the report bodies and
// early-stop probe they send. Failures are gtest expectations.

#ifndef ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
#define ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {

// Forwards to a policy and records hand-outs and observations in the order
// the group simulation made them.
class GroupRecordingPolicy final : public Policy {
 public:
  struct Event {
    bool hand_out = true;
    RunPlan plan;
    RunOutcome outcome;  // Observations only.
  };

  explicit GroupRecordingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

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

// The simulated events of one workload's overlapping job group.
struct SimulatedJob {
  const Workload* workload = nullptr;
  std::vector<GroupRecordingPolicy::Event> events;
};

// The policy `policy_name` for `workload` with the simulator's default eta
// and beta and `seed`; records a failed expectation and returns null when it
// cannot be made.
inline std::unique_ptr<Policy> MakeSimulatedPolicy(const std::string& policy_name,
                                                   const Workload& workload,
                                                   const SimulationOptions& options,
                                                   uint64_t seed) {
  PolicyContext context;
  context.workload = &workload;
  context.eta = options.eta;
  context.beta = options.beta;
  context.seed = seed;
  StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(policy_name, context);
  EXPECT_TRUE(policy.ok()) << policy.status();
  if (!policy.ok()) return nullptr;
  return std::move(*policy);
}

// Simulates one heavily overlapping job group (about four submissions in
// flight) per workload with `policy_name` and `seed`. Empty on any failure
// (recorded as a failed expectation).
inline std::vector<SimulatedJob> SimulateGroups(const std::vector<Workload>& workloads,
                                                const std::string& policy_name, uint64_t seed) {
  std::vector<SimulatedJob> jobs;
  JobGroupGeneratorOptions generator;
  generator.num_groups = 1;
  generator.submissions_per_group = 30;
  generator.mean_interarrival_s = 1000.0;
  generator.mean_duration_s = 4000.0;
  generator.seed = seed;
  for (const Workload& workload : workloads) {
    StatusOr<JobGroups> groups = GenerateJobGroups(generator, {workload.job.dataset});
    EXPECT_TRUE(groups.ok()) << groups.status();
    if (!groups.ok()) return {};
    SimulationOptions options;
    options.seed = seed;
    std::unique_ptr<Policy> inner = MakeSimulatedPolicy(policy_name, workload, options, seed);
    if (inner == nullptr) return {};
    GroupRecordingPolicy policy(std::move(inner));
    Status simulated =
        SimulateJobGroup(workload, policy, groups->begin()->second, options).status();
    EXPECT_TRUE(simulated.ok()) << simulated;
    if (!simulated.ok()) return {};
    jobs.push_back(SimulatedJob{&workload, policy.events()});
  }
  return jobs;
}

// The A40 workloads of the paper's traces in data/.
inline StatusOr<std::vector<Workload>> LoadA40Workloads() {
  return LoadWorkloads(DataDir() + "/traces/zeus-nsdi23", "a40");
}

// The A40 workloads and, once they are loaded, a server on a fresh SQLite
// database in its own temporary directory with a client of it. Workloads
// that cannot be loaded (or none) and a server that does not start are
// failed expectations and ok() false.
class SqliteServerWithWorkloads {
 public:
  SqliteServerWithWorkloads() {
    StatusOr<std::vector<Workload>> workloads = LoadA40Workloads();
    EXPECT_TRUE(workloads.ok()) << workloads.status();
    if (!workloads.ok() || workloads->empty()) return;
    workloads_ = std::move(*workloads);
    server_ = std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason_));
    EXPECT_TRUE(server_->ok()) << server_->error();
    if (server_->ok()) client_ = std::make_unique<TestClient>(server_->port());
  }

  bool ok() const { return client_ != nullptr; }
  // REQUIRES: ok() (for both).
  const std::vector<Workload>& workloads() const { return workloads_; }
  TestClient& http() { return *client_; }

 private:
  TempDir dir_;
  std::string skip_reason_;
  std::vector<Workload> workloads_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<TestClient> client_;
};

// The registration body of job `job_id` (id prefix `prefix`) for `workload`
// with `policy_name` and `seed`.
inline nlohmann::json RegistrationBody(const std::string& job_id, const std::string& prefix,
                                       const std::string& policy_name, const Workload& workload,
                                       uint64_t seed) {
  nlohmann::json job = JobBody(job_id, static_cast<int64_t>(seed));
  job["policy"] = policy_name;
  job["job_id_prefix"] = prefix;
  job["batch_sizes"] = workload.BatchSizeList();
  job["default_batch_size"] = workload.default_batch_size;
  job["max_power"] = workload.max_power_w;
  job["max_epochs"] = 1000;
  return job;
}

// A final report of the trial `trial` (its hand-out body) with `cost` and
// whether it `reached` the target: cost = energy / 2 at eta 0.5 and time 0.
inline nlohmann::json FinalReport(const nlohmann::json& trial, double cost, bool reached) {
  nlohmann::json report = trial;
  report["time"] = 0.0;
  report["energy"] = 2.0 * cost;
  report["metric"] = reached ? 1.0 : 0.0;
  report["current_epoch"] = reached ? 2 : 1000;
  return report;
}

// The final report of a simulated outcome: a run that could not start costs
// 100 x its plan's limit.
inline nlohmann::json FinalReport(const nlohmann::json& trial, const RunPlan& plan,
                                  const RunOutcome& outcome) {
  double cost = outcome.cost;
  if (!outcome.ran) cost = 100.0 * plan.cost_limit.value_or(0.0);
  return FinalReport(trial, cost, outcome.reached);
}

// Reports the trial `trial` at its plan's cost limit, when it has one, and
// expects the server not to stop it. Returns the answer, or nothing when the
// plan has no positive limit.
inline std::optional<HttpReply> ProbeAtBound(TestClient& client, const nlohmann::json& trial,
                                             const RunPlan& plan) {
  if (!plan.cost_limit.has_value() || *plan.cost_limit <= 0) return std::nullopt;
  nlohmann::json probe = trial;
  probe["time"] = 0.0;
  probe["energy"] = 2.0 * *plan.cost_limit;
  probe["metric"] = 0.0;
  probe["current_epoch"] = 1;
  HttpReply at_bound = Send(client, "POST", "/report", probe.dump());
  EXPECT_EQ(at_bound.status, 200) << at_bound.raw;
  EXPECT_EQ(at_bound.body["stop_train"], false) << at_bound.raw;
  return at_bound;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
