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
        PolicyContext context;
        context.workload = &workload;
        context.eta = options.simulation.eta;
        context.beta = options.simulation.beta;
        context.seed = seed;
        ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(policy_name, context));
        SimulationOptions simulation = options.simulation;
        simulation.seed = seed;
        ZEUS_ASSIGN_OR_RETURN(std::vector<RunRecord> runs,
                              SimulateRecurringJob(workload, *policy, simulation));
        const int recurrences = simulation.num_recurrences > 0 ? simulation.num_recurrences
                                                               : DefaultRecurrences(workload);
        ZEUS_ASSIGN_OR_RETURN(SimulationSummary summary,
                              Summarize(workload, runs, recurrences, simulation.eta));
        result.num_recurrences = recurrences;
        result.default_run = summary.default_run;
        result.oracle_run = summary.oracle_run;
        result.energy_j += summary.energy_j / n;
        result.time_s += summary.time_s / n;
        result.cost += summary.cost / n;
        result.cost_ratio += summary.cost_ratio / n;
        result.energy_ratio += summary.energy_ratio / n;
        result.time_ratio += summary.time_ratio / n;
        result.regret += summary.regret / n;
        result.cost_ratio_min = std::min(result.cost_ratio_min, summary.cost_ratio);
        result.cost_ratio_max = std::max(result.cost_ratio_max, summary.cost_ratio);
        for (size_t i = runs.size() > 20 ? runs.size() - 20 : 0; i < runs.size(); ++i) {
          ++final_sizes[runs[i].batch_size];
          ++final_limits[runs[i].power_limit_w];
        }
        if (history) {
          HistoryRow row;
          row.gpu = &result.gpu;
          row.dataset = &result.dataset;
          row.policy = &result.policy;
          row.seed = seed;
          for (const RunRecord& run : runs) {
            row.run = run;
            history(row);
          }
        }
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

}  // namespace zeus
