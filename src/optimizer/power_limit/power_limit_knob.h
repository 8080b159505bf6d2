// PowerLimitKnob: the power limit of every GPU as a knob of the JIT profiler
// (private to the power-limit optimizer).
//
// Thread-safety: as Knob.

#ifndef ZEUS_SRC_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_KNOB_H_
#define ZEUS_SRC_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_KNOB_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/core/optimum_selector.h"
#include "zeus/device/gpu.h"
#include "zeus/optimizer/jit/knob.h"
#include "zeus/optimizer/power_limit/power_limit_optimizer.h"
#include "zeus/optimizer/power_limit/power_limit_restorer.h"

namespace zeus {

class PowerLimitKnob final : public Knob {
 public:
  // Drives `gpus` (which outlive the knob), all accepting `constraints`;
  // `restorer` puts their limits back. Settings are limits in mW.
  PowerLimitKnob(std::vector<Gpu*> gpus, std::unique_ptr<PowerLimitRestorer> restorer,
                 PowerLimitConstraints constraints, const PowerLimitOptimizerOptions& options);

  const char* LogContext() const override { return "power-limit optimizer"; }
  std::string Format(uint32_t power_limit_mw) const override;
  const char* HighestSettingName() const override { return "the maximum limit"; }
  std::string WindowName(uint32_t power_limit_mw) const override;
  Status Set(uint32_t power_limit_mw) override;
  Status Restore() override { return restorer_->Restore(); }
  bool restored() const override { return restorer_->restored(); }
  // A limit binds only when the GPU would draw more: one at or above the
  // draw measured at the maximum x (1 + nonbinding_margin) changes nothing.
  bool CanChangeAnything(uint32_t power_limit_mw, double draw_per_gpu_w) const override;
  StatusOr<uint32_t> Select(const KnobProfile& profile) const override;
  std::string SelectorName() const override;
  StatusOr<KnobProfile> Load(const std::string& path) const override;
  Status Save(const std::string& path, const KnobProfile& profile) const override;

 private:
  const std::vector<Gpu*> gpus_;
  const std::unique_ptr<PowerLimitRestorer> restorer_;
  const PowerLimitConstraints constraints_;
  const OptimumSelector selector_;
  const CustomSelectorFn custom_selector_;
  // Unset: every limit is profiled.
  const std::optional<double> nonbinding_margin_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_POWER_LIMIT_POWER_LIMIT_KNOB_H_
