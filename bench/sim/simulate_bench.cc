// Speed of the trace-driven simulator. Target (issue 3): V100 + A40, the six
// workloads, 10 seeds of policy `zeus` in under 0.5 s on one core (the
// original Python simulator needs about 130 s).
//
// Reads the bundled traces, data/traces/zeus-nsdi23.

#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "zeus/sim/experiment.h"
#include "zeus/sim/trace.h"

namespace zeus {
namespace {

std::string TraceDir() { return std::string(ZEUS_SOURCE_DIR) + "/data/traces/zeus-nsdi23"; }

StatusOr<std::vector<Workload>> LoadAll() {
  std::vector<Workload> all;
  for (const char* gpu : {"v100", "a40"}) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<Workload> workloads, LoadWorkloads(TraceDir(), gpu));
    for (Workload& w : workloads) all.push_back(std::move(w));
  }
  return all;
}

// The whole target: 2 GPUs x 6 workloads x 10 seeds of `zeus`, traces loaded.
void BM_ZeusV100A40TenSeeds(benchmark::State& state) {
  StatusOr<std::vector<Workload>> workloads = LoadAll();
  if (!workloads.ok()) {
    state.SkipWithError(workloads.status().ToString().c_str());
    return;
  }
  ExperimentOptions options;
  options.policies = {"zeus"};
  size_t runs = 0;
  for (auto _ : state) {
    StatusOr<std::vector<PolicyResult>> results =
        RunExperiment(*workloads, options, nullptr, [&runs](const HistoryRow&) { ++runs; });
    if (!results.ok()) {
      state.SkipWithError(results.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(results->front().cost_ratio);
  }
  state.counters["runs_per_iter"] =
      benchmark::Counter(static_cast<double>(runs) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ZeusV100A40TenSeeds)->Unit(benchmark::kMillisecond);

// Loading and joining the three trace files of both GPUs.
void BM_LoadTraces(benchmark::State& state) {
  for (auto _ : state) {
    StatusOr<std::vector<Workload>> workloads = LoadAll();
    if (!workloads.ok()) {
      state.SkipWithError(workloads.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(workloads->size());
  }
}
BENCHMARK(BM_LoadTraces)->Unit(benchmark::kMillisecond);

// Every policy on both GPUs, 10 seeds (`zeus simulate --policy all`).
void BM_AllPoliciesV100A40TenSeeds(benchmark::State& state) {
  StatusOr<std::vector<Workload>> workloads = LoadAll();
  if (!workloads.ok()) {
    state.SkipWithError(workloads.status().ToString().c_str());
    return;
  }
  ExperimentOptions options;
  options.policies = PolicyNames();
  for (auto _ : state) {
    StatusOr<std::vector<PolicyResult>> results = RunExperiment(*workloads, options);
    if (!results.ok()) {
      state.SkipWithError(results.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(results->size());
  }
}
BENCHMARK(BM_AllPoliciesV100A40TenSeeds)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
