// EnergyMonitor on the real NVML GPUs of this machine (read-only: no setter
// is called). Skips when NVML is unavailable. Run by scripts/gpu/monitor_bench.sh.
//
//   BM_NvmlEnergyRead / BM_NvmlPowerRead: one raw read of GPU 0.
//   BM_NvmlDomainPowerRead/<domain> (0 device_instant, 1 device_average,
//     2 memory_average; NVML field values) and BM_NvmlTemperatureRead: one
//     read of GPU 0 (skipped where the GPU lacks it).
//   BM_NvmlPowerMonitorQuery: PowerMonitor (every domain, counters sampled,
//     5 ms polling) get_energy-style queries over the last second: the
//     counter-based energy and one domain's integral.
//   BM_NvmlBeginEnd/<mode>: caller-thread cost of Begin + End over all GPUs
//     (mode 0 = exact, 1 = low-overhead), with p50/p99 counters.
//   BM_NvmlLowOverheadError/<window_ms>: low-overhead vs exact energy of the
//     same windows (both monitors open them back to back). Exact windows
//     shorter than the counter period are themselves quantised, so the short
//     windows' per-window difference mostly measures the exact mode's own
//     quantisation; the aggregate (sum over windows) is the fair comparison.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "zeus/device/devices.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/monitor/power_monitor.h"

#include "bench/monitor/latency_stats.h"

namespace zeus {
namespace {

std::vector<std::unique_ptr<Gpu>>* Gpus() {
  static auto* gpus = [] {
    auto* out = new std::vector<std::unique_ptr<Gpu>>();
    StatusOr<std::vector<std::unique_ptr<Gpu>>> opened = OpenGpus();
    if (opened.ok()) *out = std::move(opened).value();
    return out;
  }();
  return gpus;
}

std::vector<Gpu*> GpuPtrs() {
  std::vector<Gpu*> out;
  for (auto& g : *Gpus()) out.push_back(g.get());
  return out;
}

bool SkipWithoutGpu(benchmark::State& state) {
  if (!Gpus()->empty()) return false;
  state.SkipWithError("no NVML GPU");
  return true;
}

void BM_NvmlEnergyRead(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  bench::LatencyStats stats;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<uint64_t> e = (*Gpus())[0]->TotalEnergyMj();
    stats.Add(std::chrono::steady_clock::now() - start);
    benchmark::DoNotOptimize(e);
  }
  stats.Report(state);
}
BENCHMARK(BM_NvmlEnergyRead)->UseRealTime()->Unit(benchmark::kMicrosecond)->Iterations(300);

void BM_NvmlPowerRead(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  bench::LatencyStats stats;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<uint32_t> p = (*Gpus())[0]->PowerMw();
    stats.Add(std::chrono::steady_clock::now() - start);
    benchmark::DoNotOptimize(p);
  }
  stats.Report(state);
}
BENCHMARK(BM_NvmlPowerRead)->UseRealTime()->Unit(benchmark::kMicrosecond)->Iterations(3000);

void BM_NvmlDomainPowerRead(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const PowerDomain domain = kAllPowerDomains[state.range(0)];
  StatusOr<uint32_t> probe = (*Gpus())[0]->DomainPowerMw(domain);
  if (!probe.ok()) {
    state.SkipWithError(probe.status().ToString().c_str());
    return;
  }
  bench::LatencyStats stats;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<uint32_t> p = (*Gpus())[0]->DomainPowerMw(domain);
    stats.Add(std::chrono::steady_clock::now() - start);
    benchmark::DoNotOptimize(p);
  }
  stats.Report(state);
  state.SetLabel(PowerDomainName(domain));
}
BENCHMARK(BM_NvmlDomainPowerRead)
    ->DenseRange(0, 2)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(3000);

void BM_NvmlTemperatureRead(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  bench::LatencyStats stats;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    StatusOr<int32_t> t = (*Gpus())[0]->TemperatureC();
    stats.Add(std::chrono::steady_clock::now() - start);
    benchmark::DoNotOptimize(t);
  }
  stats.Report(state);
}
BENCHMARK(BM_NvmlTemperatureRead)->UseRealTime()->Unit(benchmark::kMicrosecond)->Iterations(3000);

void BM_NvmlPowerMonitorQuery(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  PowerMonitorOptions options;
  options.period = std::chrono::milliseconds(5);
  options.domains = {};  // Every domain GPU 0 has.
  options.sample_energy_counters = true;
  auto monitor = PowerMonitor::Create(GpuPtrs(), RealClock(), options);
  if (!monitor.ok()) {
    state.SkipWithError(monitor.status().ToString().c_str());
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  bench::LatencyStats counter_stats;
  std::vector<double> domain_us;
  for (auto _ : state) {
    const auto now = RealClock()->Now();
    auto start = std::chrono::steady_clock::now();
    StatusOr<double> counter_j = (*monitor)->CounterEnergyJ(0, now - std::chrono::seconds(1), now);
    auto middle = std::chrono::steady_clock::now();
    StatusOr<double> domain_j = (*monitor)->EnergyJ(0, now - std::chrono::seconds(1), now);
    counter_stats.Add(middle - start);
    domain_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - middle)
            .count());
    benchmark::DoNotOptimize(counter_j);
    benchmark::DoNotOptimize(domain_j);
  }
  counter_stats.Report(state);
  std::sort(domain_us.begin(), domain_us.end());
  state.counters["domain_query_p50_us"] = domain_us.empty() ? 0.0 : domain_us[domain_us.size() / 2];
}
BENCHMARK(BM_NvmlPowerMonitorQuery)->UseRealTime()->Unit(benchmark::kMicrosecond)->Iterations(2000);

void BM_NvmlBeginEnd(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  EnergyMonitorOptions options;
  options.mode = state.range(0) == 0 ? EnergyMonitorMode::kExact : EnergyMonitorMode::kLowOverhead;
  auto monitor = EnergyMonitor::Create(GpuPtrs(), {}, RealClock(), options);
  if (!monitor.ok()) {
    state.SkipWithError(monitor.status().ToString().c_str());
    return;
  }
  bench::MeasureBeginEnd(state, **monitor);
}
BENCHMARK(BM_NvmlBeginEnd)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(5.0);

void BM_NvmlLowOverheadError(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const auto window = std::chrono::milliseconds(state.range(0));
  EnergyMonitorOptions exact_options;
  EnergyMonitorOptions low_options;
  low_options.mode = EnergyMonitorMode::kLowOverhead;
  auto exact = EnergyMonitor::Create(GpuPtrs(), {}, RealClock(), exact_options);
  auto low = EnergyMonitor::Create(GpuPtrs(), {}, RealClock(), low_options);
  if (!exact.ok() || !low.ok()) {
    state.SkipWithError("cannot create monitors");
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // Anchors settle.
  double sum_exact_j = 0, sum_low_j = 0, sum_abs_diff_j = 0, max_abs_diff_j = 0;
  int windows = 0;
  for (auto _ : state) {
    Status b1 = (*low)->Begin("w");
    Status b2 = (*exact)->Begin("w");
    std::this_thread::sleep_for(window);
    StatusOr<Measurement> low_m = (*low)->End("w");
    StatusOr<Measurement> exact_m = (*exact)->End("w");
    if (!b1.ok() || !b2.ok() || !low_m.ok() || !exact_m.ok()) {
      state.SkipWithError("window failed");
      return;
    }
    double diff_j = low_m->TotalGpuEnergyJ() - exact_m->TotalGpuEnergyJ();
    sum_exact_j += exact_m->TotalGpuEnergyJ();
    sum_low_j += low_m->TotalGpuEnergyJ();
    sum_abs_diff_j += std::abs(diff_j);
    max_abs_diff_j = std::max(max_abs_diff_j, std::abs(diff_j));
    ++windows;
  }
  state.counters["mean_exact_J"] = sum_exact_j / windows;
  state.counters["mean_abs_diff_J"] = sum_abs_diff_j / windows;
  state.counters["max_abs_diff_J"] = max_abs_diff_j;
  state.counters["mean_abs_diff_pct"] = 100.0 * sum_abs_diff_j / sum_exact_j;
  state.counters["aggregate_diff_pct"] = 100.0 * (sum_low_j - sum_exact_j) / sum_exact_j;
}
BENCHMARK(BM_NvmlLowOverheadError)->Arg(100)->Iterations(30)->UseRealTime();
BENCHMARK(BM_NvmlLowOverheadError)->Arg(1000)->Iterations(10)->UseRealTime();
BENCHMARK(BM_NvmlLowOverheadError)->Arg(10000)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
