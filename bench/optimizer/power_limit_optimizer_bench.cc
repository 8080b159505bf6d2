// Cost of PowerLimitOptimizer::OnStepBegin() on a step where nothing changes
// (target: < 100 ns), and the time a training job spends profiling at the
// default options on an H100-like GPU (limits 700 W down to 200 W in 25 W
// steps: 21 limits), as a function of the step duration.
//
// Run: build/bench/optimizer/power_limit_optimizer_bench

#include <cmath>
#include <memory>

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include "zeus/device/fake.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/power_limit/power_limit_optimizer.h"
#include "zeus/util/units.h"

namespace zeus {
namespace {

// An H100-like fake: 200-700 W, power drawn = 90% of the limit.
struct Rig {
  FakeClock clock;
  std::unique_ptr<FakeGpu> gpu;
  std::unique_ptr<EnergyMonitor> monitor;
  std::unique_ptr<PowerLimitOptimizer> opt;

  explicit Rig(PowerLimitOptimizerOptions options) {
    spdlog::set_level(spdlog::level::warn);
    FakeGpuOptions o;
    o.constraints = {200'000, 700'000};
    o.default_power_limit_mw = 700'000;
    o.power_limit_mw = 700'000;
    o.power_w = [](double, uint32_t limit_mw) { return 0.9 * MwToW(limit_mw); };
    gpu = std::make_unique<FakeGpu>(&clock, o);
    EnergyMonitorOptions mo;
    mo.power_sample_period = std::chrono::nanoseconds(0);
    mo.counter_poll_period = std::chrono::nanoseconds(0);
    monitor = EnergyMonitor::Create({gpu.get()}, {}, &clock, mo).value();
    options.restore_on_signal = false;
    opt = PowerLimitOptimizer::Create({gpu.get()}, monitor.get(), &clock, options).value();
  }
};

// Mid-stretch: the measurement of the first limit never ends.
void BM_OnStepBeginMidStretch(benchmark::State& state) {
  PowerLimitOptimizerOptions o;
  o.wait_steps = 0;
  o.warmup_steps = 0;
  o.measure_steps = int64_t{1} << 60;
  Rig rig(o);
  for (int i = 0; i < 3; ++i) (void)rig.opt->OnStepBegin();
  if (rig.opt->phase() != PowerLimitOptimizer::Phase::kMeasuring) {
    state.SkipWithError("not measuring");
  }
  for (auto _ : state) {
    Status s = rig.opt->OnStepBegin();
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_OnStepBeginMidStretch);

// Mid-stretch past measure_steps but short of min_measure_time: each step
// reads the (real, steady) clock to decide whether the stretch may end.
void BM_OnStepBeginExtendingStretch(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  FakeGpuOptions go;
  go.constraints = {200'000, 700'000};
  go.default_power_limit_mw = 700'000;
  go.power_limit_mw = 700'000;
  FakeGpu gpu(RealClock(), go);
  EnergyMonitorOptions mo;
  mo.power_sample_period = std::chrono::nanoseconds(0);
  mo.counter_poll_period = std::chrono::nanoseconds(0);
  auto monitor = EnergyMonitor::Create({&gpu}, {}, RealClock(), mo).value();
  PowerLimitOptimizerOptions o;
  o.wait_steps = 0;
  o.warmup_steps = 0;
  o.measure_steps = 1;
  o.min_measure_time = std::chrono::hours(24);
  o.restore_on_signal = false;
  auto opt = PowerLimitOptimizer::Create({&gpu}, monitor.get(), RealClock(), o).value();
  for (int i = 0; i < 3; ++i) (void)opt->OnStepBegin();
  if (opt->phase() != PowerLimitOptimizer::Phase::kMeasuring) state.SkipWithError("not measuring");
  for (auto _ : state) {
    Status s = opt->OnStepBegin();
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_OnStepBeginExtendingStretch);

// After profiling: the optimum is pinned.
void BM_OnStepBeginDone(benchmark::State& state) {
  PowerLimitOptimizerOptions o;
  o.min_measure_time = std::chrono::nanoseconds(0);
  Rig rig(o);
  while (rig.opt->phase() != PowerLimitOptimizer::Phase::kDone) {
    (void)rig.opt->OnStepBegin();
    rig.clock.AdvanceSeconds(0.05);
  }
  for (auto _ : state) {
    Status s = rig.opt->OnStepBegin();
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_OnStepBeginDone);

// Simulated: one training step lasts range(0) ms at every limit. Reports the
// time from the first step until the optimum is pinned, with the default
// options, and its share of a 1-hour job.
void BM_ProfilingTimeDefaultOptions(benchmark::State& state) {
  double step_s = static_cast<double>(state.range(0)) / 1000.0;
  double profiling_s = 0;
  int64_t steps = 0;
  for (auto _ : state) {
    Rig rig(PowerLimitOptimizerOptions{});
    double start_s = ToSeconds(rig.clock.Now());
    steps = 0;
    while (rig.opt->phase() != PowerLimitOptimizer::Phase::kDone) {
      (void)rig.opt->OnStepBegin();
      rig.clock.AdvanceSeconds(step_s);
      ++steps;
    }
    // The step that pinned the optimum ran at the optimum.
    profiling_s = ToSeconds(rig.clock.Now()) - start_s - step_s;
    if (rig.opt->power_limits_mw().size() != 21) state.SkipWithError("expected 21 limits");
  }
  state.counters["step_ms"] = static_cast<double>(state.range(0));
  state.counters["profiling_s"] = profiling_s;
  state.counters["profiling_steps"] = static_cast<double>(steps - 1);
  state.counters["share_of_1h_pct"] = 100.0 * profiling_s / 3600.0;
}
BENCHMARK(BM_ProfilingTimeDefaultOptions)
    ->Arg(10)
    ->Arg(50)
    ->Arg(100)
    ->Arg(250)
    ->Arg(500)
    ->Arg(1000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
