// The workloads, registrations and report bodies the replay tests send
// `zeus serve` (equivalence_util.h, replica_equivalence_test.cc), and the
// optimizer state it stored. Failures are gtest expectations or Status.

#ifndef ZEUS_TESTS_SERVER_REPLAY_BODIES_H_
#define ZEUS_TESTS_SERVER_REPLAY_BODIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/sim/trace.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {

// The A40 workloads of the paper's traces in data/.
inline StatusOr<std::vector<Workload>> LoadA40Workloads() {
  return LoadWorkloads(DataDir() + "/traces/zeus-nsdi23", "a40");
}

// A run's progress (its milestones reached, plus one at the target) is the
// metric it reports, higher being better: this is the target.
inline double TargetMetric(const Workload& workload) {
  return static_cast<double>(workload.milestones.size()) + 1.0;
}

// The epoch of a report that ends a run without reaching the target.
inline constexpr int kLastEpoch = 1000;

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
  job["max_epochs"] = kLastEpoch;
  job["target_metric"] = TargetMetric(workload);
  job["higher_is_better_metric"] = true;
  return job;
}

// A report of `trial` (its hand-out body) after epoch `epoch` with cost so
// far `cost` (energy / 2 at eta 0.5 and time 0) and `metric`.
inline nlohmann::json EpochReport(const nlohmann::json& trial, int epoch, double cost,
                                  double metric) {
  nlohmann::json report = trial;
  report["time"] = 0.0;
  report["energy"] = 2.0 * cost;
  report["metric"] = metric;
  report["current_epoch"] = epoch;
  return report;
}

// A final report of `trial` with `cost`: the target at epoch 2, or 0 at
// kLastEpoch.
inline nlohmann::json FinalReport(const nlohmann::json& trial, double cost, bool reached,
                                  double target_metric) {
  return EpochReport(trial, reached ? 2 : kLastEpoch, cost, reached ? target_metric : 0.0);
}

// The optimizer state of job `job_id` as the server stored it.
inline StatusOr<nlohmann::json> StoredState(Store& store, const std::string& job_id) {
  nlohmann::json state;
  Status status = store.RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(std::optional<JobRecord> job, txn.GetJob(job_id));
    if (!job) return NotFoundError("job " + job_id + " is gone");
    state = nlohmann::json::parse(job->state_json);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return state;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_REPLAY_BODIES_H_
