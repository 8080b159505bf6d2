// Power timelines of several GPUs, one per power domain (instant, ~1 s
// average, memory; see PowerDomain in zeus/device/gpu.h), sampled by ONE
// background thread, and, optionally, the GPUs' energy counters sampled
// beside them by one reader thread per GPU.
//
// Only changes are kept: a run of equal samples is stored as its first and
// last point, so the trapezoid over the stored points equals the trapezoid
// over every sample taken. Memory is bounded: each timeline keeps at most
// PowerMonitorOptions::max_points_per_gpu points (16 bytes each), and the
// counter record as many; beyond that the oldest are dropped, and queries
// reaching before the oldest kept point fail with kNotFound.
//
// Energy between two times (CounterEnergyJ) on GPUs with an energy counter
// comes from the counter, not from a power integral, so it does not depend
// on the domain or on how bursty the load is. NVML's counter moves only
// about every 100 ms; each move is timed at the middle of the two reads that
// saw it (within half a counter poll period), and the energy at a time
// between two moves is interpolated along the instant-power timeline (or
// linearly in time when the instant domain is not sampled). Past the last
// move, the instant-power integral carries the last counter value forward.
//
// Thread-safety: all methods may be called concurrently from any thread.
// Fork: the background threads exist only in the process that created the
// monitor; in a forked child, queries answer from what was recorded before
// the fork and SampleOnce still works.

#ifndef ZEUS_MONITOR_POWER_MONITOR_H_
#define ZEUS_MONITOR_POWER_MONITOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
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
  // Bound on stored points per GPU and timeline (>= 4). Default: 65536
  // (1 MiB per GPU and domain), i.e. at least 109 minutes at 100 ms even when
  // power changes every sample.
  size_t max_points_per_gpu = 65536;
  // The domains sampled, each GPU must support every one (Create fails with
  // the GPU's kNotSupported otherwise). Empty: every domain the first GPU
  // supports. Default: device_instant only.
  std::vector<PowerDomain> domains = {PowerDomain::kDeviceInstant};
  // Also sample the energy counter of every GPU that has one, every
  // counter_period (one reader thread per GPU, since a read may take
  // milliseconds), for CounterEnergyJ. Zero period: the counter is read only
  // by SampleOnce. Default: off, 10 ms.
  bool sample_energy_counters = false;
  std::chrono::nanoseconds counter_period = std::chrono::milliseconds(10);
};

class PowerMonitor {
 public:
  // Monitors `gpus` (positions in this vector index the queries). `gpus` and
  // `clock` must outlive the monitor. Starts the sampling threads when their
  // periods are > 0, after taking a first sample. kInvalidArgument for no
  // GPUs, null pointers, max_points_per_gpu < 4, a duplicate domain or a
  // negative period; kNotSupported (naming the GPU and domain) for a domain
  // some GPU lacks, or, with `domains` empty, when the first GPU has none.
  static StatusOr<std::unique_ptr<PowerMonitor>> Create(std::vector<Gpu*> gpus, Clock* clock,
                                                        PowerMonitorOptions options);
  // Stops and joins the sampling threads.
  ~PowerMonitor();
  PowerMonitor(const PowerMonitor&) = delete;
  PowerMonitor& operator=(const PowerMonitor&) = delete;

  // Reads every sampled domain of every GPU now and records it (and, when
  // counters are sampled, every counter). A failed read records nothing for
  // that GPU and domain and is returned (first error, with the GPU position
  // as context); the others are still sampled.
  Status SampleOnce();

  size_t num_gpus() const { return gpus_.size(); }
  // The sampled domains, in the order of options.domains (or kAllPowerDomains).
  const std::vector<PowerDomain>& domains() const { return domains_; }
  bool Samples(PowerDomain domain) const;
  // True when GPU `gpu` has an energy counter that is being sampled.
  bool HasCounter(size_t gpu) const;

  // The stored points of `domain` of GPU `gpu` with start <= time <= end,
  // oldest first. kInvalidArgument for a bad position, a domain not sampled
  // or end < start.
  StatusOr<std::vector<PowerSample>> Timeline(size_t gpu, PowerDomain domain,
                                              std::chrono::nanoseconds start,
                                              std::chrono::nanoseconds end) const;
  // The first sampled domain's timeline.
  StatusOr<std::vector<PowerSample>> Timeline(size_t gpu, std::chrono::nanoseconds start,
                                              std::chrono::nanoseconds end) const;

  // Energy of GPU `gpu` between `start` and `end`, in J: trapezoid over the
  // stored points of `domain`, linearly interpolated at both ends; past the
  // newest point the last value is held. kNotFound when no point is stored
  // at or before `start` (not sampled yet, or dropped by the memory bound);
  // kInvalidArgument for a bad position, a domain not sampled or end < start.
  StatusOr<double> EnergyJ(size_t gpu, PowerDomain domain, std::chrono::nanoseconds start,
                           std::chrono::nanoseconds end) const;
  // The first sampled domain's integral.
  StatusOr<double> EnergyJ(size_t gpu, std::chrono::nanoseconds start,
                           std::chrono::nanoseconds end) const;

  // Energy of GPU `gpu` between `start` and `end` from its energy counter
  // samples, in J (see the file comment). kFailedPrecondition when the GPU's
  // counter is not sampled (no counter, or sample_energy_counters off);
  // kNotFound when neither a counter sample nor a power point covers
  // `start`; kInvalidArgument as EnergyJ.
  StatusOr<double> CounterEnergyJ(size_t gpu, std::chrono::nanoseconds start,
                                  std::chrono::nanoseconds end) const;

  // Energy of GPU `gpu` from its first kept point of the first sampled
  // domain to `time`, in J, on the same terms as EnergyJ. Differences of two
  // values are window energies, even when the points in between were
  // dropped by the memory bound.
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
  using Points = std::deque<Point>;
  // A move of an energy counter: the value, and the time it was taken.
  struct CounterMove {
    std::chrono::nanoseconds time;
    uint64_t energy_mj;
  };
  struct CounterState {
    bool has_counter = false;
    bool read_once = false;
    // True while `moves` holds only the first read, untimed.
    bool provisional = false;
    std::chrono::nanoseconds last_read_time{0};
    uint64_t last_read_mj = 0;
    std::deque<CounterMove> moves;
  };

  PowerMonitor(std::vector<Gpu*> gpus, Clock* clock, PowerMonitorOptions options,
               std::vector<PowerDomain> domains, std::vector<bool> has_counter);
  // Samples every domain of every GPU; the first error. REQUIRES: mu_ held.
  Status SampleDomainsLocked();
  // REQUIRES: mu_ held.
  void Record(Points& points, std::chrono::nanoseconds time, uint32_t power_mw);
  // REQUIRES: mu_ held.
  StatusOr<double> CumulativeLocked(size_t gpu, size_t domain, std::chrono::nanoseconds time) const;
  // The counter-based cumulative energy at `time`, in J. REQUIRES: mu_ held.
  StatusOr<double> CounterCumulativeLocked(size_t gpu, std::chrono::nanoseconds time) const;
  // Reads GPU `gpu`'s counter and records a move. Thread-safe.
  Status SampleCounter(size_t gpu);
  Status CheckGpu(size_t gpu) const;
  StatusOr<size_t> DomainSlot(PowerDomain domain) const;
  void Run();
  void RunCounter(size_t gpu);

  const std::vector<Gpu*> gpus_;
  Clock* const clock_;
  const PowerMonitorOptions options_;
  const std::vector<PowerDomain> domains_;
  // Slot of the instant domain in domains_, when sampled.
  std::optional<size_t> instant_slot_;

  mutable std::mutex mu_;
  // timelines_[gpu][slot of the domain in domains_]. Guarded by mu_.
  std::vector<std::vector<Points>> timelines_;
  std::vector<CounterState> counters_;  // Guarded by mu_.
  Status last_error_;                   // Guarded by mu_.
  bool stop_ = false;                   // Guarded by mu_.
  // Leaked in a forked child: destroying a condition variable that the
  // parent's threads wait on blocks forever (glibc waits for its waiters).
  std::unique_ptr<std::condition_variable> stop_cv_ = std::make_unique<std::condition_variable>();
  std::thread thread_;
  std::vector<std::thread> counter_threads_;
  // The process that started the threads (a forked child must not join them).
  const int owner_pid_;
  // Holds mu_ across fork() (src/monitor/fork_guard.h).
  std::shared_ptr<void> fork_guard_;
};

}  // namespace zeus

#endif  // ZEUS_MONITOR_POWER_MONITOR_H_
