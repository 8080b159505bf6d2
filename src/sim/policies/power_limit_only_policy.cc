// Policy `power-limit-only`: JIT power-limit profiling at the default batch
// size; no batch-size search, no early stopping.

#include "src/sim/policies/jit_power_limit.h"
#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {
namespace {

class PowerLimitOnlyPolicy final : public Policy {
 public:
  explicit PowerLimitOnlyPolicy(const PolicyContext& context)
      : batch_size_(context.workload->default_batch_size),
        jit_(*context.workload, context.eta, context.nonbinding_margin) {}

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = next_run_id_++;
    plan.batch_size = batch_size_;
    plan.power_limit_w = jit_.For(batch_size_, &plan.profile_power);
    return plan;
  }
  Status Observe(const RunPlan&, const RunOutcome&) override { return Status::Ok(); }

 private:
  int batch_size_;
  JitPowerLimit jit_;
  int64_t next_run_id_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> MakePowerLimitOnly(const PolicyContext& context) {
  return std::unique_ptr<Policy>(std::make_unique<PowerLimitOnlyPolicy>(context));
}

}  // namespace zeus::sim_policies
