// Caller-thread cost of an EnergyMonitor window (Begin + End) over FakeGpus
// whose energy read blocks 3 ms like NVML's on H100, and the low-overhead
// mode's error against exact energy for several window lengths.
//
//   build-<name>/bench/monitor/energy_monitor_bench

#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "zeus/device/fake.h"
#include "zeus/monitor/energy_monitor.h"

#include "bench/monitor/latency_stats.h"
#include "tests/monitor/analytic_gpu.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;

void BeginEndCost(benchmark::State& state, EnergyMonitorMode mode) {
  const int num_gpus = static_cast<int>(state.range(0));
  std::vector<std::unique_ptr<FakeGpu>> gpus;
  std::vector<Gpu*> gpu_ptrs;
  for (int i = 0; i < num_gpus; ++i) {
    FakeGpuOptions options;
    options.index = i;
    options.energy_read_latency = milliseconds(3);
    gpus.push_back(std::make_unique<FakeGpu>(RealClock(), options));
    gpu_ptrs.push_back(gpus.back().get());
  }
  EnergyMonitorOptions options;
  options.mode = mode;
  auto monitor = EnergyMonitor::Create(gpu_ptrs, {}, RealClock(), options);
  if (!monitor.ok()) {
    state.SkipWithError(monitor.status().ToString().c_str());
    return;
  }
  bench::MeasureBeginEnd(state, **monitor);
}

void BM_ExactBeginEnd(benchmark::State& state) { BeginEndCost(state, EnergyMonitorMode::kExact); }
BENCHMARK(BM_ExactBeginEnd)->Arg(1)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LowOverheadBeginEnd(benchmark::State& state) {
  BeginEndCost(state, EnergyMonitorMode::kLowOverhead);
}
BENCHMARK(BM_LowOverheadBeginEnd)->Arg(1)->Arg(8)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Low-overhead error against the exact energy of an AnalyticGpu (counter
// updated every 100 ms, exact at each update), simulated on a FakeClock with
// the default 10 ms counter polls and power samples; windows of range(0) ms
// start at 16 phases spread over the counter period. Counters: mean and max
// absolute error (J) and relative error (%).
void BM_LowOverheadError(benchmark::State& state) {
  const int64_t window_ms = state.range(0);
  double max_error_j = 0.0;
  double sum_error_j = 0.0;
  double max_relative = 0.0;
  int windows = 0;
  for (auto _ : state) {
    FakeClock clock(milliseconds(1000));
    testing::AnalyticGpu gpu(&clock, milliseconds(100));
    EnergyMonitorOptions options;
    options.mode = EnergyMonitorMode::kLowOverhead;
    options.power_sample_period = std::chrono::nanoseconds(0);
    options.counter_poll_period = std::chrono::nanoseconds(0);
    auto monitor = EnergyMonitor::Create({&gpu}, {}, &clock, options);
    if (!monitor.ok()) {
      state.SkipWithError(monitor.status().ToString().c_str());
      return;
    }
    int64_t tick = 0;
    auto advance_ms = [&](int64_t ms) {  // Background work every 10 ms.
      for (int64_t i = 0; i < ms * 2; ++i) {
        clock.Advance(std::chrono::microseconds(500));
        if (++tick % 20 == 0) (*monitor)->SampleNow().IgnoreError();
      }
    };
    advance_ms(200);
    for (int w = 0; w < 16; ++w) {
      advance_ms(7 + w * 13 % 100);
      double true_begin_j = gpu.TrueEnergyJ();
      if (!(*monitor)->Begin("w").ok()) state.SkipWithError("Begin failed");
      advance_ms(window_ms);
      StatusOr<Measurement> m = (*monitor)->End("w");
      if (!m.ok()) {
        state.SkipWithError(m.status().ToString().c_str());
        return;
      }
      double true_j = gpu.TrueEnergyJ() - true_begin_j;
      double error_j = std::abs(m->gpu_energy_j[0] - true_j);
      max_error_j = std::max(max_error_j, error_j);
      max_relative = std::max(max_relative, error_j / true_j);
      sum_error_j += error_j;
      ++windows;
    }
  }
  state.counters["mean_err_J"] = sum_error_j / windows;
  state.counters["max_err_J"] = max_error_j;
  state.counters["max_err_pct"] = 100.0 * max_relative;
}
BENCHMARK(BM_LowOverheadError)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000)->Iterations(1);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
