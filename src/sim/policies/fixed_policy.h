// A policy that always runs one configuration. Private to src/sim.

#ifndef ZEUS_SRC_SIM_POLICIES_FIXED_POLICY_H_
#define ZEUS_SRC_SIM_POLICIES_FIXED_POLICY_H_

#include "zeus/sim/policy.h"

namespace zeus::sim_policies {

class FixedPolicy final : public Policy {
 public:
  FixedPolicy(int batch_size, int power_limit_w)
      : batch_size_(batch_size), power_limit_w_(power_limit_w) {}

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = next_run_id_++;
    plan.batch_size = batch_size_;
    plan.power_limit_w = power_limit_w_;
    return plan;
  }
  Status Observe(const RunPlan&, const RunOutcome&) override { return Status::Ok(); }

 private:
  int batch_size_;
  int power_limit_w_;
  int64_t next_run_id_ = 1;
};

}  // namespace zeus::sim_policies

#endif  // ZEUS_SRC_SIM_POLICIES_FIXED_POLICY_H_
