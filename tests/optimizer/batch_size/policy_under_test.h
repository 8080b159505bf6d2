// PolicyUnderTest: the policy a config names, held by value, with the rules
// of its class (walk_bandit_policy.h, frugal_policy.h, swarm_policy.h)
// readable, so that a test can check one rule at a time. Code outside the
// optimizer layer uses BatchSizeOptimizer instead.

#ifndef ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_POLICY_UNDER_TEST_H_
#define ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_POLICY_UNDER_TEST_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "src/optimizer/batch_size/policy_registry.h"
#include "src/optimizer/batch_size/swarm_policy.h"

namespace zeus {

class PolicyUnderTest {
 public:
  static StatusOr<PolicyUnderTest> Create(BatchSizeOptimizerConfig config) {
    ZEUS_RETURN_IF_ERROR(config.Validate());
    std::unique_ptr<WalkBanditPolicy> policy = batch_size_internal::NewPolicy(std::move(config));
    policy->StartIfWalked();
    return PolicyUnderTest(std::move(policy));
  }
  static StatusOr<PolicyUnderTest> FromJson(const nlohmann::json& json) {
    ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<BatchSizePolicy> loaded, LoadBatchSizePolicy(json));
    return PolicyUnderTest(
        std::unique_ptr<WalkBanditPolicy>(static_cast<WalkBanditPolicy*>(loaded.release())));
  }
  PolicyUnderTest(const PolicyUnderTest& other) : policy_(Copy(*other.policy_)) {}
  PolicyUnderTest(PolicyUnderTest&&) noexcept = default;
  PolicyUnderTest& operator=(const PolicyUnderTest& other) {
    if (this != &other) policy_ = Copy(*other.policy_);
    return *this;
  }
  PolicyUnderTest& operator=(PolicyUnderTest&&) noexcept = default;

  WalkBanditPolicy& policy() { return *policy_; }
  const WalkBanditPolicy& policy() const { return *policy_; }

  // The interface.
  const BatchSizeOptimizerConfig& config() const { return policy_->config(); }
  Trial NextTrial(int attempt = 1) { return policy_->NextTrial(attempt); }
  StatusOr<Verdict> Judge(int64_t trial, const Observation& observation) {
    return policy_->Judge(trial, observation);
  }
  Status ReportResult(int64_t trial, double cost, bool reached) {
    return policy_->ReportResult(trial, cost, reached);
  }
  Status ReportFailure(int64_t trial) { return policy_->ReportFailure(trial); }
  const std::map<int64_t, InFlightTrial>& in_flight() const { return policy_->in_flight(); }
  std::vector<ArmState> ArmStates() const { return policy_->ArmStates(); }
  nlohmann::json ToJson() const { return policy_->ToJson(); }

  // The rules.
  bool exploring() const { return policy_->exploring(); }
  std::optional<double> min_cost() const { return policy_->min_cost(); }
  int best_batch_size() const { return policy_->best_batch_size(); }
  std::optional<double> EarlyStopThreshold() const { return policy_->EarlyStopThreshold(); }
  std::optional<double> EarlyStopThreshold(int64_t trial) const {
    return policy_->EarlyStopThreshold(trial);
  }
  std::optional<double> EarlyStopThreshold(int64_t trial, double progress) const {
    return policy_->EarlyStopThreshold(trial, progress);
  }
  std::optional<double> CheckInThreshold(int64_t trial) const {
    return policy_->CheckInThreshold(trial);
  }
  // A point zeus does not keep is accepted and ignored.
  Status RecordProgress(int64_t trial, double cost, double progress) {
    return policy_->RecordProgress(trial, cost, progress).status();
  }
  std::optional<double> BestProgress(int64_t trial) const { return policy_->BestProgress(trial); }
  std::optional<double> BestProgressWithin(int64_t trial, double cost) const {
    return policy_->BestProgressWithin(trial, cost);
  }
  std::optional<double> RestartThreshold(int64_t trial) const {
    return policy_->RestartThreshold(trial);
  }
  std::optional<double> RunOnBound(int64_t trial, double progress) const {
    return policy_->RunOnBound(trial, progress);
  }
  Status RunOn(int64_t trial, double progress) { return policy_->RunOn(trial, progress); }
  std::optional<double> FinishBound(int64_t trial, const ProgressPoint& best, double cost) const {
    return policy_->FinishBound(trial, best, cost);
  }
  Status Finish(int64_t trial, const ProgressPoint& best, double cost) {
    return policy_->Finish(trial, best, cost);
  }
  std::optional<ProgressPoint> FinishCandidate(int64_t trial) const {
    return policy_->FinishCandidate(trial);
  }
  const std::vector<ProgressPoint>& reference_progress() const {
    return policy_->reference_progress();
  }
  const std::map<int, double>& censored() const { return policy_->censored(); }
  const std::map<int, SpeculativeResult>& speculative_results() const {
    return policy_->speculative_results();
  }
  // frugal's and swarm's (empty under zeus).
  std::vector<ProgressPoint> ProgressLimits(int64_t trial) const {
    const auto* frugal = dynamic_cast<const FrugalPolicy*>(policy_.get());
    return frugal != nullptr ? frugal->ProgressLimits(trial) : std::vector<ProgressPoint>{};
  }
  std::optional<double> PaceOf(int64_t trial) const {
    const auto* frugal = dynamic_cast<const FrugalPolicy*>(policy_.get());
    return frugal != nullptr ? frugal->PaceOf(trial) : std::nullopt;
  }
  // swarm's (nullopt otherwise).
  std::optional<int64_t> provisional_reference() const {
    const auto* swarm = dynamic_cast<const SwarmPolicy*>(policy_.get());
    return swarm != nullptr ? swarm->provisional_reference() : std::nullopt;
  }

 private:
  explicit PolicyUnderTest(std::unique_ptr<WalkBanditPolicy> policy) : policy_(std::move(policy)) {}
  static std::unique_ptr<WalkBanditPolicy> Copy(const WalkBanditPolicy& policy) {
    return std::unique_ptr<WalkBanditPolicy>(
        static_cast<WalkBanditPolicy*>(policy.Clone().release()));
  }

  std::unique_ptr<WalkBanditPolicy> policy_;
};

}  // namespace zeus

#endif  // ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_POLICY_UNDER_TEST_H_
