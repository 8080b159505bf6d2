// Deterministic fakes of Gpu, Cpu and Clock, for tests, benchmarks and the
// simulator. They behave like the real backends (units, ZEUS_DRY_RUN,
// kNotSupported when a feature is switched off) and add knobs to drive them.
//
// Thread-safety: all methods may be called concurrently.

#ifndef ZEUS_DEVICE_FAKE_H_
#define ZEUS_DEVICE_FAKE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zeus/device/clock.h"
#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"

namespace zeus {

// A clock that moves only when told. SleepFor advances it (no real sleep).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::nanoseconds start = std::chrono::seconds(1000))
      : now_ns_(start.count()) {}

  std::chrono::nanoseconds Now() override { return std::chrono::nanoseconds(now_ns_.load()); }
  double WallTimeS() override { return 1.7e9 + static_cast<double>(now_ns_.load()) / 1e9; }
  void SleepFor(std::chrono::nanoseconds d) override { Advance(d); }

  void Advance(std::chrono::nanoseconds d) { now_ns_ += d.count(); }
  void AdvanceSeconds(double s) {
    Advance(std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9)));
  }

 private:
  std::atomic<int64_t> now_ns_;
};

// The clock model of a FakeGpu (FakeGpuOptions::clock_model): the SM clock
// changes both a step's time and the board's power, so an optimizer over
// clocks sees real trade-offs. With f the effective clock (the locked one,
// else the highest) and r = f / highest:
//   step time   = compute_fraction / r + (1 - compute_fraction)  (x the time
//                 at the highest clock: compute-bound work scales with the
//                 clock, memory-bound work does not);
//   board power = static_power_w + (max_power_w - static_power_w) x r x v^2,
//                 v the voltage relative to the highest clock's, linear from
//                 min_voltage_fraction at the lowest supported clock to 1,
//                 capped at the power limit.
struct FakeClockModel {
  // SupportedGraphicsClocksMhz(), highest first (non-empty).
  std::vector<uint32_t> supported_mhz;
  // Share of a step's time at the highest clock that is compute-bound, [0, 1].
  double compute_fraction = 0.7;
  // Board power at the highest clock and the clock-independent part, in W.
  double max_power_w = 300.0;
  double static_power_w = 60.0;
  // Voltage at the lowest supported clock relative to the highest's, (0, 1].
  double min_voltage_fraction = 0.7;

  // The model's step-time factor and power (before the limit's cap) at `mhz`.
  double StepTimeFactor(uint32_t mhz) const;
  double PowerW(uint32_t mhz) const;
};

struct FakeGpuOptions {
  int index = 0;
  std::string name = "Fake GPU";
  std::string architecture = "Hopper";
  std::string uuid = "GPU-00000000-0000-0000-0000-000000000000";
  // PciBusId(). Empty: kNotSupported. Default: "0000:01:00.0".
  std::string pci_bus_id = "0000:01:00.0";
  PowerLimitConstraints constraints{100'000, 300'000};
  // Default: the maximum limit.
  uint32_t default_power_limit_mw = 300'000;
  // Initial management limit. Default: the default limit.
  uint32_t power_limit_mw = 300'000;
  // False makes TotalEnergyMj() return kNotSupported (pre-Volta behaviour).
  bool has_energy_counter = true;
  // The counter only moves at multiples of this period (NVML: ~100 ms), and
  // EnergyCounterUpdatePeriod() reports it. Zero = a continuous counter.
  std::chrono::nanoseconds energy_update_period{0};
  // Real (wall-clock) time each TotalEnergyMj() call blocks, to model NVML's
  // slow counter read. Zero = instant.
  std::chrono::nanoseconds energy_read_latency{0};
  // Board power in W as a function of the clock's time (s, as Clock::Now())
  // and the current limit (mW). Default: a constant 100 W.
  std::function<double(double time_s, uint32_t power_limit_mw)> power_w;
  // The exact integral of power_w from time 0 to time_s, in J, when known in
  // closed form (e.g. for bursts, whose jumps numerical integration blurs);
  // the energy counter then uses it (limit changes are not modelled).
  // Default: none (numerical integration).
  std::function<double(double time_s)> energy_j;
  // DomainPowerMw: kDeviceInstant is power_w at the clock's time;
  // kDeviceAverage its mean over the last `power_average_window` (NVML: ~1 s;
  // under bursts it differs from the instant value); kMemoryAverage
  // memory_power_fraction of that mean. False switches a domain off
  // (kNotSupported). The mean is taken with the current power limit.
  bool has_device_average = true;
  bool has_memory_average = true;
  std::chrono::nanoseconds power_average_window = std::chrono::seconds(1);
  double memory_power_fraction = 0.1;
  // TemperatureC(); nullopt: kNotSupported. Default: 45 C.
  std::optional<int32_t> temperature_c = 45;
  // When set, the GPU supports locked graphics clocks and, unless power_w is
  // set, draws the model's power (see FakeClockModel). Default: none (locked
  // clocks kNotSupported, as Gpu's default).
  std::optional<FakeClockModel> clock_model;
};

// The methods a test may make fail with InjectError.
enum class FakeGpuOp {
  kName,
  kArchitecture,
  kUuid,
  kConstraints,
  kDefaultPowerLimit,
  kPowerLimit,
  kEnforcedPowerLimit,
  kSetPowerLimit,
  kPersistenceMode,
  kSetPersistenceMode,
  kTotalEnergy,
  kPower,
  // DomainPowerMw (every domain; kPower also fails kDeviceInstant) and
  // TemperatureC.
  kDomainPower,
  kTemperature,
};

class FakeGpu final : public Gpu {
 public:
  // `clock` must outlive this object.
  FakeGpu(Clock* clock, FakeGpuOptions options);

  int index() const override { return options_.index; }
  StatusOr<std::string> Name() override;
  StatusOr<std::string> Architecture() override;
  StatusOr<std::string> Uuid() override;
  StatusOr<std::string> PciBusId() override;
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override;
  StatusOr<uint32_t> DefaultPowerLimitMw() override;
  StatusOr<uint32_t> PowerLimitMw() override;
  StatusOr<uint32_t> EnforcedPowerLimitMw() override;
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  StatusOr<bool> PersistenceMode() override;
  Status SetPersistenceMode(bool enabled) override;
  StatusOr<uint64_t> TotalEnergyMj() override;
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return options_.energy_update_period;
  }
  StatusOr<uint32_t> PowerMw() override;
  StatusOr<uint32_t> DomainPowerMw(PowerDomain domain) override;
  StatusOr<int32_t> TemperatureC() override;

  // Locked graphics clocks (with a clock_model; else kNotSupported). The
  // effective clock is max_mhz, which must lie within the supported range.
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetGpuLockedClocks() override;
  // The clock model's clocks at memory clock 0 (the current one); the model
  // has no memory clocks, so any other is kNotSupported.
  using Gpu::SupportedGraphicsClocksMhz;
  StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) override;
  // The clock the GPU runs at now, in MHz (0 without a clock model).
  uint32_t effective_clock_mhz() const;
  // A step's time at the effective clock relative to the highest clock (1
  // without a clock model).
  double StepTimeFactor() const;
  // Every lock successfully made (not in dry-run), as the locked max MHz; a
  // reset as 0.
  std::vector<uint32_t> locked_clock_history() const;

  // Makes `op` return `status` from now on (until ClearErrors). `status`
  // must not be OK.
  void InjectError(FakeGpuOp op, Status status);
  void ClearErrors();

  // Every limit successfully set (not in dry-run), in order.
  std::vector<uint32_t> power_limit_history() const;
  // The exact energy (J) the power curve has consumed since construction,
  // integrated up to the clock's current time.
  double TrueEnergyJ();
  // Number of TotalEnergyMj() calls so far.
  int64_t energy_reads() const { return energy_reads_.load(); }

 private:
  Status InjectedError(FakeGpuOp op) const;  // REQUIRES: mu_ held.
  double PowerWAt(double time_s) const;      // REQUIRES: mu_ held.
  // Mean of PowerWAt over [from_s, to_s] (Simpson). REQUIRES: mu_ held.
  double MeanPowerW(double from_s, double to_s) const;
  void IntegrateToNow();  // REQUIRES: mu_ held.

  Clock* const clock_;
  const FakeGpuOptions options_;
  mutable std::mutex mu_;
  uint32_t power_limit_mw_;
  bool persistence_mode_ = false;
  double integrated_until_s_;
  const std::chrono::nanoseconds start_time_;
  double energy_j_ = 0.0;
  std::vector<uint32_t> history_;
  std::map<FakeGpuOp, Status> errors_;
  std::atomic<int64_t> energy_reads_{0};
  // Locked graphics clock in MHz; 0: unlocked. Guarded by mu_.
  uint32_t locked_clock_mhz_ = 0;
  std::vector<uint32_t> clock_history_;  // Guarded by mu_.
};

// A CPU socket whose RAPL counters the test sets.
class FakeCpu final : public Cpu {
 public:
  explicit FakeCpu(int index, bool has_dram = true) : index_(index), has_dram_(has_dram) {}

  int index() const override { return index_; }
  StatusOr<uint64_t> PackageEnergyUj() override;
  StatusOr<uint64_t> DramEnergyUj() override;
  bool HasDram() const override { return has_dram_; }

  void AddEnergyUj(uint64_t package_uj, uint64_t dram_uj);
  // Makes both counters return `status` from now on (until ClearErrors).
  // `status` must not be OK.
  void InjectError(Status status);
  void ClearErrors();

 private:
  const int index_;
  const bool has_dram_;
  mutable std::mutex mu_;
  uint64_t package_uj_ = 0;
  uint64_t dram_uj_ = 0;
  Status error_;
};

}  // namespace zeus

#endif  // ZEUS_DEVICE_FAKE_H_
