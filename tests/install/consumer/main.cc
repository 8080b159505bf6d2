// Simulates the `zeus` policy on the installed A40 traces for one seed and
// prints its cost relative to the default configuration.

#include <cstdio>

#include "zeus/sim/experiment.h"
#include "zeus/sim/trace.h"

int main() {
  const std::string traces = std::string(ZEUS_DATA_DIR) + "/traces/zeus-nsdi23";
  zeus::StatusOr<std::vector<zeus::Workload>> workloads = zeus::LoadWorkloads(traces, "a40");
  if (!workloads.ok()) {
    std::fprintf(stderr, "consumer: %s\n", workloads.status().ToString().c_str());
    return 1;
  }
  zeus::ExperimentOptions options;
  options.seeds = {1};
  zeus::StatusOr<std::vector<zeus::PolicyResult>> results =
      zeus::RunExperiment(*workloads, options);
  if (!results.ok()) {
    std::fprintf(stderr, "consumer: %s\n", results.status().ToString().c_str());
    return 1;
  }
  for (const zeus::PolicyResult& r : *results) {
    std::printf("%s %s cost_ratio %.3f\n", r.dataset.c_str(), r.policy.c_str(), r.cost_ratio);
  }
  return results->size() == workloads->size() ? 0 : 1;
}
