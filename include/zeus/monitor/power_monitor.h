// Instant-power timelines of several GPUs, sampled by ONE background thread.
//
// Only changes are kept: a run of equal samples is stored as its first and
// last point, so the trapezoid over the stored points equals the trapezoid
// over every sample taken. Memory is bounded: each GPU keeps at most
// PowerMonitorOptions::max_points_per_gpu points (16 bytes each); beyond
// that the oldest are dropped, and queries reaching before the oldest kept
// point fail with kNotFound.
//
// Thread-safety: all methods may be called concurrently from any thread.

#ifndef ZEUS_MONITOR_POWER_MONITOR_H_
#define ZEUS_MONITOR_POWER_MONITOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "zeus/device/clock.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

// One stored point of a power timeline.
struct PowerSample {
  // Clock::Now() of the sample.
  std::chrono::nanoseconds time{0};
  uint32_t power_mw = 0;
};

struct PowerMonitorOptions {
  // Sampling period of the background thread (real time). Zero: no thread;
  // samples are taken only by SampleOnce(). Default: 100 ms.
  std::chrono::nanoseconds period = std::chrono::milliseconds(100);
  // Bound on stored points per GPU (>= 4). Default: 65536 (1 MiB per GPU),
  // i.e. at least 109 minutes at 100 ms even when power changes every sample.
  size_t max_points_per_gpu = 65536;
};

class PowerMonitor {
 public:
  // Monitors `gpus` (positions in this vector index the queries). `gpus` and
  // `clock` must outlive the monitor. Starts the sampling thread when
  // options.period > 0, after taking a first sample. kInvalidArgument for no
  // GPUs, null pointers or max_points_per_gpu < 4.
  static StatusOr<std::unique_ptr<PowerMonitor>> Create(std::vector<Gpu*> gpus, Clock* clock,
                                                        PowerMonitorOptions options);
  // Stops and joins the sampling thread.
  ~PowerMonitor();
  PowerMonitor(const PowerMonitor&) = delete;
  PowerMonitor& operator=(const PowerMonitor&) = delete;

  // Reads the instant power of every GPU now and records it. A failed read
  // records nothing for that GPU and is returned (first error, with the GPU
  // position as context); the other GPUs are still sampled.
  Status SampleOnce();

  size_t num_gpus() const { return gpus_.size(); }

  // The stored points of GPU `gpu` with start <= time <= end, oldest first.
  // kInvalidArgument for a bad position or end < start.
  StatusOr<std::vector<PowerSample>> Timeline(size_t gpu, std::chrono::nanoseconds start,
                                              std::chrono::nanoseconds end) const;

  // Energy of GPU `gpu` between `start` and `end`, in J: trapezoid over the
  // stored points, linearly interpolated at both ends; past the newest point
  // the last value is held. kNotFound when no point is stored at or before
  // `start` (not sampled yet, or dropped by the memory bound);
  // kInvalidArgument for a bad position or end < start.
  StatusOr<double> EnergyJ(size_t gpu, std::chrono::nanoseconds start,
                           std::chrono::nanoseconds end) const;

  // Energy of GPU `gpu` from its first kept point to `time`, in J, on the
  // same terms as EnergyJ. Differences of two values are window energies,
  // even when the points in between were dropped by the memory bound.
  StatusOr<double> CumulativeEnergyJ(size_t gpu, std::chrono::nanoseconds time) const;

  // The status of the last background sample (OK before any failure).
  Status last_error() const;

 private:
  struct Point {
    std::chrono::nanoseconds time;
    uint32_t power_mw;
    // Energy from the first point ever recorded to this one, in J.
    double cumulative_j;
  };

  PowerMonitor(std::vector<Gpu*> gpus, Clock* clock, PowerMonitorOptions options);
  void Record(size_t gpu, std::chrono::nanoseconds time, uint32_t power_mw);  // REQUIRES: mu_.
  // REQUIRES: mu_ held.
  StatusOr<double> CumulativeLocked(size_t gpu, std::chrono::nanoseconds time) const;
  Status CheckGpu(size_t gpu) const;
  void Run();

  const std::vector<Gpu*> gpus_;
  Clock* const clock_;
  const PowerMonitorOptions options_;

  mutable std::mutex mu_;
  std::vector<std::deque<Point>> timelines_;  // Guarded by mu_.
  Status last_error_;                         // Guarded by mu_.
  bool stop_ = false;                         // Guarded by mu_.
  std::condition_variable stop_cv_;
  std::thread thread_;
};

}  // namespace zeus

#endif  // ZEUS_MONITOR_POWER_MONITOR_H_
