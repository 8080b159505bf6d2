// Shared pieces of the server-versus-simulator equivalence tests
// (equivalence_test.cc, group_equivalence_test.cc,
// replica_equivalence_test.cc): recording the simulator's group hand-outs and
// observations, registering a job for a workload, the report bodies and
// early-stop probes they send, and the replay of a simulated run's learning
// curve as per-epoch reports. Failures are gtest expectations.

#ifndef ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
#define ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/optimizer/batch_size/progress_curve.h"
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
    // Observations: the plan as the simulation held the run to it (its
    // limits those in force when the run reported, or when a tighter bound
    // stopped it mid-run).
    RunPlan plan;
    RunOutcome outcome;  // Observations only.
    // Observations: the bounds the policy held the run to as it observed
    // it (CostLimitAtReport, ProgressLimitsAtReport), which the server
    // applies to the run's reports.
    std::optional<double> cost_limit_at_report;
    std::vector<ProgressPoint> progress_limits_at_report;
    // Observations: the simulation stopped the run mid-run when another
    // run's result tightened its bound past what it had spent
    // (GroupRunRecord::stopped_early; set by SimulateGroups).
    bool stopped_early = false;
    // Neither: the run passed its bound as a near miss and runs on
    // (Policy::RunOn); its observation comes later.
    bool run_on = false;
    // Observations: stopped early by a restart threshold
    // (GroupRunRecord::restarted; set by SimulateGroups).
    bool restarted = false;
    // Neither: a per-epoch report the run made in flight
    // (Policy::ReportProgress), its point `in_flight_index` of its curve;
    // its observation comes later, with its whole curve.
    std::optional<ProgressPoint> in_flight_point;
    size_t in_flight_index = 0;
    // Neither: bounds that changed under the run stopped it at its judgment
    // at cost `finish_cost`, where it finishes instead (Policy::Finish;
    // `finish_best` the point it was judged from); its observation comes
    // later.
    std::optional<ProgressPoint> finish_best;
    double finish_cost = 0.0;
  };

  explicit GroupRecordingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  RunPlan Next(int attempt) override {
    RunPlan plan = inner_->Next(attempt);
    Event event;
    event.plan = plan;
    events_.push_back(std::move(event));
    return plan;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    Event event;
    event.hand_out = false;
    event.plan = plan;
    event.outcome = outcome;
    event.cost_limit_at_report = inner_->CostLimitAtReport(plan);
    event.progress_limits_at_report = inner_->ProgressLimitsAtReport(plan);
    events_.push_back(std::move(event));
    return inner_->Observe(plan, outcome);
  }
  Status RunOn(const RunPlan& plan, double progress) override {
    Event event;
    event.hand_out = false;
    event.plan = plan;
    event.run_on = true;
    events_.push_back(std::move(event));
    return inner_->RunOn(plan, progress);
  }
  std::optional<double> RunOnLimitAtReport(const RunPlan& plan) const override {
    return inner_->RunOnLimitAtReport(plan);
  }
  std::optional<double> FinishLimitAtReport(const RunPlan& plan, const ProgressPoint& best,
                                            double cost) const override {
    return inner_->FinishLimitAtReport(plan, best, cost);
  }
  Status Finish(const RunPlan& plan, const ProgressPoint& best, double cost) override {
    Event event;
    event.hand_out = false;
    event.plan = plan;
    event.finish_best = best;
    event.finish_cost = cost;
    events_.push_back(std::move(event));
    return inner_->Finish(plan, best, cost);
  }
  std::optional<double> RestartThresholdAtReport(const RunPlan& plan) const override {
    return inner_->RestartThresholdAtReport(plan);
  }
  std::optional<double> CostLimitAtReport(const RunPlan& plan) const override {
    return inner_->CostLimitAtReport(plan);
  }
  std::vector<ProgressPoint> ProgressLimitsAtReport(const RunPlan& plan) const override {
    return inner_->ProgressLimitsAtReport(plan);
  }
  bool ReportsInFlight(const RunPlan& plan) const override { return inner_->ReportsInFlight(plan); }
  Status ReportProgress(const RunPlan& plan, const ProgressPoint& point) override {
    Event event;
    event.hand_out = false;
    event.plan = plan;
    event.in_flight_point = point;
    event.in_flight_index = in_flight_reports_[plan.run_id]++;
    events_.push_back(std::move(event));
    return inner_->ReportProgress(plan, point);
  }
  const std::vector<Event>& events() const { return events_; }
  std::vector<Event>& mutable_events() { return events_; }

 private:
  std::unique_ptr<Policy> inner_;
  std::vector<Event> events_;
  // In-flight reports so far, by run.
  std::map<int64_t, size_t> in_flight_reports_;
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
    StatusOr<std::vector<GroupRunRecord>> records =
        SimulateJobGroup(workload, policy, groups->begin()->second, options);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) return {};
    // The records are the observed runs that ran, in observation order.
    size_t next = 0;
    for (GroupRecordingPolicy::Event& event : policy.mutable_events()) {
      if (event.hand_out || event.run_on || event.in_flight_point || event.finish_best ||
          !event.outcome.ran) {
        continue;
      }
      EXPECT_LT(next, records->size());
      if (next >= records->size()) return {};
      const GroupRunRecord& record = (*records)[next++];
      EXPECT_EQ(record.run.batch_size, event.plan.batch_size);
      event.stopped_early = record.stopped_early;
      event.restarted = record.restarted;
    }
    EXPECT_EQ(next, records->size());
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
  // REQUIRES: ok() (for all three).
  const std::vector<Workload>& workloads() const { return workloads_; }
  TestClient& http() { return *client_; }
  Store& store() { return server_->store(); }

 private:
  TempDir dir_;
  std::string skip_reason_;
  std::vector<Workload> workloads_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<TestClient> client_;
};

// The target metric the tests register for `workload`: a run's progress
// (its milestones reached, plus one at the target; RunOutcome::progress) is
// the metric it reports, higher being better.
inline double TargetMetric(const Workload& workload) {
  return static_cast<double>(workload.milestones.size()) + 1.0;
}

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
  job["target_metric"] = TargetMetric(workload);
  job["higher_is_better_metric"] = true;
  return job;
}

// The epoch of a final report that ends a run at max_epochs
// (RegistrationBody).
inline constexpr int kLastEpoch = 1000;

// A report of the trial `trial` (its hand-out body) after epoch `epoch`,
// with cost so far `cost` (energy / 2 at eta 0.5 and time 0) and metric
// `metric`.
inline nlohmann::json EpochReport(const nlohmann::json& trial, int epoch, double cost,
                                  double metric) {
  nlohmann::json report = trial;
  report["time"] = 0.0;
  report["energy"] = 2.0 * cost;
  report["metric"] = metric;
  report["current_epoch"] = epoch;
  return report;
}

// A check-in of the trial `trial` (its hand-out body) with cost so far
// `cost` (energy / 2 at eta 0.5 and time 0): POST /report/progress.
inline nlohmann::json CheckIn(const nlohmann::json& trial, double cost) {
  nlohmann::json check_in = trial;
  check_in["time"] = 0.0;
  check_in["energy"] = 2.0 * cost;
  return check_in;
}

// A final report of the trial `trial` with `cost` and whether it `reached`
// the target `target_metric`: metric target_metric at epoch 2, or 0 at
// max_epochs.
inline nlohmann::json FinalReport(const nlohmann::json& trial, double cost, bool reached,
                                  double target_metric) {
  return EpochReport(trial, reached ? 2 : kLastEpoch, cost, reached ? target_metric : 0.0);
}

// The final report of a simulated outcome: a run that could not start costs
// 100 x its plan's limit.
inline nlohmann::json FinalReport(const nlohmann::json& trial, const RunPlan& plan,
                                  const RunOutcome& outcome, double target_metric) {
  double cost = outcome.cost;
  if (!outcome.ran) cost = 100.0 * plan.cost_limit.value_or(0.0);
  return FinalReport(trial, cost, outcome.reached, target_metric);
}

// Reports the trial `trial` at its plan's cost limit, when it has one, and
// expects the server not to stop it. Returns the answer, or nothing when the
// plan has no positive limit or records its learning curve.
//
// Only for plans that do not record their curve: under frugal and swarm a
// report is a point of the trial's learning curve at the server, and this
// one, at the whole bound before the run's first epoch, would be a point no
// later report could go below (costs are cumulative, so the server leaves
// every later point out of the curve): the trial's curve would no longer be
// the simulator's (a reference cut short, curve stops decided at progress
// 0). ReplayRun probes a failed run of those plans at the bound in force at
// its last progress instead, and ExpectServerBounds compares the bounds of
// every one.
inline std::optional<HttpReply> ProbeAtBound(TestClient& client, const nlohmann::json& trial,
                                             const RunPlan& plan) {
  if (plan.record_progress) return std::nullopt;
  if (!plan.cost_limit.has_value() || *plan.cost_limit <= 0) return std::nullopt;
  HttpReply at_bound =
      Send(client, "POST", "/report", EpochReport(trial, 1, *plan.cost_limit, 0.0).dump());
  EXPECT_EQ(at_bound.status, 200) << at_bound.raw;
  EXPECT_EQ(at_bound.body["stop_train"], false) << at_bound.raw;
  return at_bound;
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

// Expects the server's stored optimizer of job `job_id` to hold in-flight
// trial `trial_number` to the bounds the simulator's policy holds the run
// to: `cost_limit` (the whole bound) and `progress_limits` (the learning
// curve's part). Exactly: both sides compute them with the same code from
// the same state. For runs that record their curve, which ProbeAtBound
// cannot probe at their hand-out (ReplayRun probes a failed one where it
// ends).
inline void ExpectServerBounds(Store& store, const std::string& job_id, int64_t trial_number,
                               const std::optional<double>& cost_limit,
                               const std::vector<ProgressPoint>& progress_limits) {
  StatusOr<nlohmann::json> state = StoredState(store, job_id);
  EXPECT_TRUE(state.ok()) << state.status();
  if (!state.ok()) return;
  StatusOr<BatchSizeOptimizer> optimizer = BatchSizeOptimizer::FromJson(*state);
  EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  if (!optimizer.ok()) return;
  EXPECT_EQ(optimizer->EarlyStopThreshold(trial_number), cost_limit);
  EXPECT_EQ(optimizer->ProgressLimits(trial_number), progress_limits)
      << "server: " << ProgressToJson(optimizer->ProgressLimits(trial_number)).dump()
      << "; simulator: " << ProgressToJson(progress_limits).dump();
}

// A simulated run with a learning curve (RunOutcome::progress not empty), as
// the server sees it when the run reports.
struct SimulatedRun {
  const RunPlan* plan = nullptr;
  const RunOutcome* outcome = nullptr;
  // The bounds in force at the run's report (Policy::CostLimitAtReport and
  // ProgressLimitsAtReport as the policy observed it).
  std::optional<double> cost_limit;
  std::vector<ProgressPoint> progress_limits;
  // Stopped mid-run by a bound that tightened while it ran (group
  // simulation): its points before the stop were reported under the looser
  // bounds of their time, so only its last point is replayed.
  bool stopped_early = false;
  // Its first points already replayed at its hand-out (ReplayEarlyPoints):
  // how many, skipped here.
  int replayed_early = 0;
  // Stopped mid-run below a restart threshold (also stopped_early): its last
  // point, below the threshold, must stop it with the restart message.
  bool restarted = false;
};

// The points of observed run `observed` that the group simulation judged
// under the curve limits of earlier reports: those at most its
// plan.progress_limits_from_cost (a report of another run changed its curve
// limits while it ran), never the point that ended it (every point of a run
// a check-in ended is a report).
inline size_t EarlyPoints(const RunPlan& observed_plan, const RunOutcome& outcome) {
  if (outcome.progress.empty()) return 0;
  const size_t reports = outcome.progress.size() - (outcome.stopped_at_check_in ? 0 : 1);
  size_t n = 0;
  while (n < reports && outcome.progress[n].cost <= observed_plan.progress_limits_from_cost) {
    ++n;
  }
  return n;
}

// The observation of run `run_id` among the simulation's `events`, or
// events.end().
inline std::vector<GroupRecordingPolicy::Event>::const_iterator ObservationOf(
    int64_t run_id, const std::vector<GroupRecordingPolicy::Event>& events) {
  return std::find_if(events.begin(), events.end(), [&](const auto& event) {
    return !event.hand_out && !event.run_on && !event.in_flight_point && !event.finish_best &&
           event.plan.run_id == run_id;
  });
}

// The index of the first point run `run_id` reported in flight among the
// simulation's `events` (GroupRecordingPolicy::Event::in_flight_point), or
// nullopt when it reported none.
inline std::optional<size_t> FirstInFlightPoint(
    int64_t run_id, const std::vector<GroupRecordingPolicy::Event>& events) {
  auto first = std::find_if(events.begin(), events.end(), [&](const auto& event) {
    return event.in_flight_point.has_value() && event.plan.run_id == run_id;
  });
  if (first == events.end()) return std::nullopt;
  return first->in_flight_index;
}

// Sends point `i` of a run's curve as epoch i + 1 of trial `trial` (its
// hand-out body), which must keep the run going; returns the answer.
inline HttpReply SendPointThatKeepsGoing(TestClient& client, const nlohmann::json& trial, size_t i,
                                         const ProgressPoint& point) {
  const HttpReply answer =
      Send(client, "POST", "/report",
           EpochReport(trial, static_cast<int>(i) + 1, point.cost, point.progress).dump());
  EXPECT_EQ(answer.status, 200) << answer.raw;
  EXPECT_EQ(answer.body["stop_train"], false) << answer.raw;
  return answer;
}

// Replays, right after the hand-out of trial `trial` (its hand-out body;
// `handed_out` the policy's hand-out event, `events` the simulation's), the
// first EarlyPoints of the trial's later observation as epochs 1, 2, ...:
// the simulation judged them before other reports changed the run's curve
// limits, so the server must judge them before those reports too; and every
// report of a run stopped mid-run at a check-in (the server judges the
// check-in at the progress they tell). Each must lie within the hand-out's
// bounds and keep the run going. Returns how many it sent (none for a run
// without a curve or one stopped mid-run at a report).
inline int ReplayEarlyPoints(TestClient& client, const nlohmann::json& trial,
                             const GroupRecordingPolicy::Event& handed_out,
                             const std::vector<GroupRecordingPolicy::Event>& events) {
  if (!handed_out.plan.record_progress) return 0;
  auto observed = ObservationOf(handed_out.plan.run_id, events);
  if (observed == events.end()) return 0;
  const RunOutcome& outcome = observed->outcome;
  if (observed->stopped_early && !outcome.stopped_at_check_in) return 0;
  size_t n =
      observed->stopped_early ? outcome.progress.size() : EarlyPoints(observed->plan, outcome);
  // (Points it reported in flight are sent at their own events.)
  if (const std::optional<size_t> in_flight = FirstInFlightPoint(handed_out.plan.run_id, events)) {
    n = std::min(n, *in_flight);
  }
  for (size_t i = 0; i < n; ++i) {
    const ProgressPoint& point = outcome.progress[i];
    SCOPED_TRACE("early point " + std::to_string(i) + " cost " + std::to_string(point.cost));
    const std::optional<double> at =
        ProgressBound(handed_out.plan.progress_limits, point.progress, 1.0);
    EXPECT_TRUE(!at || point.cost <= *at) << "an early point passes the hand-out's curve bound";
    SendPointThatKeepsGoing(client, trial, i, point);
  }
  return static_cast<int>(n);
}

// Replays in-flight report `report` (GroupRecordingPolicy::Event::
// in_flight_point) of trial `trial` (its hand-out body) as its epoch, unless
// it is among the `*sent` points replayed already; the server must keep the
// run going. Updates `*sent`.
inline void ReplayInFlightPoint(TestClient& client, const nlohmann::json& trial,
                                const GroupRecordingPolicy::Event& report, int* sent) {
  if (report.in_flight_index < static_cast<size_t>(*sent)) return;
  SCOPED_TRACE("in-flight point " + std::to_string(report.in_flight_index));
  SendPointThatKeepsGoing(client, trial, report.in_flight_index, *report.in_flight_point);
  *sent = static_cast<int>(report.in_flight_index) + 1;
}

// Whether `outcome` ran on at its last point: the server runs it on and
// ends it in that one report (ReplayUntilRunOn leaves it to ReplayRun).
inline bool RanOnAtItsEnd(const RunOutcome& outcome) {
  return outcome.ran_on.has_value() && !outcome.progress.empty() &&
         outcome.progress.back().cost <= outcome.ran_on->at.cost;
}

// Replays, at the run-on event `run_on` of trial `trial` (its hand-out body;
// `events` the simulation's), the trial's points after the `sent` already
// replayed up to the epoch at which it passed its bound as a near miss
// (RunOutcome::ran_on of its observation): the server must keep every one
// going and answer the last with the near-miss message, before any later
// hand-out or report. When that epoch is the run's last, the simulation
// observes the run right after, and ReplayRun sends it: the server runs it
// on and ends it in one report. Returns how many points have been sent.
inline int ReplayUntilRunOn(TestClient& client, const nlohmann::json& trial,
                            const GroupRecordingPolicy::Event& run_on,
                            const std::vector<GroupRecordingPolicy::Event>& events, int sent,
                            int* ran_on) {
  auto observed = ObservationOf(run_on.plan.run_id, events);
  EXPECT_NE(observed, events.end()) << "a run that ran on was never observed";
  if (observed == events.end()) return sent;
  const RunOutcome& outcome = observed->outcome;
  EXPECT_TRUE(outcome.ran_on.has_value()) << "the observation of a run that ran on lost it";
  if (!outcome.ran_on.has_value()) return sent;
  ++*ran_on;
  size_t i = static_cast<size_t>(sent);
  for (; i + 1 < outcome.progress.size() && outcome.progress[i].cost <= outcome.ran_on->at.cost;
       ++i) {
    const ProgressPoint& point = outcome.progress[i];
    SCOPED_TRACE("point " + std::to_string(i) + " cost " + std::to_string(point.cost));
    const HttpReply answer = SendPointThatKeepsGoing(client, trial, i, point);
    if (point.cost == outcome.ran_on->at.cost) {
      EXPECT_NE(answer.body.value("message", "").find("as a near miss"), std::string::npos)
          << answer.raw;
    }
  }
  return static_cast<int>(i);
}

// Replays, at the event `finish` of trial `trial` (its hand-out body;
// `events` the simulation's) where bounds that changed under it stopped it
// and it finishes instead (Policy::Finish), the judgment at which it did:
// the report of its point at finish.finish_cost, or else a check-in at that
// cost (after any of its points before it not replayed yet, of which
// `sent` were): the server must keep it going and say it finishes. Returns
// how many points have been sent.
inline int ReplayFinish(TestClient& client, const nlohmann::json& trial,
                        const GroupRecordingPolicy::Event& finish,
                        const std::vector<GroupRecordingPolicy::Event>& events, int sent,
                        int* finished) {
  auto observed = ObservationOf(finish.plan.run_id, events);
  EXPECT_NE(observed, events.end()) << "a run that finishes was never observed";
  if (observed == events.end()) return sent;
  const std::vector<ProgressPoint>& curve = observed->outcome.progress;
  const double cost = finish.finish_cost;
  size_t i = static_cast<size_t>(sent);
  for (; i < curve.size() && curve[i].cost < cost * (1.0 - 1e-9); ++i) {
    SCOPED_TRACE("point " + std::to_string(i) + " before the judgment");
    SendPointThatKeepsGoing(client, trial, i, curve[i]);
  }
  HttpReply answer;
  if (i < curve.size() && curve[i].cost <= cost * (1.0 + 1e-9)) {
    answer = SendPointThatKeepsGoing(client, trial, i, curve[i]);
    ++i;
  } else {
    answer = Send(client, "POST", "/report/progress", CheckIn(trial, cost).dump());
    EXPECT_EQ(answer.status, 200) << answer.raw;
    EXPECT_EQ(answer.body["stop_train"], false) << answer.raw;
  }
  EXPECT_NE(answer.body.value("message", "").find("it finishes"), std::string::npos) << answer.raw;
  ++*finished;
  return static_cast<int>(i);
}

// The run of observation `observed` as ReplayRun replays it, its first
// `replayed_early` points already sent at its hand-out.
inline SimulatedRun SimulatedRunOf(const GroupRecordingPolicy::Event& observed,
                                   int replayed_early) {
  return SimulatedRun{&observed.plan,
                      &observed.outcome,
                      observed.cost_limit_at_report,
                      observed.progress_limits_at_report,
                      observed.stopped_early,
                      replayed_early,
                      observed.restarted};
}

// What replaying learning curves exercised.
struct CurveReplayStats {
  // Runs replayed as their curve, and the reports that took.
  int runs = 0;
  int reports = 0;
  // Failed runs the server stopped on the learning curve ("learning slower
  // than the run of the lowest cost"), as the simulator did.
  int curve_stops = 0;
  // Failed runs the server stopped at the whole bound ("exceeded the cost
  // upper bound"): at the report or check-in past it, or, in groups, at the
  // first after their bound tightened.
  int bound_stops = 0;
  // Of curve_stops and bound_stops, runs the group simulation stopped
  // mid-run when their bound tightened.
  int stopped_early = 0;
  // Failed runs the server ended at max_epochs: out of epochs within their
  // bounds.
  int ran_out = 0;
  // Probes at exactly the bound in force at a failed run's last progress
  // that the server let go on: a curve's bound, or the whole bound.
  int curve_probes = 0;
  int bound_probes = 0;
  // Runs the group simulation stopped mid-run although, at their last
  // point, the server would not stop them (replayed as ending at
  // max_epochs): see group_equivalence_test.cc.
  int stopped_early_within_bound = 0;
  // Runs whose first points were replayed at their hand-out, before a report
  // changed their curve limits (ReplayEarlyPoints).
  int replayed_early = 0;
  // Runs that passed their bound as a near miss and ran on (RunOutcome::
  // ran_on), the server agreeing.
  int ran_on = 0;
  // Runs that bounds changed under stopped and that finished instead
  // (Policy::Finish), the server agreeing.
  int finished = 0;
  // Concurrent runs the server stopped below their restart threshold, as
  // the group simulation did.
  int restarts = 0;
  // Runs the simulation stopped at a check-in, replayed as one (POST
  // /report/progress): past their whole bound, restarted, or a tightened
  // bound.
  int check_in_stops = 0;
};

// Replays `run` to the server as the per-epoch reports of the trial `trial`
// (its hand-out body), report i to clients[(first_client + i) % size]: one
// report per point of its curve, epochs 1, 2, ..., cost so far = energy / 2
// (eta 0.5, time 0) and metric = progress. Every report but the last must
// keep the run going. The last ends it:
// - the target reached: converged;
// - its cost past the bound in force at its progress (the whole bound, or
//   ProgressBound of the curve limits where lower): stopped there, on the
//   curve or at the whole bound as the message must say, not converged;
//   a run the simulation stopped at a check-in (RunOutcome::
//   stopped_at_check_in) ends with a check-in at its cost instead, after
//   every point as a report: held to the same bound at its last reported
//   progress (kNoProgress before any), which the server applies only
//   before the first report or once the curve changed since the last
//   (the simulation stops a run there only then, or at the whole bound or
//   its restart threshold);
// - otherwise (out of epochs within its bounds): reported at max_epochs,
//   not converged.
// A failed run is probed first at exactly the bound in force at its last
// progress (by a check-in for one a check-in stopped), which must not
// stop it: at the progress of its last point, so the curve the server
// keeps of it ends at the simulator's (a failed run's curve counts only
// through its last progress; a run that reached the target, whose curve
// may become the reference, is not probed). Returns the answers in order.
inline std::vector<HttpReply> ReplayRun(const std::vector<TestClient*>& clients,
                                        size_t first_client, const nlohmann::json& trial,
                                        const SimulatedRun& run, double target_metric,
                                        CurveReplayStats* stats) {
  std::vector<HttpReply> answers;
  const RunOutcome& outcome = *run.outcome;
  const bool by_check_in = outcome.stopped_at_check_in;
  EXPECT_TRUE(by_check_in || !outcome.progress.empty());
  EXPECT_TRUE(outcome.ran);
  if ((!by_check_in && outcome.progress.empty()) || !outcome.ran) return answers;
  ++stats->runs;
  // Where it ended: its last report, or the check-in that stopped it.
  const ProgressPoint last = {
      by_check_in ? outcome.cost : outcome.progress.back().cost,
      outcome.progress.empty() ? kNoProgress : outcome.progress.back().progress};
  const size_t reports = outcome.progress.size() - (by_check_in ? 0 : 1);
  // The bound the server holds the run to at its last progress.
  const std::optional<double> curve = ProgressBound(run.progress_limits, last.progress, 1.0);
  const bool curve_binds = curve.has_value() && (!run.cost_limit || *curve < *run.cost_limit);
  const std::optional<double> bound = curve_binds ? curve : run.cost_limit;
  const bool stops_here = !outcome.reached && bound.has_value() && last.cost > *bound;
  // What this relies on: a run reaches the target at its last point,
  // within its whole bound (the exact rule); a run not stopped mid-run by a
  // tightened bound stays within its bounds up to its last point (checked
  // below), and only a curve may stop it there.
  EXPECT_EQ(outcome.reached, !by_check_in && last.progress >= target_metric);
  EXPECT_TRUE(!outcome.reached || !run.cost_limit || last.cost <= *run.cost_limit)
      << "cost " << last.cost << " reached the target past its bound "
      << run.cost_limit.value_or(-1.0);
  if (by_check_in) ++stats->check_in_stops;
  if (run.stopped_early && !stops_here && !run.restarted) ++stats->stopped_early_within_bound;

  size_t next_client = first_client;
  int epoch = run.replayed_early;
  auto send = [&](int at, double cost, double metric) {
    ++stats->reports;
    TestClient& client = *clients[next_client++ % clients.size()];
    answers.push_back(Send(client, "POST", "/report", EpochReport(trial, at, cost, metric).dump()));
    EXPECT_EQ(answers.back().status, 200) << answers.back().raw;
    return answers.back();
  };
  // The last point, or a probe, at a check-in when the run stopped at one,
  // else as the report after epoch `at`.
  auto send_last = [&](int at, double cost, double metric) {
    if (!by_check_in) return send(at, cost, metric);
    ++stats->reports;
    TestClient& client = *clients[next_client++ % clients.size()];
    answers.push_back(Send(client, "POST", "/report/progress", CheckIn(trial, cost).dump()));
    EXPECT_EQ(answers.back().status, 200) << answers.back().raw;
    return answers.back();
  };
  if (!run.stopped_early) {
    for (size_t i = static_cast<size_t>(run.replayed_early); i < reports; ++i) {
      const ProgressPoint& point = outcome.progress[i];
      SCOPED_TRACE("point " + std::to_string(i) + " cost " + std::to_string(point.cost) +
                   " progress " + std::to_string(point.progress));
      const std::optional<double> at = ProgressBound(run.progress_limits, point.progress, 1.0);
      EXPECT_TRUE(!at || point.cost <= *at) << "the simulator let the run pass its curve bound";
      EXPECT_TRUE(!run.cost_limit || point.cost <= *run.cost_limit)
          << "the simulator let the run pass its bound";
      const HttpReply answer = send(++epoch, point.cost, point.progress);
      EXPECT_EQ(answer.body["stop_train"], false) << answer.raw;
      if (answer.body["stop_train"] != false) return answers;
    }
  }
  if (run.restarted) {
    // Below its restart threshold, within every bound.
    EXPECT_FALSE(outcome.reached);
    EXPECT_TRUE(!bound || last.cost <= *bound) << "restarted past its bound " << *bound;
    const HttpReply answer = send_last(++epoch, last.cost, last.progress);
    EXPECT_EQ(answer.body["stop_train"], true) << answer.raw;
    EXPECT_EQ(answer.body["converged"], false) << answer.raw;
    EXPECT_NE(answer.body.value("message", "").find("restart the submission"), std::string::npos)
        << answer.raw;
    ++stats->restarts;
    return answers;
  }
  const std::optional<double> probe = bound;
  if (!outcome.reached && probe.has_value()) {
    SCOPED_TRACE("probe at the bound " + std::to_string(*probe) + " at progress " +
                 std::to_string(last.progress));
    const HttpReply answer = send_last(++epoch, *probe, last.progress);
    EXPECT_EQ(answer.body["stop_train"], false) << answer.raw;
    if (answer.body["stop_train"] != false) return answers;
    ++(curve_binds ? stats->curve_probes : stats->bound_probes);
  }
  const bool ends_at_max = !outcome.reached && !stops_here;
  EXPECT_TRUE(!by_check_in || !ends_at_max || run.stopped_early)
      << "a check-in stopped it within its bound " << run.cost_limit.value_or(-1.0);
  const HttpReply answer = ends_at_max ? send(kLastEpoch, last.cost, last.progress)
                                       : send_last(++epoch, last.cost, last.progress);
  const std::string message = answer.body.value("message", "");
  EXPECT_EQ(answer.body["stop_train"], true) << answer.raw;
  EXPECT_EQ(answer.body["converged"], outcome.reached) << answer.raw;
  if (outcome.reached) {
    EXPECT_NE(message.find("Train succeeded"), std::string::npos) << answer.raw;
  } else if (ends_at_max) {
    EXPECT_NE(message.find("failed to converge"), std::string::npos) << answer.raw;
    ++stats->ran_out;
  } else {
    // Past its whole bound too at a check-in after reports, it may be
    // either: the server names the curve where it judged it.
    const bool on_curve = curve_binds && (!by_check_in || outcome.progress.empty() ||
                                          !run.cost_limit || last.cost <= *run.cost_limit);
    const bool either = curve_binds && !on_curve;
    const bool slower =
        message.find("learning slower than the run of the lowest cost") != std::string::npos;
    const bool exceeded = message.find("exceeded the cost upper bound") != std::string::npos;
    EXPECT_TRUE(on_curve ? slower : (exceeded || (either && slower))) << answer.raw;
    ++(slower ? stats->curve_stops : stats->bound_stops);
    if (run.stopped_early) ++stats->stopped_early;
  }
  return answers;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_EQUIVALENCE_UTIL_H_
