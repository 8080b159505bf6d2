// Per-iteration latency percentiles for Google Benchmark counters.

#ifndef ZEUS_BENCH_MONITOR_LATENCY_STATS_H_
#define ZEUS_BENCH_MONITOR_LATENCY_STATS_H_

#include <algorithm>
#include <chrono>
#include <vector>

#include <benchmark/benchmark.h>

#include "zeus/monitor/energy_monitor.h"

namespace zeus::bench {

// Collects per-iteration wall times and reports p50/p99/max (us) as counters.
class LatencyStats {
 public:
  void Add(std::chrono::steady_clock::duration d) {
    us_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  void Report(benchmark::State& state) {
    if (us_.empty()) return;
    std::sort(us_.begin(), us_.end());
    auto at = [&](double q) {
      return us_[static_cast<size_t>(q * static_cast<double>(us_.size() - 1))];
    };
    state.counters["p50_us"] = at(0.5);
    state.counters["p99_us"] = at(0.99);
    state.counters["max_us"] = us_.back();
  }

 private:
  std::vector<double> us_;
};

// Times Begin+End of one window per iteration on the caller's thread and
// reports the latency counters. Stops with an error when a window fails.
inline void MeasureBeginEnd(benchmark::State& state, EnergyMonitor& monitor) {
  LatencyStats stats;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    Status begun = monitor.Begin("step");
    StatusOr<Measurement> m = monitor.End("step");
    stats.Add(std::chrono::steady_clock::now() - start);
    if (!begun.ok() || !m.ok()) {
      state.SkipWithError(begun.ok() ? m.status().ToString().c_str() : begun.ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(m->gpu_energy_j.data());
  }
  stats.Report(state);
}

}  // namespace zeus::bench

#endif  // ZEUS_BENCH_MONITOR_LATENCY_STATS_H_
