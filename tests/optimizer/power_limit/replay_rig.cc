#include "tests/optimizer/power_limit/replay_rig.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "zeus/util/units.h"

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

Status ExactFakeMonitor::Begin(std::string_view name) {
  std::string key(name);
  if (open_.count(key)) return AlreadyExistsError("window " + key + " is open");
  Open o{ToSeconds(clock_->Now()), {}};
  for (FakeGpu* g : gpus_) o.energy_j.push_back(g->TrueEnergyJ());
  open_[key] = o;
  events_.push_back("begin:" + key);
  return Status::Ok();
}

StatusOr<Measurement> ExactFakeMonitor::End(std::string_view name) {
  std::string key(name);
  auto it = open_.find(key);
  if (it == open_.end()) return NotFoundError("window " + key + " is not open");
  Measurement m;
  m.name = key;
  m.start_time_s = it->second.start_s;
  m.time_s = ToSeconds(clock_->Now()) - it->second.start_s;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    m.gpu_energy_j.push_back(gpus_[i]->TrueEnergyJ() - it->second.energy_j[i]);
  }
  open_.erase(it);
  events_.push_back("end:" + key);
  return m;
}

Status ExactFakeMonitor::Cancel(std::string_view name) {
  std::string key(name);
  if (!open_.erase(key)) return NotFoundError("window " + key + " is not open");
  events_.push_back("cancel:" + key);
  return Status::Ok();
}

FakeGpuSet::FakeGpuSet(const std::vector<FakeGpuOptions>& options) {
  std::vector<FakeGpu*> raw;
  for (const FakeGpuOptions& o : options) {
    gpus_.push_back(std::make_unique<FakeGpu>(&clock_, o));
    raw.push_back(gpus_.back().get());
  }
  monitor_ = std::make_unique<ExactFakeMonitor>(raw, &clock_);
}

std::vector<Gpu*> FakeGpuSet::gpus() const {
  std::vector<Gpu*> out;
  for (const auto& g : gpus_) out.push_back(g.get());
  return out;
}

std::vector<FakeGpuOptions> ReplayRig::GpuOptions(int original_limit_w,
                                                  std::chrono::nanoseconds energy_update_period) {
  int max_w = 0;
  int min_w = 1 << 30;
  for (const RawProfileRow& r : raw_.rows) {
    max_w = std::max(max_w, r.power_limit_w);
    min_w = std::min(min_w, r.power_limit_w);
  }
  std::vector<FakeGpuOptions> options;
  for (size_t i = 0; i < raw_.rows.at(0).gpu_energy_j.size(); ++i) {
    FakeGpuOptions o;
    o.index = static_cast<int>(i);
    o.constraints = {WToMw(min_w), WToMw(max_w)};
    o.default_power_limit_mw = WToMw(max_w);
    o.power_limit_mw = WToMw(original_limit_w);
    o.energy_update_period = energy_update_period;
    o.power_w = [this, i](double, uint32_t limit_mw) {
      const RawProfileRow& row = Row(static_cast<int>(limit_mw / 1000));
      return row.gpu_energy_j[i] / row.time_s;
    };
    options.push_back(o);
  }
  return options;
}

ReplayRig::ReplayRig(const RawProfile& raw, int steps_per_row, int original_limit_w,
                     std::chrono::nanoseconds energy_update_period)
    : raw_(raw),
      steps_per_row_(steps_per_row),
      set_(GpuOptions(original_limit_w, energy_update_period)) {}

const RawProfileRow& ReplayRig::Row(int limit_w) const {
  for (const RawProfileRow& r : raw_.rows) {
    if (r.power_limit_w == limit_w) return r;
  }
  ADD_FAILURE() << "no row for " << limit_w << " W in " << raw_.path;
  return raw_.rows.at(0);
}

std::vector<int> ReplayRig::LimitsW() const {
  std::vector<int> out;
  for (const RawProfileRow& r : raw_.rows) out.push_back(r.power_limit_w);
  std::sort(out.rbegin(), out.rend());
  return out;
}

void ReplayRig::RunEpoch(PowerLimitOptimizer& opt, int64_t steps) {
  RunSteps(opt, steps);
  ZEUS_EXPECT_OK(opt.OnEpochEnd());
}

void ReplayRig::RunSteps(PowerLimitOptimizer& opt, int64_t steps) {
  for (int64_t s = 0; s < steps; ++s) {
    ZEUS_EXPECT_OK(opt.OnStepBegin());
    uint32_t limit_mw = set_.gpu(0).PowerLimitMw().value();
    const RawProfileRow& row = Row(static_cast<int>(limit_mw / 1000));
    set_.clock()->AdvanceSeconds(row.time_s / steps_per_row_);
  }
}

PowerLimitOptimizerOptions StepOnlyOptions() {
  PowerLimitOptimizerOptions o;
  o.wait_steps = 10;
  o.warmup_steps = 10;
  o.measure_steps = 40;
  o.min_measure_time = std::chrono::nanoseconds(0);
  o.restore_on_signal = false;
  // These tests follow full sweeps: the replayed profiles and the fakes draw
  // less than most limits, which would otherwise be skipped.
  o.skip_nonbinding_limits = false;
  return o;
}

}  // namespace zeus::testing
