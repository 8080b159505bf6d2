// GpuDecorator: a Gpu that forwards every method to an inner Gpu, so that a
// decorator (DryRunGpu, zeusd::ZeusdGpu) overrides only what it changes and a
// backend such as NvmlGpu knows only its own library.
//
// Maintenance: every virtual method of Gpu is forwarded here. A method added
// to Gpu must be added here too, or a decorated GPU answers Gpu's default
// (kNotSupported) instead of its backend's.
//
// Thread-safety: as the inner Gpu (this class adds no state).

#ifndef ZEUS_SRC_DEVICE_GPU_DECORATOR_H_
#define ZEUS_SRC_DEVICE_GPU_DECORATOR_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

class GpuDecorator : public Gpu {
 public:
  // REQUIRES: inner != nullptr.
  explicit GpuDecorator(std::unique_ptr<Gpu> inner) : inner_(std::move(inner)) {}

  int index() const override { return inner_->index(); }
  StatusOr<std::string> Name() override { return inner_->Name(); }
  StatusOr<std::string> Architecture() override { return inner_->Architecture(); }
  StatusOr<std::string> Uuid() override { return inner_->Uuid(); }
  StatusOr<std::string> PciBusId() override { return inner_->PciBusId(); }
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override {
    return inner_->PowerLimitConstraintsMw();
  }
  StatusOr<uint32_t> DefaultPowerLimitMw() override { return inner_->DefaultPowerLimitMw(); }
  StatusOr<uint32_t> PowerLimitMw() override { return inner_->PowerLimitMw(); }
  StatusOr<uint32_t> EnforcedPowerLimitMw() override { return inner_->EnforcedPowerLimitMw(); }
  Status SetPowerLimitMw(uint32_t power_limit_mw) override {
    return inner_->SetPowerLimitMw(power_limit_mw);
  }
  StatusOr<bool> PersistenceMode() override { return inner_->PersistenceMode(); }
  Status SetPersistenceMode(bool enabled) override { return inner_->SetPersistenceMode(enabled); }
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override {
    return inner_->SetGpuLockedClocksMhz(min_mhz, max_mhz);
  }
  Status ResetGpuLockedClocks() override { return inner_->ResetGpuLockedClocks(); }
  Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override {
    return inner_->SetMemoryLockedClocksMhz(min_mhz, max_mhz);
  }
  Status ResetMemoryLockedClocks() override { return inner_->ResetMemoryLockedClocks(); }
  bool CanResetOneClockDomain() const override { return inner_->CanResetOneClockDomain(); }
  StatusOr<std::vector<uint32_t>> SupportedMemoryClocksMhz() override {
    return inner_->SupportedMemoryClocksMhz();
  }
  using Gpu::SupportedGraphicsClocksMhz;
  StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) override {
    return inner_->SupportedGraphicsClocksMhz(memory_clock_mhz);
  }
  StatusOr<std::vector<WorkloadPowerProfile>> WorkloadPowerProfiles() override {
    return inner_->WorkloadPowerProfiles();
  }
  StatusOr<uint64_t> TotalEnergyMj() override { return inner_->TotalEnergyMj(); }
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return inner_->EnergyCounterUpdatePeriod();
  }
  StatusOr<uint32_t> PowerMw() override { return inner_->PowerMw(); }
  StatusOr<uint32_t> DomainPowerMw(PowerDomain domain) override {
    return inner_->DomainPowerMw(domain);
  }
  StatusOr<int32_t> TemperatureC() override { return inner_->TemperatureC(); }

  // The wrapped Gpu (tests look through decorators to reach a backend's own
  // methods). Valid as long as this decorator.
  Gpu& inner() const { return *inner_; }

 private:
  const std::unique_ptr<Gpu> inner_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_DEVICE_GPU_DECORATOR_H_
