// The batch-size optimizer of one recurring job: the policy its config
// names (batch_size_policy.h), held by value.
//
// One implementation shared by the simulator (src/sim) and the batch-size
// server (src/server). Each time the job recurs, the caller asks NextTrial()
// for the batch size to use, has Judge() rule on the run at each report and
// check-in, and reports the run's final outcome with ReportResult() (or
// ReportFailure() when the run was abandoned). Several trials may be in
// flight at once and their results may arrive in any order.
//
// The complete state, random generator included, round-trips through JSON
// exactly (schema: src/optimizer/batch_size/policy_state.cc), so a process
// restarted from ToJson() continues the same sequence.
//
// Thread-safety: not thread-safe. The server serialises a job's requests
// (row lock in its database); the simulator is single-threaded.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/batch_size_config.h"
#include "zeus/optimizer/batch_size/batch_size_policy.h"
#include "zeus/optimizer/batch_size/trial.h"
#include "zeus/optimizer/batch_size/verdict.h"
#include "zeus/status.h"

namespace zeus {

class BatchSizeOptimizer {
 public:
  // kInvalidArgument when `config` fails Validate().
  static StatusOr<BatchSizeOptimizer> Create(BatchSizeOptimizerConfig config);
  // Restores ToJson()'s output (LoadBatchSizePolicy's errors).
  static StatusOr<BatchSizeOptimizer> FromJson(const nlohmann::json& json);
  nlohmann::json ToJson() const { return policy_->ToJson(); }

  const BatchSizeOptimizerConfig& config() const { return policy_->config(); }

  // BatchSizePolicy's contracts.
  Trial NextTrial(int attempt = 1) { return policy_->NextTrial(attempt); }
  StatusOr<Verdict> Judge(int64_t trial_number, const Observation& observation) {
    return policy_->Judge(trial_number, observation);
  }
  Status ReportResult(int64_t trial_number, double cost, bool reached_target) {
    return policy_->ReportResult(trial_number, cost, reached_target);
  }
  Status ReportFailure(int64_t trial_number) { return policy_->ReportFailure(trial_number); }
  const std::map<int64_t, InFlightTrial>& in_flight() const { return policy_->in_flight(); }
  BatchSizeSearchView View() const { return policy_->View(); }
  std::vector<ArmState> ArmStates() const { return policy_->ArmStates(); }

 private:
  // A policy copied with the optimizer (Clone).
  class Held {
   public:
    explicit Held(std::unique_ptr<BatchSizePolicy> policy) : policy_(std::move(policy)) {}
    Held(const Held& other) : policy_(other.policy_->Clone()) {}
    Held(Held&&) noexcept = default;
    Held& operator=(const Held& other) {
      if (this != &other) policy_ = other.policy_->Clone();
      return *this;
    }
    Held& operator=(Held&&) noexcept = default;
    BatchSizePolicy* operator->() const { return policy_.get(); }

   private:
    std::unique_ptr<BatchSizePolicy> policy_;
  };

  explicit BatchSizeOptimizer(std::unique_ptr<BatchSizePolicy> policy)
      : policy_(std::move(policy)) {}

  Held policy_;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_OPTIMIZER_H_
