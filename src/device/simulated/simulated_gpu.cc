#include "src/device/simulated/simulated_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "zeus/util/units.h"

namespace zeus::simulated {

SimulatedGpuModel ModelForIndex(int physical_index) {
  SimulatedGpuModel model;
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-5a455553-0000-4000-8000-%012x",
                static_cast<unsigned>(physical_index));
  model.uuid = uuid;
  char bus[32];
  std::snprintf(bus, sizeof(bus), "0000:%02x:00.0",
                static_cast<unsigned>(physical_index + 1) & 0xff);
  model.pci_bus_id = bus;
  model.busy_w += 12.0 * physical_index;
  model.phase_s = 0.37 * physical_index;
  return model;
}

SimulatedGpuState::SimulatedGpuState(Clock* clock, SimulatedGpuModel model)
    : clock_(clock),
      model_(std::move(model)),
      origin_s_(ToSeconds(clock->Now())),
      power_limit_mw_(model_.default_power_limit_mw) {}

double SimulatedGpuState::NowS() { return std::max(0.0, ToSeconds(clock_->Now()) - origin_s_); }

double SimulatedGpuState::PowerAt(double t, double limit_w) const {
  double tau = std::fmod(t + model_.phase_s, model_.period_s);
  double demand_w = tau < model_.busy_fraction * model_.period_s ? model_.busy_w : model_.light_w;
  return std::min(demand_w, limit_w);
}

double SimulatedGpuState::IntegralTo(double t, double limit_w) const {
  const double period = model_.period_s;
  const double busy_s = model_.busy_fraction * period;
  const double busy_w = std::min(model_.busy_w, limit_w);
  const double light_w = std::min(model_.light_w, limit_w);
  auto from_cycle_start = [&](double tau) {
    double cycles = std::floor(tau / period);
    double rest = tau - cycles * period;
    return cycles * (busy_s * busy_w + (period - busy_s) * light_w) +
           std::min(rest, busy_s) * busy_w + std::max(0.0, rest - busy_s) * light_w;
  };
  return from_cycle_start(t + model_.phase_s) - from_cycle_start(model_.phase_s);
}

void SimulatedGpuState::AccumulateLocked(double now_s) {
  if (now_s <= accumulated_until_s_) return;
  double limit_w = power_limit_mw_ / 1000.0;
  energy_j_ += IntegralTo(now_s, limit_w) - IntegralTo(accumulated_until_s_, limit_w);
  accumulated_until_s_ = now_s;
}

uint32_t SimulatedGpuState::PowerLimitMw() {
  std::lock_guard<std::mutex> lock(mu_);
  return power_limit_mw_;
}

Status SimulatedGpuState::SetPowerLimitMw(uint32_t power_limit_mw) {
  const PowerLimitConstraints& c = model_.constraints;
  if (power_limit_mw < c.min_mw || power_limit_mw > c.max_mw) {
    return InvalidArgumentError("simulated GPU: power limit " + std::to_string(power_limit_mw) +
                                " mW outside [" + std::to_string(c.min_mw) + ", " +
                                std::to_string(c.max_mw) + "] mW");
  }
  std::lock_guard<std::mutex> lock(mu_);
  AccumulateLocked(NowS());
  power_limit_mw_ = power_limit_mw;
  return Status::Ok();
}

bool SimulatedGpuState::PersistenceMode() {
  std::lock_guard<std::mutex> lock(mu_);
  return persistence_;
}

void SimulatedGpuState::SetPersistenceMode(bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  persistence_ = enabled;
}

double SimulatedGpuState::PowerW() {
  std::lock_guard<std::mutex> lock(mu_);
  return PowerAt(NowS(), power_limit_mw_ / 1000.0);
}

double SimulatedGpuState::AveragePowerW(double window_s) {
  std::lock_guard<std::mutex> lock(mu_);
  double now_s = NowS();
  double limit_w = power_limit_mw_ / 1000.0;
  double from_s = std::max(0.0, now_s - window_s);
  if (now_s - from_s <= 0.0) return PowerAt(now_s, limit_w);
  return (IntegralTo(now_s, limit_w) - IntegralTo(from_s, limit_w)) / (now_s - from_s);
}

double SimulatedGpuState::EnergyJ() {
  std::lock_guard<std::mutex> lock(mu_);
  AccumulateLocked(NowS());
  return energy_j_;
}

SimulatedGpu::SimulatedGpu(std::shared_ptr<SimulatedGpuState> state, int index)
    : state_(std::move(state)), index_(index) {}

Status SimulatedGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  Status status = state_->SetPowerLimitMw(power_limit_mw);
  if (!status.ok()) {
    return InvalidArgumentError("GPU " + std::to_string(index_) + ": " +
                                std::string(status.message()));
  }
  return status;
}

Status SimulatedGpu::SetPersistenceMode(bool enabled) {
  state_->SetPersistenceMode(enabled);
  return Status::Ok();
}

StatusOr<uint64_t> SimulatedGpu::TotalEnergyMj() {
  return static_cast<uint64_t>(std::llround(state_->EnergyJ() * 1000.0));
}

StatusOr<uint32_t> SimulatedGpu::PowerMw() {
  return static_cast<uint32_t>(std::lround(state_->PowerW() * 1000.0));
}

StatusOr<uint32_t> SimulatedGpu::DomainPowerMw(PowerDomain domain) {
  switch (domain) {
    case PowerDomain::kDeviceInstant:
      return PowerMw();
    case PowerDomain::kDeviceAverage:
      return static_cast<uint32_t>(std::lround(state_->AveragePowerW(1.0) * 1000.0));
    case PowerDomain::kMemoryAverage:
      break;
  }
  return Gpu::DomainPowerMw(domain);
}

StatusOr<int32_t> SimulatedGpu::TemperatureC() {
  return static_cast<int32_t>(std::lround(30.0 + 0.12 * state_->PowerW()));
}

}  // namespace zeus::simulated
