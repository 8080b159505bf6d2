#include "zeus/sim/experiment.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "src/sim/settled_configuration.h"

namespace zeus {
namespace {

// What an experiment simulates once per (workload, policy, seed): a group's
// submissions, or null for the recurring job of the experiment's options.
using Unit = const std::vector<JobSubmission>*;

// The units of `workload`: the recurring job itself when `groups` is null,
// else each group running its dataset (none: the workload is skipped).
std::vector<Unit> UnitsOf(const Workload& workload, const JobGroups* groups) {
  if (groups == nullptr) return {nullptr};
  return GroupsRunning(*groups, workload.job.dataset);
}

// Cumulative values of one (workload, policy, seed) over its units.
struct SeedTotals {
  double energy_j = 0.0;
  double time_s = 0.0;
  double cost = 0.0;
  // Recurrences (submissions) weighted by their runtime_ratio: how many
  // default or oracle runs the totals compare with.
  double size = 0.0;
  // Recurrences (submissions), unweighted.
  int recurrences = 0;
  SubmissionTally tally;
};

// The runs of one unit: `runs`, and for a group also `group_runs` (the same
// runs with their times, in the same order).
struct UnitRuns {
  std::vector<RunRecord> runs;
  std::vector<GroupRunRecord> group_runs;
};

// Simulates `policy_name` on `unit` of `workload` with `seed` (a group with
// GroupSeed(seed, its name)), adds its runs and size to `totals` and returns
// the runs (a group's with the submission index as recurrence).
StatusOr<UnitRuns> SimulateUnit(const Workload& workload, const std::string& policy_name,
                                uint64_t seed, Unit unit, const SimulationOptions& base,
                                SeedTotals& totals) {
  SimulationOptions simulation = base;
  simulation.seed = unit == nullptr ? seed : GroupSeed(seed, unit->front().group);
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                        MakePolicy(policy_name, simulation.ContextFor(workload)));
  UnitRuns out;
  if (unit == nullptr) {
    ZEUS_ASSIGN_OR_RETURN(out.runs,
                          SimulateRecurringJob(workload, *policy, simulation, &totals.tally));
    const int recurrences = simulation.RecurrencesOf(workload);
    totals.size += recurrences;
    totals.recurrences += recurrences;
  } else {
    ZEUS_ASSIGN_OR_RETURN(out.group_runs,
                          SimulateJobGroup(workload, *policy, *unit, simulation, &totals.tally));
    out.runs.reserve(out.group_runs.size());
    for (const GroupRunRecord& run : out.group_runs) out.runs.push_back(run.run);
    for (const JobSubmission& s : *unit) totals.size += s.runtime_ratio;
    totals.recurrences += static_cast<int>(unit->size());
  }
  for (const RunRecord& run : out.runs) {
    totals.energy_j += run.energy_j;
    totals.time_s += run.time_s;
    totals.cost += run.cost;
  }
  return out;
}

// Passes every run of one simulation of `unit` to `history`.
void EmitHistory(const HistoryCallback& history, const PolicyResult& result, uint64_t seed,
                 Unit unit, const UnitRuns& runs) {
  if (!history) return;
  HistoryRow row;
  row.gpu = &result.gpu;
  row.dataset = &result.dataset;
  row.policy = &result.policy;
  row.seed = seed;
  if (unit != nullptr) row.group = &unit->front().group;
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    row.run = runs.runs[i];
    if (unit != nullptr) row.group_run = &runs.group_runs[i];
    history(row);
  }
}

// The one experiment loop: every (workload, policy, seed, unit), the
// recurring jobs of `options` when `groups` is null, else `groups`.
StatusOr<std::vector<PolicyResult>> RunUnits(const std::vector<Workload>& workloads,
                                             const JobGroups* groups,
                                             const ExperimentOptions& options,
                                             const ProgressCallback& progress,
                                             const HistoryCallback& history) {
  const std::string what = groups == nullptr ? "experiment" : "group experiment";
  ZEUS_RETURN_IF_ERROR(options.simulation.Validate());
  if (options.seeds.empty()) return InvalidArgumentError(what + ": no seeds");
  if (options.policies.empty()) return InvalidArgumentError(what + ": no policies");
  const std::vector<std::string> known = PolicyNames();
  for (const std::string& name : options.policies) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      PolicyContext probe;
      if (!workloads.empty()) probe.workload = &workloads.front();
      return MakePolicy(name, probe).status();
    }
  }
  size_t total = 0;
  for (const Workload& workload : workloads) total += UnitsOf(workload, groups).size();
  if (groups != nullptr && total == 0) {
    return NotFoundError(what + ": no group uses a dataset of the loaded workloads");
  }
  total *= options.policies.size() * options.seeds.size();
  size_t done = 0;
  std::vector<PolicyResult> results;
  for (const Workload& workload : workloads) {
    const std::vector<Unit> units = UnitsOf(workload, groups);
    if (units.empty()) continue;
    const JobContext job = options.simulation.ContextFor(workload);
    ZEUS_ASSIGN_OR_RETURN(const ExpectedRun default_run, DefaultRun(job));
    ZEUS_ASSIGN_OR_RETURN(const ExpectedRun oracle_run, OracleRun(job));
    // The oracle policy's cumulative cost per seed: regret's reference.
    std::map<uint64_t, double> oracle_cost;
    for (uint64_t seed : options.seeds) {
      SeedTotals totals;
      for (Unit unit : units) {
        ZEUS_RETURN_IF_ERROR(
            SimulateUnit(workload, "oracle", seed, unit, options.simulation, totals).status());
      }
      oracle_cost[seed] = totals.cost;
    }
    for (const std::string& policy_name : options.policies) {
      PolicyResult result;
      result.gpu = workload.gpu;
      result.dataset = workload.job.dataset;
      result.policy = policy_name;
      result.num_seeds = static_cast<int>(options.seeds.size());
      result.default_run = default_run;
      result.oracle_run = oracle_run;
      result.cost_ratio_min = std::numeric_limits<double>::infinity();
      result.cost_ratio_max = -std::numeric_limits<double>::infinity();
      SettledConfiguration settled;
      const double n = static_cast<double>(options.seeds.size());
      for (uint64_t seed : options.seeds) {
        SeedTotals totals;
        bool any_run = false;
        for (Unit unit : units) {
          ZEUS_ASSIGN_OR_RETURN(UnitRuns runs, SimulateUnit(workload, policy_name, seed, unit,
                                                            options.simulation, totals));
          any_run = any_run || !runs.runs.empty();
          settled.Add(runs.runs);
          EmitHistory(history, result, seed, unit, runs);
          ++done;
          if (progress) progress(done, total);
        }
        if (!any_run) {
          return InvalidArgumentError(what + ": " + workload.gpu + "/" + workload.job.dataset +
                                      ", policy '" + policy_name + "', seed " +
                                      std::to_string(seed) + ": no run started");
        }
        const double size = totals.size;
        const double cost_ratio = totals.cost / (size * default_run.cost);
        result.num_recurrences = totals.recurrences;
        result.energy_j += totals.energy_j / n;
        result.time_s += totals.time_s / n;
        result.cost += totals.cost / n;
        result.cost_ratio += cost_ratio / n;
        result.energy_ratio += totals.energy_j / (size * default_run.energy_j) / n;
        result.time_ratio += totals.time_s / (size * default_run.time_s) / n;
        result.regret += (totals.cost - oracle_cost.at(seed)) / oracle_cost.at(seed) / n;
        result.expected_regret +=
            (totals.cost - size * oracle_run.cost) / (size * oracle_run.cost) / n;
        result.submissions.Merge(totals.tally);
        result.cost_ratio_min = std::min(result.cost_ratio_min, cost_ratio);
        result.cost_ratio_max = std::max(result.cost_ratio_max, cost_ratio);
      }
      result.final_batch_size = settled.batch_size();
      result.final_power_limit_w = settled.power_limit_w();
      results.push_back(std::move(result));
    }
  }
  return results;
}

}  // namespace

StatusOr<std::vector<PolicyResult>> RunExperiment(const std::vector<Workload>& workloads,
                                                  const ExperimentOptions& options,
                                                  const ProgressCallback& progress,
                                                  const HistoryCallback& history) {
  return RunUnits(workloads, /*groups=*/nullptr, options, progress, history);
}

StatusOr<std::vector<PolicyResult>> RunGroupExperiment(const std::vector<Workload>& workloads,
                                                       const JobGroups& groups,
                                                       const ExperimentOptions& options,
                                                       const ProgressCallback& progress,
                                                       const HistoryCallback& history) {
  return RunUnits(workloads, &groups, options, progress, history);
}

}  // namespace zeus
