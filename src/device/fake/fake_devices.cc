#include <algorithm>
#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "zeus/device/fake.h"
#include "zeus/util/env.h"
#include "zeus/util/units.h"

namespace zeus {

FakeGpu::FakeGpu(Clock* clock, FakeGpuOptions options)
    : clock_(clock),
      options_(std::move(options)),
      power_limit_mw_(options_.power_limit_mw),
      integrated_until_s_(ToSeconds(clock->Now())),
      start_time_(clock->Now()) {}

Status FakeGpu::InjectedError(FakeGpuOp op) const {
  auto it = errors_.find(op);
  return it == errors_.end() ? Status::Ok() : it->second;
}

double FakeGpu::PowerWAt(double time_s) const {
  if (options_.power_w) return options_.power_w(time_s, power_limit_mw_);
  if (options_.clock_model) {
    const FakeClockModel& m = *options_.clock_model;
    const uint32_t mhz = locked_clock_mhz_ != 0 ? locked_clock_mhz_ : m.supported_mhz.front();
    return std::min(m.PowerW(mhz), MwToW(power_limit_mw_));
  }
  return 100.0;
}

void FakeGpu::IntegrateToNow() {
  double now_s = ToSeconds(clock_->Now());
  double span_s = now_s - integrated_until_s_;
  if (span_s <= 0) return;
  // Composite Simpson's rule with an even number of ~0.5 ms steps.
  int64_t steps = std::clamp<int64_t>(static_cast<int64_t>(span_s / 5e-4), 2, 2'000'000);
  if (steps % 2 == 1) ++steps;
  double h = span_s / static_cast<double>(steps);
  double sum = PowerWAt(integrated_until_s_) + PowerWAt(now_s);
  for (int64_t i = 1; i < steps; ++i) {
    sum += (i % 2 == 1 ? 4.0 : 2.0) * PowerWAt(integrated_until_s_ + static_cast<double>(i) * h);
  }
  energy_j_ += sum * h / 3.0;
  integrated_until_s_ = now_s;
}

StatusOr<std::string> FakeGpu::Name() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kName));
  return options_.name;
}

StatusOr<std::string> FakeGpu::Architecture() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kArchitecture));
  return options_.architecture;
}

StatusOr<std::string> FakeGpu::Uuid() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kUuid));
  return options_.uuid;
}

StatusOr<std::string> FakeGpu::PciBusId() {
  if (options_.pci_bus_id.empty()) return Gpu::PciBusId();
  return options_.pci_bus_id;
}

StatusOr<PowerLimitConstraints> FakeGpu::PowerLimitConstraintsMw() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kConstraints));
  return options_.constraints;
}

StatusOr<uint32_t> FakeGpu::DefaultPowerLimitMw() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kDefaultPowerLimit));
  return options_.default_power_limit_mw;
}

StatusOr<uint32_t> FakeGpu::PowerLimitMw() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kPowerLimit));
  return power_limit_mw_;
}

StatusOr<uint32_t> FakeGpu::EnforcedPowerLimitMw() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kEnforcedPowerLimit));
  return power_limit_mw_;
}

Status FakeGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kSetPowerLimit));
  if (power_limit_mw < options_.constraints.min_mw ||
      power_limit_mw > options_.constraints.max_mw) {
    return InvalidArgumentError("fake GPU " + std::to_string(options_.index) + ": power limit " +
                                std::to_string(power_limit_mw) + " mW outside [" +
                                std::to_string(options_.constraints.min_mw) + ", " +
                                std::to_string(options_.constraints.max_mw) + "] mW");
  }
  if (IsDryRun()) {
    spdlog::info("[dry run] fake GPU {}: would set power limit to {} mW", options_.index,
                 power_limit_mw);
    return Status::Ok();
  }
  IntegrateToNow();
  power_limit_mw_ = power_limit_mw;
  history_.push_back(power_limit_mw);
  return Status::Ok();
}

StatusOr<bool> FakeGpu::PersistenceMode() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kPersistenceMode));
  return persistence_mode_;
}

Status FakeGpu::SetPersistenceMode(bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kSetPersistenceMode));
  if (IsDryRun()) {
    spdlog::info("[dry run] fake GPU {}: would set persistence mode {}", options_.index,
                 enabled ? "on" : "off");
    return Status::Ok();
  }
  persistence_mode_ = enabled;
  return Status::Ok();
}

StatusOr<uint64_t> FakeGpu::TotalEnergyMj() {
  ++energy_reads_;
  if (options_.energy_read_latency.count() > 0) {
    std::this_thread::sleep_for(options_.energy_read_latency);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kTotalEnergy));
  if (!options_.has_energy_counter) {
    return NotSupportedError("fake GPU " + std::to_string(options_.index) +
                             ": total energy counter not supported");
  }
  if (options_.energy_j) {
    int64_t now_ns = clock_->Now().count();
    int64_t period_ns = options_.energy_update_period.count();
    if (period_ns > 0) now_ns -= now_ns % period_ns;
    const double start_s = ToSeconds(start_time_);
    return static_cast<uint64_t>(
        std::max(0.0, options_.energy_j(NsToS(now_ns)) - options_.energy_j(start_s)) * 1e3);
  }
  if (options_.energy_update_period.count() <= 0) {
    IntegrateToNow();
    return static_cast<uint64_t>(energy_j_ * 1e3);
  }
  // Report the energy at the last counter update, as NVML does.
  int64_t period_ns = options_.energy_update_period.count();
  int64_t now_ns = clock_->Now().count();
  double update_s = NsToS(now_ns - now_ns % period_ns);
  IntegrateToNow();
  double energy_j = energy_j_;
  // Subtract what was consumed since the last update (trapezoid is enough
  // for the sub-period piece).
  double now_s = NsToS(now_ns);
  if (now_s > update_s) {
    energy_j -= 0.5 * (PowerWAt(update_s) + PowerWAt(now_s)) * (now_s - update_s);
  }
  return static_cast<uint64_t>(std::max(0.0, energy_j) * 1e3);
}

StatusOr<uint32_t> FakeGpu::PowerMw() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kPower));
  return static_cast<uint32_t>(std::lround(PowerWAt(ToSeconds(clock_->Now())) * 1e3));
}

double FakeGpu::MeanPowerW(double from_s, double to_s) const {
  double span_s = to_s - from_s;
  if (span_s <= 0) return PowerWAt(to_s);
  int64_t steps = std::clamp<int64_t>(static_cast<int64_t>(span_s / 5e-4), 2, 200'000);
  if (steps % 2 == 1) ++steps;
  double h = span_s / static_cast<double>(steps);
  double sum = PowerWAt(from_s) + PowerWAt(to_s);
  for (int64_t i = 1; i < steps; ++i) {
    sum += (i % 2 == 1 ? 4.0 : 2.0) * PowerWAt(from_s + static_cast<double>(i) * h);
  }
  return sum * h / 3.0 / span_s;
}

StatusOr<uint32_t> FakeGpu::DomainPowerMw(PowerDomain domain) {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kDomainPower));
  // The fake's PowerMw() is its instant power: it fails alike.
  if (domain == PowerDomain::kDeviceInstant) ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kPower));
  const double now_s = ToSeconds(clock_->Now());
  const double from_s = now_s - ToSeconds(options_.power_average_window);
  double power_w = 0.0;
  switch (domain) {
    case PowerDomain::kDeviceInstant:
      power_w = PowerWAt(now_s);
      break;
    case PowerDomain::kDeviceAverage:
      if (!options_.has_device_average) break;
      power_w = MeanPowerW(from_s, now_s);
      break;
    case PowerDomain::kMemoryAverage:
      if (!options_.has_memory_average) break;
      power_w = options_.memory_power_fraction * MeanPowerW(from_s, now_s);
      break;
  }
  if ((domain == PowerDomain::kDeviceAverage && !options_.has_device_average) ||
      (domain == PowerDomain::kMemoryAverage && !options_.has_memory_average)) {
    return NotSupportedError("fake GPU " + std::to_string(options_.index) + ": power domain " +
                             PowerDomainName(domain) + " not supported");
  }
  return static_cast<uint32_t>(std::lround(power_w * 1e3));
}

StatusOr<int32_t> FakeGpu::TemperatureC() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(InjectedError(FakeGpuOp::kTemperature));
  if (!options_.temperature_c.has_value()) {
    return NotSupportedError("fake GPU " + std::to_string(options_.index) +
                             ": temperature not supported");
  }
  return *options_.temperature_c;
}

void FakeGpu::InjectError(FakeGpuOp op, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  errors_[op] = std::move(status);
}

void FakeGpu::ClearErrors() {
  std::lock_guard<std::mutex> lock(mu_);
  errors_.clear();
}

std::vector<uint32_t> FakeGpu::power_limit_history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

double FakeGpu::TrueEnergyJ() {
  std::lock_guard<std::mutex> lock(mu_);
  IntegrateToNow();
  return energy_j_;
}

// ---- Clock model ----

double FakeClockModel::StepTimeFactor(uint32_t mhz) const {
  const double r = static_cast<double>(mhz) / static_cast<double>(supported_mhz.front());
  return compute_fraction / r + (1.0 - compute_fraction);
}

double FakeClockModel::PowerW(uint32_t mhz) const {
  const double highest = supported_mhz.front();
  const double lowest = supported_mhz.back();
  const double r = static_cast<double>(mhz) / highest;
  const double span = highest - lowest;
  const double v = span > 0 ? min_voltage_fraction + (1.0 - min_voltage_fraction) *
                                                         (static_cast<double>(mhz) - lowest) / span
                            : 1.0;
  return static_power_w + (max_power_w - static_power_w) * r * v * v;
}

Status FakeGpu::SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  if (!options_.clock_model) return Gpu::SetGpuLockedClocksMhz(min_mhz, max_mhz);
  const std::vector<uint32_t>& supported = options_.clock_model->supported_mhz;
  if (min_mhz > max_mhz || min_mhz < supported.back() || max_mhz > supported.front()) {
    return InvalidArgumentError(
        fmt::format("fake GPU {}: locked clocks {}-{} MHz: outside [{}, {}] MHz or min above max",
                    options_.index, min_mhz, max_mhz, supported.back(), supported.front()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (IsDryRun()) {
    spdlog::info("[dry run] fake GPU {}: would lock the graphics clocks to {}-{} MHz",
                 options_.index, min_mhz, max_mhz);
    return Status::Ok();
  }
  IntegrateToNow();
  locked_clock_mhz_ = max_mhz;
  clock_history_.push_back(max_mhz);
  return Status::Ok();
}

Status FakeGpu::ResetGpuLockedClocks() {
  if (!options_.clock_model) return Gpu::ResetGpuLockedClocks();
  std::lock_guard<std::mutex> lock(mu_);
  if (IsDryRun()) {
    spdlog::info("[dry run] fake GPU {}: would unlock the graphics clocks", options_.index);
    return Status::Ok();
  }
  IntegrateToNow();
  locked_clock_mhz_ = 0;
  clock_history_.push_back(0);
  return Status::Ok();
}

StatusOr<std::vector<uint32_t>> FakeGpu::SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) {
  if (!options_.clock_model) return Gpu::SupportedGraphicsClocksMhz(memory_clock_mhz);
  if (memory_clock_mhz != 0) {
    return NotSupportedError(fmt::format(
        "fake GPU {}: graphics clocks at memory clock {} MHz: the clock model has no memory "
        "clocks",
        options_.index, memory_clock_mhz));
  }
  return options_.clock_model->supported_mhz;
}

uint32_t FakeGpu::effective_clock_mhz() const {
  if (!options_.clock_model) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  return locked_clock_mhz_ != 0 ? locked_clock_mhz_ : options_.clock_model->supported_mhz.front();
}

double FakeGpu::StepTimeFactor() const {
  if (!options_.clock_model) return 1.0;
  return options_.clock_model->StepTimeFactor(effective_clock_mhz());
}

std::vector<uint32_t> FakeGpu::locked_clock_history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clock_history_;
}

StatusOr<uint64_t> FakeCpu::PackageEnergyUj() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(error_);
  return package_uj_;
}

StatusOr<uint64_t> FakeCpu::DramEnergyUj() {
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_RETURN_IF_ERROR(error_);
  if (!has_dram_) {
    return NotSupportedError("fake CPU " + std::to_string(index_) + ": no DRAM zone");
  }
  return dram_uj_;
}

void FakeCpu::AddEnergyUj(uint64_t package_uj, uint64_t dram_uj) {
  std::lock_guard<std::mutex> lock(mu_);
  package_uj_ += package_uj;
  dram_uj_ += dram_uj;
}

void FakeCpu::InjectError(Status status) {
  ZEUS_CHECK(!status.ok());
  std::lock_guard<std::mutex> lock(mu_);
  error_ = std::move(status);
}

void FakeCpu::ClearErrors() {
  std::lock_guard<std::mutex> lock(mu_);
  error_ = Status::Ok();
}

}  // namespace zeus
