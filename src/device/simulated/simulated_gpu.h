// SimulatedGpu: a GPU that exists only in this process, for trying Zeus
// without one (ZEUS_FAKE_GPUS=N, see simulated_backend.h) and for tests.
//
// Load model: the GPU runs a training job in a fixed cycle of `period_s`: a
// compute phase of `busy_fraction` of it drawing `busy_w`, then an input
// phase drawing `light_w`. Board power is that demand capped at the power
// limit (a lower limit throttles the compute phase). The energy counter is
// the exact integral of that power (closed form per cycle, accumulated at
// every limit change), so counter differences and power x time agree.
// Temperature follows power: 30 C + 0.12 C/W. Limits and persistence mode
// live in a SimulatedGpuState that every Gpu object of the same simulated
// device shares, so a limit set through one handle of the process is seen
// by all of them (and by the power they report).
//
// Thread-safety: every method may be called concurrently (the state locks).

#ifndef ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_GPU_H_
#define ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_GPU_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "zeus/device/clock.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus::simulated {

// One simulated device's constants. Defaults: an A100-like 400 W board.
struct SimulatedGpuModel {
  std::string name = "Zeus Simulated GPU";
  std::string architecture = "Ampere";
  std::string uuid = "GPU-5a455553-0000-4000-8000-000000000000";
  std::string pci_bus_id = "0000:01:00.0";
  PowerLimitConstraints constraints{100'000, 400'000};
  uint32_t default_power_limit_mw = 400'000;
  double busy_w = 340.0;
  double light_w = 150.0;
  double period_s = 2.0;
  double busy_fraction = 0.8;
  // Where in its cycle the device is at time 0 (s), so devices differ.
  double phase_s = 0.0;
};

// The model of simulated device `physical_index` (0-based): the defaults with
// its own UUID, PCI bus, demand (+12 W per index) and phase.
SimulatedGpuModel ModelForIndex(int physical_index);

// The mutable state of one simulated device, shared by its Gpu handles.
class SimulatedGpuState {
 public:
  // `clock` must outlive this object. The energy counter starts at 0 J at
  // the clock's time of construction.
  SimulatedGpuState(Clock* clock, SimulatedGpuModel model);

  const SimulatedGpuModel& model() const { return model_; }
  uint32_t PowerLimitMw();
  // kInvalidArgument outside the model's constraints.
  Status SetPowerLimitMw(uint32_t power_limit_mw);
  bool PersistenceMode();
  void SetPersistenceMode(bool enabled);
  // Board power now, W.
  double PowerW();
  // Mean power over the last `window_s` at the current limit, W.
  double AveragePowerW(double window_s);
  // Energy since construction, J.
  double EnergyJ();

 private:
  double NowS();
  // Power at cycle time t (s since construction) under `limit_w`.
  double PowerAt(double t, double limit_w) const;
  // Integral of PowerAt from 0 to t under `limit_w`, J.
  double IntegralTo(double t, double limit_w) const;
  // Folds the energy up to now into energy_j_ (before the limit changes).
  void AccumulateLocked(double now_s);

  Clock* const clock_;
  const SimulatedGpuModel model_;
  const double origin_s_;
  std::mutex mu_;
  uint32_t power_limit_mw_;
  bool persistence_ = false;
  double energy_j_ = 0.0;             // Up to accumulated_until_s_.
  double accumulated_until_s_ = 0.0;  // Since origin_s_.
};

class SimulatedGpu final : public Gpu {
 public:
  SimulatedGpu(std::shared_ptr<SimulatedGpuState> state, int index);

  int index() const override { return index_; }
  StatusOr<std::string> Name() override { return state_->model().name; }
  StatusOr<std::string> Architecture() override { return state_->model().architecture; }
  StatusOr<std::string> Uuid() override { return state_->model().uuid; }
  StatusOr<std::string> PciBusId() override { return state_->model().pci_bus_id; }
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override {
    return state_->model().constraints;
  }
  StatusOr<uint32_t> DefaultPowerLimitMw() override {
    return state_->model().default_power_limit_mw;
  }
  StatusOr<uint32_t> PowerLimitMw() override { return state_->PowerLimitMw(); }
  StatusOr<uint32_t> EnforcedPowerLimitMw() override { return state_->PowerLimitMw(); }
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  StatusOr<bool> PersistenceMode() override { return state_->PersistenceMode(); }
  Status SetPersistenceMode(bool enabled) override;
  StatusOr<uint64_t> TotalEnergyMj() override;
  // Continuous: the counter is exact at every read.
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return std::chrono::nanoseconds(0);
  }
  StatusOr<uint32_t> PowerMw() override;
  // kDeviceInstant: power now; kDeviceAverage: the mean over the last 1 s;
  // kMemoryAverage: kNotSupported.
  StatusOr<uint32_t> DomainPowerMw(PowerDomain domain) override;
  StatusOr<int32_t> TemperatureC() override;

 private:
  std::shared_ptr<SimulatedGpuState> state_;
  const int index_;
};

}  // namespace zeus::simulated

#endif  // ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_GPU_H_
