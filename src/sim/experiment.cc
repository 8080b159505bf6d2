#include "zeus/sim/experiment.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

namespace zeus {
namespace {

int Mode(const std::map<int, int>& counts) {
  int best = 0;
  int best_count = 0;
  for (const auto& [value, count] : counts) {
    if (count > best_count) {
      best = value;
      best_count = count;
    }
  }
  return best;
}

// Passes every run of one (workload, policy, seed) simulation to `history`;
// `run_of` maps an element of `runs` to its RunRecord.
template <typename Runs, typename RunOf>
void EmitHistory(const HistoryCallback& history, const PolicyResult& result, uint64_t seed,
                 const Runs& runs, RunOf run_of) {
  if (!history) return;
  HistoryRow row;
  row.gpu = &result.gpu;
  row.dataset = &result.dataset;
  row.policy = &result.policy;
  row.seed = seed;
  for (const auto& run : runs) {
    row.run = run_of(run);
    history(row);
  }
}

// One simulation of `policy_name` on `workload` with `seed`.
StatusOr<std::vector<RunRecord>> SimulateSeed(const Workload& workload,
                                              const std::string& policy_name, uint64_t seed,
                                              const SimulationOptions& base) {
  PolicyContext context;
  context.workload = &workload;
  context.eta = base.eta;
  context.beta = base.beta;
  context.seed = seed;
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(policy_name, context));
  SimulationOptions simulation = base;
  simulation.seed = seed;
  return SimulateRecurringJob(workload, *policy, simulation);
}

double TotalCost(const std::vector<RunRecord>& runs) {
  double cost = 0.0;
  for (const RunRecord& run : runs) cost += run.cost;
  return cost;
}

// One group simulation of `policy_name` with the group's seed.
StatusOr<std::vector<GroupRunRecord>> SimulateGroupSeed(
    const Workload& workload, const std::string& policy_name, uint64_t seed,
    const std::vector<JobSubmission>& submissions, const SimulationOptions& base) {
  PolicyContext context;
  context.workload = &workload;
  context.eta = base.eta;
  context.beta = base.beta;
  context.seed = GroupSeed(seed, submissions.front().group);
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(policy_name, context));
  SimulationOptions simulation = base;
  simulation.seed = context.seed;
  return SimulateJobGroup(workload, *policy, submissions, simulation);
}

// The groups of `groups` whose submissions run `workload`'s dataset.
std::vector<const std::vector<JobSubmission>*> GroupsOf(const Workload& workload,
                                                        const JobGroups& groups) {
  std::vector<const std::vector<JobSubmission>*> mine;
  for (const auto& [name, submissions] : groups) {
    if (!submissions.empty() && submissions.front().dataset == workload.job.dataset) {
      mine.push_back(&submissions);
    }
  }
  return mine;
}

// The oracle policy's cumulative cost over `mine`, per seed: regret's reference.
StatusOr<std::map<uint64_t, double>> OracleGroupCost(
    const Workload& workload, const std::vector<const std::vector<JobSubmission>*>& mine,
    const std::vector<uint64_t>& seeds, const SimulationOptions& base) {
  std::map<uint64_t, double> cost;
  for (uint64_t seed : seeds) {
    for (const std::vector<JobSubmission>* submissions : mine) {
      ZEUS_ASSIGN_OR_RETURN(std::vector<GroupRunRecord> runs,
                            SimulateGroupSeed(workload, "oracle", seed, *submissions, base));
      for (const GroupRunRecord& run : runs) cost[seed] += run.run.cost;
    }
  }
  return cost;
}

}  // namespace

StatusOr<std::vector<PolicyResult>> RunExperiment(const std::vector<Workload>& workloads,
                                                  const ExperimentOptions& options,
                                                  const ProgressCallback& progress,
                                                  const HistoryCallback& history) {
  ZEUS_RETURN_IF_ERROR(options.simulation.Validate());
  if (options.seeds.empty()) return InvalidArgumentError("experiment: no seeds");
  if (options.policies.empty()) return InvalidArgumentError("experiment: no policies");
  const std::vector<std::string> known = PolicyNames();
  for (const std::string& name : options.policies) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      PolicyContext probe;
      if (!workloads.empty()) probe.workload = &workloads.front();
      return MakePolicy(name, probe).status();
    }
  }
  const size_t total = workloads.size() * options.policies.size() * options.seeds.size();
  size_t done = 0;
  std::vector<PolicyResult> results;
  for (const Workload& workload : workloads) {
    // The oracle policy's cumulative cost per seed: regret's reference.
    std::map<uint64_t, double> oracle_cost;
    for (uint64_t seed : options.seeds) {
      ZEUS_ASSIGN_OR_RETURN(std::vector<RunRecord> runs,
                            SimulateSeed(workload, "oracle", seed, options.simulation));
      oracle_cost[seed] = TotalCost(runs);
    }
    for (const std::string& policy_name : options.policies) {
      PolicyResult result;
      result.gpu = workload.gpu;
      result.dataset = workload.job.dataset;
      result.policy = policy_name;
      result.num_seeds = static_cast<int>(options.seeds.size());
      result.cost_ratio_min = std::numeric_limits<double>::infinity();
      result.cost_ratio_max = -std::numeric_limits<double>::infinity();
      std::map<int, int> final_sizes;
      std::map<int, int> final_limits;
      const double n = static_cast<double>(options.seeds.size());
      for (uint64_t seed : options.seeds) {
        ZEUS_ASSIGN_OR_RETURN(std::vector<RunRecord> runs,
                              SimulateSeed(workload, policy_name, seed, options.simulation));
        const int recurrences = options.simulation.num_recurrences > 0
                                    ? options.simulation.num_recurrences
                                    : DefaultRecurrences(workload);
        ZEUS_ASSIGN_OR_RETURN(SimulationSummary summary,
                              Summarize(workload, runs, recurrences, options.simulation.eta));
        result.num_recurrences = recurrences;
        result.default_run = summary.default_run;
        result.oracle_run = summary.oracle_run;
        result.energy_j += summary.energy_j / n;
        result.time_s += summary.time_s / n;
        result.cost += summary.cost / n;
        result.cost_ratio += summary.cost_ratio / n;
        result.energy_ratio += summary.energy_ratio / n;
        result.time_ratio += summary.time_ratio / n;
        result.regret += (summary.cost - oracle_cost[seed]) / oracle_cost[seed] / n;
        result.expected_regret += summary.regret / n;
        result.cost_ratio_min = std::min(result.cost_ratio_min, summary.cost_ratio);
        result.cost_ratio_max = std::max(result.cost_ratio_max, summary.cost_ratio);
        for (size_t i = runs.size() > 20 ? runs.size() - 20 : 0; i < runs.size(); ++i) {
          ++final_sizes[runs[i].batch_size];
          ++final_limits[runs[i].power_limit_w];
        }
        EmitHistory(history, result, seed, runs, [](const RunRecord& run) { return run; });
        ++done;
        if (progress) progress(done, total);
      }
      result.final_batch_size = Mode(final_sizes);
      result.final_power_limit_w = Mode(final_limits);
      results.push_back(std::move(result));
    }
  }
  return results;
}

StatusOr<std::vector<PolicyResult>> RunGroupExperiment(const std::vector<Workload>& workloads,
                                                       const JobGroups& groups,
                                                       const ExperimentOptions& options,
                                                       const ProgressCallback& progress,
                                                       const HistoryCallback& history) {
  ZEUS_RETURN_IF_ERROR(options.simulation.Validate());
  if (options.seeds.empty()) return InvalidArgumentError("group experiment: no seeds");
  size_t total = 0;
  for (const Workload& workload : workloads) total += GroupsOf(workload, groups).size();
  if (total == 0) {
    return NotFoundError("group experiment: no group uses a dataset of the loaded workloads");
  }
  total *= options.policies.size() * options.seeds.size();
  size_t done = 0;
  std::vector<PolicyResult> results;
  for (const Workload& workload : workloads) {
    const std::vector<const std::vector<JobSubmission>*> mine = GroupsOf(workload, groups);
    if (mine.empty()) continue;
    ZEUS_ASSIGN_OR_RETURN(ExpectedRun default_run, DefaultRun(workload, options.simulation.eta));
    ZEUS_ASSIGN_OR_RETURN(ExpectedRun oracle_run, OracleRun(workload, options.simulation.eta));
    ZEUS_ASSIGN_OR_RETURN(const auto oracle_cost,
                          OracleGroupCost(workload, mine, options.seeds, options.simulation));
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
      std::map<int, int> final_sizes;
      std::map<int, int> final_limits;
      const double n = static_cast<double>(options.seeds.size());
      for (uint64_t seed : options.seeds) {
        double energy_j = 0, time_s = 0, cost = 0, size = 0;
        int submissions_count = 0;
        for (const std::vector<JobSubmission>* submissions : mine) {
          ZEUS_ASSIGN_OR_RETURN(
              std::vector<GroupRunRecord> runs,
              SimulateGroupSeed(workload, policy_name, seed, *submissions, options.simulation));
          for (const JobSubmission& s : *submissions) size += s.runtime_ratio;
          submissions_count += static_cast<int>(submissions->size());
          for (size_t i = 0; i < runs.size(); ++i) {
            energy_j += runs[i].run.energy_j;
            time_s += runs[i].run.time_s;
            cost += runs[i].run.cost;
            if (i + 20 >= runs.size()) {
              ++final_sizes[runs[i].run.batch_size];
              ++final_limits[runs[i].run.power_limit_w];
            }
          }
          EmitHistory(history, result, seed, runs,
                      [](const GroupRunRecord& run) { return run.run; });
          ++done;
          if (progress) progress(done, total);
        }
        result.num_recurrences = submissions_count;
        const double cost_ratio = cost / (size * default_run.cost);
        result.energy_j += energy_j / n;
        result.time_s += time_s / n;
        result.cost += cost / n;
        result.cost_ratio += cost_ratio / n;
        result.energy_ratio += energy_j / (size * default_run.energy_j) / n;
        result.time_ratio += time_s / (size * default_run.time_s) / n;
        result.regret += (cost - oracle_cost.at(seed)) / oracle_cost.at(seed) / n;
        result.expected_regret += (cost - size * oracle_run.cost) / (size * oracle_run.cost) / n;
        result.cost_ratio_min = std::min(result.cost_ratio_min, cost_ratio);
        result.cost_ratio_max = std::max(result.cost_ratio_max, cost_ratio);
      }
      result.final_batch_size = Mode(final_sizes);
      result.final_power_limit_w = Mode(final_limits);
      results.push_back(std::move(result));
    }
  }
  return results;
}

}  // namespace zeus
