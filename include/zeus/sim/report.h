// Reporters for simulation results: a text table, JSON, and the per-run
// history CSV. They write to a caller's stream; the simulator never prints.
//
// Thread-safety: stateless functions; the stream is the caller's.

#ifndef ZEUS_SIM_REPORT_H_
#define ZEUS_SIM_REPORT_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/sim/experiment.h"
#include "zeus/sim/job_groups.h"

namespace zeus {

// For a reader who has not read the paper, before the numbers: what eta
// weighs in a run's cost, what beta stops, and the seeds the numbers are
// means over.
void WriteSettingsHeader(const SimulationOptions& simulation, const std::vector<uint64_t>& seeds,
                         std::ostream& out);

// The headline: per GPU (first-seen order), the energy, time and cost
// against `default` of the paper's policy (`zeus`), of the better of ours
// (`frugal`, `swarm`: the least mean cost ratio on that GPU) and of the
// `oracle` (the bound), each the mean of the GPU's workloads' ratios, as
// signed percentages (negative = saved). Policies not in `results` are left
// out; nothing is written when none of them is there.
void WriteHeadline(const std::vector<PolicyResult>& results, std::ostream& out);

// One row per result: energy, time and cost relative to `default`, regret
// against `oracle` in percent, and the configuration settled on; a blank line
// between workloads; a legend naming `num_seeds`.
void WriteResultsTable(const std::vector<PolicyResult>& results, size_t num_seeds,
                       std::ostream& out);

// One row per policy, in first-seen order, over every workload of
// `results`: the mean and largest expected regret (the paper's: against
// recurrences x the oracle configuration's expected cost) in percent, the
// largest cost ratio to `default` and how many workloads cost more than
// `default` (cost ratio > 1). So `zeus`, `frugal`, `default` and `oracle`
// compare at a glance. The references against themselves measure only the
// traces' noise: the `oracle` row's regrets are exactly 0, `default`'s
// "> dflt" is "-", and a note after the legend says how large that noise
// came out (its expected regret, `default`'s cost ratios).
void WriteComparisonTable(const std::vector<PolicyResult>& results, std::ostream& out);

// What the runs of each (gpu, dataset, policy) were, gathered from a
// simulation's history (pass Add as, or from, its HistoryCallback): what an
// outlier note needs.
class RunEvidence {
 public:
  struct Tally {
    std::set<uint64_t> seeds;
    int runs = 0;
    // Runs that did not reach the target, and their cost.
    int missed = 0;
    double missed_cost = 0.0;
    double cost = 0.0;
    // The single costliest run.
    double costliest_cost = 0.0;
    int costliest_batch_size = 0;
    int costliest_power_limit_w = 0;
    bool costliest_reached = false;
  };

  void Add(const HistoryRow& row);
  // Null when no run of that key was added.
  const Tally* Find(const std::string& gpu, const std::string& dataset,
                    const std::string& policy) const;

 private:
  std::map<std::tuple<std::string, std::string, std::string>, Tally> tallies_;
};

// A note for each result costing more than 2x `default` (the 5 largest, then
// how many more), explaining it from `evidence`: the runs per seed that did
// not reach the target and their share of the cost, and the costliest run
// against the oracle's expected run. Nothing when no result is that far off.
void WriteOutlierNotes(const std::vector<PolicyResult>& results, const RunEvidence& evidence,
                       std::ostream& out);

// Every field of `result`, the default and oracle references included.
nlohmann::json ResultToJson(const PolicyResult& result);

// Per policy, over every workload: submissions, abandoned submissions
// (SubmissionTally::abandoned) and the most tries of any submission.
void WriteSubmissionTable(const std::vector<PolicyResult>& results, std::ostream& out);

// The history CSV's header. Its leading columns are exactly
// gpu,dataset,seed,recurrence,batch_size,power_limit,energy_j,time_s,reached,policy
// (then cost, kind, group, try, start_s, end_s, stopped_early, ran_on).
void WriteHistoryCsvHeader(std::ostream& out);
// One run as a history CSV line (energy, time and cost with 10 significant
// digits, reached as true/false). kind: RunPlan::kind (empty for policies
// without trial kinds). The last five columns are empty outside group
// simulations; in one they are the run's group (quoted when it needs to
// be), try (1 = the submission's first run), start and end in the group's
// time (s), and whether it stopped when another run's result tightened its
// bound (true/false).
void WriteHistoryCsvRow(const HistoryRow& row, std::ostream& out);
// An estimate of the bytes of the history rows RunExperiment (`groups` null)
// or RunGroupExperiment would write: one row of typical width per recurrence
// (per group submission) of every workload, policy and seed; retried
// recurrences add rows, so it errs low (within ~25 % on the bundled traces).
// Lets a caller refuse a history that would fill a disk.
uint64_t EstimateHistoryCsvBytes(const std::vector<Workload>& workloads, const JobGroups* groups,
                                 const ExperimentOptions& options);

}  // namespace zeus

#endif  // ZEUS_SIM_REPORT_H_
