// Concurrent submissions through HTTP: a job registered with policy `swarm`
// (or `frugal`) hands out the same batch sizes as the simulator's group
// simulation with that seed, when both see the same run outcomes in the same
// order: several trials in flight at once, reported out of order (overlapping
// generated job groups on the paper's A40 traces, retries included), with
// the same early-stop bounds for each trial: each run reports its learning
// curve epoch by epoch (the traces' milestones as the metric), and the
// server stops a probe that learns slower than the run of the lowest cost
// where the simulator did.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/equivalence_util.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

struct Compared {
  // Events (hand-outs and reports) the server and the simulator agreed on.
  int events = 0;
  // Reports that arrived while an earlier-handed trial was still in flight.
  int out_of_order = 0;
  // Per-epoch reports replayed as they happened (the provisional reference
  // of swarm's first wave).
  int in_flight_reports = 0;
  // Most trials in flight at once.
  size_t max_in_flight = 0;
  // Trials handed out at another size than the default before the job's
  // first report (swarm's first wave of speculative trials).
  int first_wave_probes = 0;
  // Concurrent trials handed out at a size other than the default that no
  // run had reached the target at: they followed a probe in flight that
  // learned faster than the reference (swarm's ConcurrentSize).
  int followed_probes = 0;
  // Trials the simulator stopped mid-run, when a report tightened their
  // bound below what they had already spent; the server stopped each at
  // that cost (runs without a curve; curves.stopped_early for the others).
  int stopped_mid_run = 0;
  // Runs replayed as their learning curve.
  CurveReplayStats curves;
};

Compared CompareGroupsWithSimulator(const std::string& policy_name, uint64_t seed) {
  Compared compared;
  SqliteServerWithWorkloads setup;
  if (!setup.ok()) return compared;
  TestClient& client = setup.http();

  const std::vector<SimulatedJob> jobs = SimulateGroups(setup.workloads(), policy_name, seed);
  for (const SimulatedJob& simulated : jobs) {
    const Workload& workload = *simulated.workload;
    const std::string job_id = "grp-" + policy_name + "-" + workload.job.dataset;
    const HttpReply registered =
        Send(client, "POST", "/jobs",
             RegistrationBody(job_id, "grp", policy_name, workload, seed).dump());
    EXPECT_EQ(registered.status, 201) << registered.raw;
    if (registered.status != 201) return compared;

    std::map<int64_t, json> trials;  // The server's trial bodies by trial number.
    std::map<int64_t, int> early;    // Points replayed at hand-out, by trial number.
    std::set<int> reached_sizes;     // Sizes a reported run reached the target at.
    int event_number = 0;
    bool reported = false;
    for (const GroupRecordingPolicy::Event& event : simulated.events) {
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
        if (!reported && event.plan.batch_size != workload.default_batch_size) {
          ++compared.first_wave_probes;
        }
        if (event.plan.kind == "concurrent" &&
            event.plan.batch_size != workload.default_batch_size &&
            reached_sizes.count(event.plan.batch_size) == 0) {
          ++compared.followed_probes;
        }
        compared.max_in_flight = std::max(compared.max_in_flight, trials.size());
        // The server's bounds for this trial are the simulator's: a report
        // at the cost limit does not stop a run without a curve; the stored
        // bounds of a run with one are the plan's.
        ProbeAtBound(client, trial.body, event.plan);
        if (event.plan.record_progress) {
          ExpectServerBounds(setup.store(), job_id, event.plan.run_id, event.plan.cost_limit,
                             event.plan.progress_limits);
          // Epochs it ran before a report changed its curve limits.
          early[event.plan.run_id] = ReplayEarlyPoints(client, trial.body, event, simulated.events);
          compared.curves.replayed_early += early[event.plan.run_id] > 0;
        }
        ++compared.events;
        continue;
      }
      auto it = trials.find(event.plan.run_id);
      EXPECT_NE(it, trials.end()) << "report of a trial never handed out";
      if (it == trials.end()) return compared;
      if (event.in_flight_point) {
        // A report of its epoch as it happened: it bounds other runs from
        // now on (swarm's provisional reference).
        ReplayInFlightPoint(client, it->second, event, &early[event.plan.run_id]);
        if (::testing::Test::HasFailure()) return compared;
        ++compared.in_flight_reports;
        continue;
      }
      if (event.run_on) {
        // Its epochs up to the one that passed its bound as a near miss: the
        // server runs it on there, before anything the simulation did later.
        early[event.plan.run_id] =
            ReplayUntilRunOn(client, it->second, event, simulated.events, early[event.plan.run_id],
                             &compared.curves.ran_on);
        if (::testing::Test::HasFailure()) return compared;
        ++compared.events;
        continue;
      }
      if (event.finish_best) {
        // The judgment at which bounds that changed under it stopped it: the
        // server lets it finish there, before anything the simulation did
        // later.
        early[event.plan.run_id] =
            ReplayFinish(client, it->second, event, simulated.events, early[event.plan.run_id],
                         &compared.curves.finished);
        if (::testing::Test::HasFailure()) return compared;
        ++compared.events;
        continue;
      }
      if (it != trials.begin()) ++compared.out_of_order;
      if (event.outcome.reached) reached_sizes.insert(event.plan.batch_size);
      // The bounds the server holds a run with a curve to now are those the
      // policy held it to as it observed it (for a run that ran on at its
      // last report, once the server has that report).
      if (event.plan.record_progress && !RanOnAtItsEnd(event.outcome)) {
        ExpectServerBounds(setup.store(), job_id, event.plan.run_id, event.cost_limit_at_report,
                           event.progress_limits_at_report);
      }
      const double target = TargetMetric(workload);
      if (!event.outcome.progress.empty() || event.outcome.stopped_at_check_in) {
        // The run's learning curve, epoch by epoch, held to the bounds in
        // force when it reported: the server must stop it where the
        // simulator did.
        ReplayRun({&client}, 0, it->second, SimulatedRunOf(event, early[event.plan.run_id]), target,
                  &compared.curves);
        if (::testing::Test::HasFailure()) return compared;
        trials.erase(it);
        reported = true;
        ++compared.events;
        continue;
      }
      // The outcome the policy observed, held to the bound in force when it
      // reported (replayed by the simulator when that bound had tightened),
      // as a final report: cost = energy (eta 0.5, time 0). A run that could
      // not start costs 100 x limit. A run the simulator stopped mid-run
      // (what it had spent already past its tightened bound) is a mid-run
      // report of what it spent: the server must stop it there, charging
      // that, and then hand out what the simulator handed out.
      json report = FinalReport(it->second, event.plan, event.outcome, target);
      const bool stopped_mid_run = event.outcome.ran && !event.outcome.reached &&
                                   event.plan.cost_limit.has_value() &&
                                   event.outcome.cost > *event.plan.cost_limit;
      if (stopped_mid_run) {
        report["current_epoch"] = 2;  // After the hand-out's probe (epoch 1).
        report["metric"] = 0.0;
        ++compared.stopped_mid_run;
      }
      HttpReply answer = Send(client, "POST", "/report", report.dump());
      EXPECT_EQ(answer.status, 200) << answer.raw;
      EXPECT_EQ(answer.body["stop_train"], true) << answer.raw;
      EXPECT_EQ(answer.body["converged"], event.outcome.reached)
          << answer.raw << " (simulated bound " << event.plan.cost_limit.value_or(-1.0) << ")";
      if (answer.status != 200 || answer.body["converged"] != event.outcome.reached) {
        return compared;
      }
      trials.erase(it);
      reported = true;
      ++compared.events;
    }
    EXPECT_TRUE(trials.empty());
  }
  return compared;
}

// Expects the replay to have held runs to their learning curves: runs
// reported epoch by epoch, at least `min_curve_stops` of them stopped by the
// server on the curve where the simulator stopped them, at least
// `min_bound_stops` failed runs it stopped past their whole bound (at the
// report or check-in that passed it), at least `min_check_in_stops` stopped
// at a check-in (past a bound, or below a restart threshold), and probes at
// a curve's bound and at the whole bound that did not stop the run.
void ExpectCurvesExercised(const CurveReplayStats& curves, int min_curve_stops, int min_bound_stops,
                           int min_check_in_stops) {
  EXPECT_GT(curves.runs, 150);
  EXPECT_GE(curves.curve_stops, min_curve_stops);
  EXPECT_GE(curves.bound_stops, min_bound_stops);
  EXPECT_GE(curves.check_in_stops, min_check_in_stops);
  EXPECT_GT(curves.curve_probes, 0);
  if (min_bound_stops > 0) {
    EXPECT_GT(curves.bound_probes, 0);
  }
  // A run the simulation stopped in flight when a report tightened its
  // curve limits was past them at its progress then, as the server judges
  // each report (RefreshBound); none is stopped while within them.
  EXPECT_EQ(curves.stopped_early_within_bound, 0);
  EXPECT_GT(curves.replayed_early, 0);
  // Near misses ran on where the simulation ran them on.
  EXPECT_GT(curves.ran_on, 0);
}

TEST(GroupEquivalenceTest, HttpJobFollowsSimulatorSwarmPolicyWithConcurrentSubmissions) {
  const Compared compared = CompareGroupsWithSimulator("swarm", 1);
  EXPECT_GT(compared.events, 300);
  EXPECT_GT(compared.out_of_order, 20);
  EXPECT_GE(compared.max_in_flight, 4u);
  // Speculative trials handed out before any run has reported (no bound yet).
  EXPECT_GT(compared.first_wave_probes, 0);
  // The walk's first step reported its epochs as they happened, bounding
  // the first wave's probes (its provisional curve).
  EXPECT_GT(compared.in_flight_reports, 0);
  // Speculative runs the walk gave up on, and runs outbid by a new best.
  EXPECT_GT(compared.stopped_mid_run + compared.curves.stopped_early, 0);
  // (Its failed runs that would have ended at the whole bound run on as
  // near misses or finish here; the frugal group has some.)
  ExpectCurvesExercised(compared.curves, 3, 0, 2);
  // Probes that bounds changed under stopped and that finished instead,
  // where the simulator let them.
  EXPECT_GT(compared.curves.finished, 0);
  // Concurrent runs the server stopped so that their submissions restart
  // at a cheaper size, where the simulator did.
  EXPECT_GT(compared.curves.restarts, 0);
  // Concurrent runs that followed a probe learning faster than the
  // reference, on the epochs of it the server had heard.
  EXPECT_GT(compared.followed_probes, 0);
}

TEST(GroupEquivalenceTest, HttpJobFollowsSimulatorFrugalPolicyWithConcurrentSubmissions) {
  const Compared compared = CompareGroupsWithSimulator("frugal", 3);
  EXPECT_GT(compared.events, 300);
  EXPECT_GT(compared.out_of_order, 20);
  EXPECT_EQ(compared.first_wave_probes, 0);
  EXPECT_EQ(compared.in_flight_reports, 0);
  EXPECT_EQ(compared.followed_probes, 0);
  ExpectCurvesExercised(compared.curves, 2, 1, 1);
}

}  // namespace
}  // namespace zeus::testing
