// The server hands out and judges as the simulator does: a group simulation
// of frugal or swarm is recorded (hand-outs and every judgment, with the
// optimizer's verdict) and replayed against `zeus serve` over HTTP, one
// request per recorded event; every answer must match. Both sides call the
// same BatchSizePolicy::Judge: this checks the plumbing (the wire, the
// store, costs and metrics), not a copy of the rules.

#ifndef ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
#define ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/policy.h"

#include "tests/server/replay_bodies.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {

// Forwards to a policy and records its hand-outs and judgments in order.
class TranscriptPolicy final : public Policy {
 public:
  struct Event {
    RunPlan plan;
    bool hand_out = false;
    // A hand-out: which try of its submission.
    int attempt = 1;
    // A judgment: the observation, its report's epoch, and the verdict.
    Observation observation;
    int epoch = 0;
    Verdict verdict;
  };

  explicit TranscriptPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  RunPlan Next(int attempt) override {
    RunPlan plan = inner_->Next(attempt);
    events_.push_back({plan, true, attempt, {}, 0, {}});
    return plan;
  }
  StatusOr<Verdict> Judge(const RunPlan& plan, const Observation& observation) override {
    StatusOr<Verdict> verdict = inner_->Judge(plan, observation);
    if (!verdict.ok()) return verdict;
    const int epoch = observation.check_in ? 0 : ++reports_[plan.run_id];
    events_.push_back({plan, false, 1, observation, epoch, *verdict});
    return verdict;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    return inner_->Observe(plan, outcome);
  }
  const std::vector<Event>& events() const { return events_; }

 private:
  std::unique_ptr<Policy> inner_;
  std::map<int64_t, int> reports_;
  std::vector<Event> events_;
};

struct SimulatedJob {
  const Workload* workload = nullptr;
  std::vector<TranscriptPolicy::Event> events;
};

// One heavily overlapping group (about four submissions in flight) per
// workload under `policy_name` and `seed`, recorded.
inline std::vector<SimulatedJob> SimulateGroups(const std::vector<Workload>& workloads,
                                                const std::string& policy_name, uint64_t seed) {
  std::vector<SimulatedJob> jobs;
  for (const Workload& workload : workloads) {
    SimulationOptions options;
    options.seed = seed;
    PolicyContext context = options.ContextFor(workload);
    StatusOr<std::unique_ptr<Policy>> inner = MakePolicy(policy_name, context);
    EXPECT_TRUE(inner.ok()) << inner.status();
    if (!inner.ok()) return {};
    TranscriptPolicy policy(std::move(*inner));
    std::vector<JobSubmission> submissions;
    for (int i = 0; i < 40; ++i) {
      submissions.push_back({"g", i * 1500.0, i * 1500.0 + 6000.0, workload.job.dataset, 1.0});
    }
    StatusOr<std::vector<GroupRunRecord>> records =
        SimulateJobGroup(workload, policy, submissions, options);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) return {};
    jobs.push_back({&workload, policy.events()});
  }
  return jobs;
}

// What the server answered, in event order, each job's final arms, and what
// the sequence exercised.
struct Transcript {
  std::vector<nlohmann::json> answers;
  std::vector<nlohmann::json> arms;
  int check_ins = 0;
  int stops = 0;
  int restarts = 0;
  int runs_on = 0;
  int finishes = 0;
  int cross_replica = 0;
  size_t max_in_flight = 0;
};

// Replays `jobs` through `clients` (event i of a job to client i %
// clients.size()) and expects every answer to be the simulator's.
inline Transcript Replay(const std::vector<SimulatedJob>& jobs, const std::string& policy_name,
                         uint64_t seed, const std::vector<TestClient*>& clients) {
  Transcript transcript;
  for (const SimulatedJob& job : jobs) {
    const std::string job_id = "eq-" + policy_name + "-" + job.workload->job.dataset;
    const HttpReply registered =
        Send(*clients[0], "POST", "/jobs",
             RegistrationBody(job_id, "eq", policy_name, *job.workload, seed).dump());
    EXPECT_EQ(registered.status, 201) << registered.raw;
    if (registered.status != 201) return transcript;
    const double target = TargetMetric(*job.workload);
    std::map<int64_t, nlohmann::json> trials;
    std::map<int64_t, size_t> handed_by;
    std::map<int64_t, size_t> last_judgment;
    for (size_t i = 0; i < job.events.size(); ++i) {
      if (!job.events[i].hand_out) last_judgment[job.events[i].plan.run_id] = i;
    }
    for (size_t i = 0; i < job.events.size(); ++i) {
      const TranscriptPolicy::Event& event = job.events[i];
      SCOPED_TRACE(job_id + " event " + std::to_string(i));
      const size_t replica = i % clients.size();
      TestClient& client = *clients[replica];
      if (event.hand_out) {
        const HttpReply trial =
            Send(client, "GET",
                 "/jobs/batch_size?job_id=" + job_id + "&attempt=" + std::to_string(event.attempt));
        EXPECT_EQ(trial.status, 200) << trial.raw;
        EXPECT_EQ(trial.body["batch_size"], event.plan.batch_size) << trial.raw;
        EXPECT_EQ(trial.body["trial_number"], event.plan.run_id) << trial.raw;
        if (trial.status != 200 || trial.body["batch_size"] != event.plan.batch_size) {
          return transcript;
        }
        transcript.answers.push_back(trial.body);
        trials[event.plan.run_id] = trial.body;
        handed_by[event.plan.run_id] = replica;
        transcript.max_in_flight = std::max(transcript.max_in_flight, trials.size());
        continue;
      }
      auto it = trials.find(event.plan.run_id);
      if (it == trials.end()) {
        ADD_FAILURE() << "a judgment of trial " << event.plan.run_id << " never handed out";
        return transcript;
      }
      transcript.cross_replica += handed_by[event.plan.run_id] != replica;
      const Observation& o = event.observation;
      const bool stops = event.verdict.stops();
      // A report that ends the run at its last epoch without the target.
      const bool last =
          !o.check_in && !stops && !o.reached_target && last_judgment[event.plan.run_id] == i;
      HttpReply answer;
      if (o.check_in) {
        nlohmann::json check_in = it->second;
        check_in["time"] = 0.0;
        check_in["energy"] = 2.0 * o.cost;
        answer = Send(client, "POST", "/report/progress", check_in.dump());
        ++transcript.check_ins;
      } else {
        const double metric = o.progress.value_or(o.reached_target ? target : 0.0);
        answer =
            Send(client, "POST", "/report",
                 EpochReport(it->second, last ? kLastEpoch : event.epoch, o.cost, metric).dump());
      }
      EXPECT_EQ(answer.status, 200) << answer.raw;
      const bool ended = stops || o.reached_target || last;
      EXPECT_EQ(answer.body["stop_train"], ended) << answer.raw;
      EXPECT_EQ(answer.body["converged"], o.reached_target && !stops) << answer.raw;
      if (answer.status != 200 || answer.body["stop_train"] != ended) return transcript;
      transcript.answers.push_back(answer.body);
      transcript.stops += event.verdict.action == Verdict::Action::kStop;
      transcript.restarts += event.verdict.action == Verdict::Action::kRestart;
      transcript.runs_on += event.verdict.ran_on_to.has_value();
      transcript.finishes += event.verdict.finishes_under.has_value();
      if (ended) trials.erase(it);
    }
    EXPECT_TRUE(trials.empty());
    const HttpReply arms = Send(*clients.back(), "GET", "/jobs/arms?job_id=" + job_id);
    EXPECT_EQ(arms.status, 200) << arms.raw;
    transcript.arms.push_back(arms.body);
  }
  return transcript;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
