// Energy measurement windows over GPUs and CPU sockets.
//
// A window opens with Begin(name) and closes with End(name), which returns
// the time and energy spent in between; windows are keyed by name and may nest
// and overlap freely. Cancel(name) drops an open window.
//
// NVML facts this leans on: the GPU energy counter (mJ, Volta and newer)
// moves only about every 100 ms, one read costs ~3 ms (p99 ~17 ms on H100)
// while an instant-power read costs ~0.3 us. Hence two modes:
//  - kExact: every boundary reads every GPU's counter, all GPUs concurrently
//    on a persistent pool of reader threads (one per GPU), so a boundary costs
//    about one read, not one per GPU.
//  - kLowOverhead: a background reader keeps the latest counter value of
//    each GPU; a boundary never waits on a counter read. It estimates the
//    counter at the boundary as the latest counter anchor plus the integral
//    of sampled instant power since that anchor. The anchor is the counter's
//    last value, timed at the middle of the two polls that saw it move, so
//    each boundary is off by at most max power x counter_poll_period / 2 and
//    a window by max power x counter_poll_period, whatever its length (e.g.
//    <= 4 J at 400 W with 10 ms polls: <= 10% of a 0.1 s window, <= 0.1% of
//    a 10 s one), plus the error of integrating sampled power, which spans
//    only the time since the latest anchor (about one update period): a
//    power reading biased by B watts adds at most B x ~0.11 s per boundary.
//    Create waits (at most two update periods) until every counter has been
//    seen to move once; before that an anchor is only timed to within an
//    update period. See docs/PERFORMANCE.md for measured errors.
//
// GPUs without an energy counter (TotalEnergyMj() is kNotSupported) are
// measured by trapezoid integration of instant-power samples (logged once at
// Create). CPU package and DRAM energy come from Cpu (RAPL) on the caller's
// thread.
//
// Thread-safety: all methods may be called concurrently from any thread;
// boundaries (Begin/End) from different threads are serialised.

#ifndef ZEUS_MONITOR_ENERGY_MONITOR_H_
#define ZEUS_MONITOR_ENERGY_MONITOR_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/device/clock.h"
#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

class WindowReporter;  // reporter.h

// How a GPU's energy in a Measurement was obtained.
enum class GpuEnergySource {
  // Difference of the NVML energy counter (exact mode).
  kCounter,
  // Low-overhead mode: counter anchor plus integrated instant power.
  kCounterPlusPower,
  // Trapezoid integration of instant-power samples (no energy counter).
  kPowerIntegration,
  // The window was shorter than the counter's update period and the energy
  // was approximated as mean(instant power at both boundaries) * elapsed
  // (only with EnergyMonitorOptions::approximate_short_windows).
  kInstantPowerApproximation,
};

// The result of one window. Vectors are indexed like the `gpus` and `cpus`
// given to EnergyMonitor::Create (position, not Gpu::index()).
struct Measurement {
  // Window name as given to Begin.
  std::string name;
  // Clock::Now() at Begin, in seconds (monotonic, arbitrary origin).
  double start_time_s = 0.0;
  // Clock::WallTimeS() at Begin: seconds since the Unix epoch (may jump).
  double start_wall_time_s = 0.0;
  // End time minus begin time, in seconds.
  double time_s = 0.0;
  // Energy per GPU, in J.
  std::vector<double> gpu_energy_j;
  // How each GPU's energy was obtained.
  std::vector<GpuEnergySource> gpu_energy_source;
  // True for GPUs measured by counter whose window was shorter than the
  // counter's update period (Gpu::EnergyCounterUpdatePeriod()): the value may be 0 J or one
  // update's worth regardless of what was consumed. Not set when approximated (see
  // gpu_energy_source).
  std::vector<bool> gpu_below_counter_resolution;
  // CPU package energy per socket, in J.
  std::vector<double> cpu_energy_j;
  // DRAM energy per socket, in J; 0 for sockets without a DRAM zone.
  std::vector<double> dram_energy_j;

  // Sum of gpu_energy_j.
  double TotalGpuEnergyJ() const;
  // True when any GPU's value is below counter resolution.
  bool AnyBelowCounterResolution() const;
};

// The readings an open window began with, as absolute device values.
// Vectors are indexed like Measurement's.
struct WindowBegin {
  // Clock::Now() at Begin, in seconds (monotonic, arbitrary origin).
  double start_time_s = 0.0;
  // Clock::WallTimeS() at Begin: seconds since the Unix epoch.
  double start_wall_time_s = 0.0;
  // Per GPU, in J: the energy counter's value for GPUs read by counter in
  // exact mode; the estimated counter value in kLowOverhead mode; the
  // instant power integrated since Create for GPUs without a counter.
  std::vector<double> gpu_energy_j;
  // Per socket, in J: the package and DRAM counters (0 without a DRAM zone).
  std::vector<double> cpu_energy_j;
  std::vector<double> dram_energy_j;
};

enum class EnergyMonitorMode { kExact, kLowOverhead };

struct EnergyMonitorOptions {
  // Called on the caller's thread right before each boundary timestamp (e.g.
  // torch.cuda.synchronize, so queued GPU work is attributed to the window).
  // Runs while boundaries are serialised: it must not call this monitor.
  // Default: none.
  std::function<void()> sync;
  // Default: kExact.
  EnergyMonitorMode mode = EnergyMonitorMode::kExact;
  // Receives every measurement a successful End returns (e.g. a CSV log:
  // NewCsvWindowReporter in reporter.h); its Open runs in Create, and its
  // errors fail Create or End. May be shared by several monitors. Default:
  // none.
  std::shared_ptr<WindowReporter> window_reporter;
  // Replace the counter difference of a window shorter than a GPU's
  // Gpu::EnergyCounterUpdatePeriod() by mean(instant power at both ends) *
  // elapsed.
  // Default: off (flag only).
  bool approximate_short_windows = false;
  // Period of the background power sampler (one thread for all GPUs), used
  // for GPUs without an energy counter and in kLowOverhead mode. Zero: no
  // background thread; power is sampled only at boundaries and by SampleNow()
  // (deterministic tests). Default: 10 ms.
  std::chrono::nanoseconds power_sample_period = std::chrono::milliseconds(10);
  // kLowOverhead only: period at which the background readers (one thread
  // per GPU) poll the GPU energy counters; bounds the error (see above).
  // Zero: no background readers; counters are read only by SampleNow()
  // (deterministic tests). Default: 10 ms.
  std::chrono::nanoseconds counter_poll_period = std::chrono::milliseconds(10);
};

class EnergyMonitor {
 public:
  // Creates a monitor over `gpus` and `cpus` (either may be empty, not both).
  // Reads each GPU's counter once to learn whether it has one. `gpus`,
  // `cpus` and `clock` must outlive the monitor. Returns kInvalidArgument for
  // nothing to measure or null pointers, and the device error (with the GPU's
  // position as context) for a GPU whose counter read fails with anything
  // but kNotSupported. In kLowOverhead mode with background readers, blocks
  // until every counter has moved once (at most 2 x the longest
  // Gpu::EnergyCounterUpdatePeriod() + 2 x counter_poll_period).
  static StatusOr<std::unique_ptr<EnergyMonitor>> Create(std::vector<Gpu*> gpus,
                                                         std::vector<Cpu*> cpus, Clock* clock,
                                                         EnergyMonitorOptions options);

  EnergyMonitor(const EnergyMonitor&) = delete;
  EnergyMonitor& operator=(const EnergyMonitor&) = delete;
  // Stops and joins every background thread.
  virtual ~EnergyMonitor() = default;

  // Opens window `name`. kAlreadyExists when a window of that name is open;
  // kInvalidArgument for an empty name; a device read error (with context)
  // leaves no window open.
  virtual Status Begin(std::string_view name) = 0;
  // Closes window `name` and returns its measurement. kNotFound when no such
  // window is open. A device read error (e.g. a GPU lost mid-window) is
  // returned with the window and GPU as context; the window is closed and
  // other windows stay usable.
  virtual StatusOr<Measurement> End(std::string_view name) = 0;
  // Drops open window `name` without measuring. kNotFound when not open.
  virtual Status Cancel(std::string_view name) = 0;

  // True when window `name` is open.
  virtual bool IsOpen(std::string_view name) const = 0;
  // The readings window `name` began with; reads no device. kNotFound when
  // not open; kNotSupported for monitors that keep no readings (this
  // default).
  virtual StatusOr<WindowBegin> BeginOf(std::string_view name) const;
  // True per GPU position when that GPU has no energy counter and is measured
  // by power integration.
  virtual std::vector<bool> GpusIntegratingPower() const = 0;

  // Samples instant power of every GPU now and, in kLowOverhead mode, reads
  // every energy counter now, on the calling thread. The background threads
  // do this periodically; tests with FakeClock and zero periods call it.
  virtual Status SampleNow() = 0;

 protected:
  EnergyMonitor() = default;
};

}  // namespace zeus

#endif  // ZEUS_MONITOR_ENERGY_MONITOR_H_
