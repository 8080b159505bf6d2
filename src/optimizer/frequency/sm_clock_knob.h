// SmClockKnob: the locked graphics (SM) clock of every GPU as a knob of the
// JIT profiler (private to the frequency optimizer).
//
// Thread-safety: as Knob.

#ifndef ZEUS_SRC_OPTIMIZER_FREQUENCY_SM_CLOCK_KNOB_H_
#define ZEUS_SRC_OPTIMIZER_FREQUENCY_SM_CLOCK_KNOB_H_

#include <memory>
#include <string>
#include <vector>

#include "zeus/core/optimum_selector.h"
#include "zeus/device/gpu.h"
#include "zeus/optimizer/frequency/locked_clock_restorer.h"
#include "zeus/optimizer/jit/knob.h"

namespace zeus {

class SmClockKnob final : public Knob {
 public:
  // Locks `gpus` (which outlive the knob) to clocks in [min_mhz, max_mhz];
  // `max_power_limit_mw` is MaxPower's limit. Settings are clocks in MHz.
  SmClockKnob(std::vector<Gpu*> gpus, std::unique_ptr<LockedClockRestorer> restorer,
              uint32_t min_mhz, uint32_t max_mhz, uint32_t max_power_limit_mw,
              OptimumSelector selector);

  const char* LogContext() const override { return "frequency optimizer"; }
  std::string Format(uint32_t mhz) const override;
  const char* HighestSettingName() const override { return "the highest clock"; }
  std::string WindowName(uint32_t mhz) const override;
  Status Set(uint32_t mhz) override;
  Status Restore() override { return restorer_->Restore(); }
  bool restored() const override { return restorer_->restored(); }
  StatusOr<uint32_t> Select(const KnobProfile& profile) const override;
  std::string SelectorName() const override { return selector_.ToString(); }
  StatusOr<KnobProfile> Load(const std::string& path) const override;
  Status Save(const std::string& path, const KnobProfile& profile) const override;

 private:
  const std::vector<Gpu*> gpus_;
  const std::unique_ptr<LockedClockRestorer> restorer_;
  const uint32_t min_mhz_;
  const uint32_t max_mhz_;
  const uint32_t max_power_limit_mw_;
  const OptimumSelector selector_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_FREQUENCY_SM_CLOCK_KNOB_H_
