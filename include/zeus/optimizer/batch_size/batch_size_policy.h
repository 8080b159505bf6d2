// The interface every batch-size policy implements: how one recurring job
// picks the batch size of each submission and judges its running trials.
//
// The policies (src/optimizer/batch_size/): `zeus` (the paper's algorithm:
// a pruning walk from the default, then Gaussian Thompson sampling),
// `frugal` (zeus with cheaper exploration and learning-curve stops), `swarm`
// (frugal plus speculative trials for concurrent submissions). Callers hold
// a policy through BatchSizeOptimizer; a new policy is a new class behind
// this interface, registered in
// src/optimizer/batch_size/policy_registry.cc
// (docs/BATCH_SIZE_POLICY.md, "Adding a policy").
//
// Thread-safety: not thread-safe; callers serialise a job's calls.

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_POLICY_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_POLICY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/batch_size_config.h"
#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/optimizer/batch_size/trial.h"
#include "zeus/optimizer/batch_size/verdict.h"
#include "zeus/status.h"

namespace zeus {

// What a dashboard or a report shows of a job's search.
struct BatchSizeSearchView {
  // The pruning walk is not over.
  bool exploring = true;
  // The lowest cost of a run that reached the target; nullopt before any did.
  std::optional<double> min_cost;
  // beta x min_cost: a run whose cost passes it stops early (a policy may
  // hold some trials to a tighter bound; Verdict::whole_bound says which).
  // nullopt without early stopping or before any run reached the target.
  std::optional<double> early_stop_threshold;
  // The cheapest batch size that reached the target so far, else the default.
  int best_batch_size = 0;
};

class BatchSizePolicy {
 public:
  virtual ~BatchSizePolicy() = default;

  // The job's settings; config().policy names this policy.
  virtual const BatchSizeOptimizerConfig& config() const = 0;

  // Hands out the next trial and records it as in flight. `attempt`: 1 for
  // a submission's first try, n + 1 for the try after its n-th ended without
  // reaching the target. From attempt kMaxStoppableTries + 1 on, every
  // policy hands out a trial that may finish (Trial::may_finish).
  virtual Trial NextTrial(int attempt) = 0;

  // Judges in-flight trial `trial_number` at a per-epoch report (with its
  // progress) or a check-in (without): every decision about a running trial
  // (continue, stop, restart elsewhere, run on, finish). Records what the
  // verdict changed (Verdict::state_changed). The caller ends a run the
  // verdict stops (or that reached the target, or max epochs) with
  // ReportResult(cost, reached_target && the verdict did not stop it).
  // kNotFound when not in flight; kInvalidArgument for a cost ReportResult
  // would refuse (nothing recorded).
  virtual StatusOr<Verdict> Judge(int64_t trial_number, const Observation& observation) = 0;

  // The final outcome of in-flight trial `trial_number`: its cost (ZeusCost
  // of the whole run, early-stopped runs included) and whether it reached
  // the target. kNotFound for a trial not in flight; kInvalidArgument for a
  // cost that is negative, not finite or above GaussianTs::kMaxAbsReward
  // (the trial stays in flight).
  virtual Status ReportResult(int64_t trial_number, double cost, bool reached_target) = 0;

  // Trial `trial_number` was abandoned (its client died): no observation.
  // kNotFound as above.
  virtual Status ReportFailure(int64_t trial_number) = 0;

  // Trials handed out and not yet reported, by trial number.
  virtual const std::map<int64_t, InFlightTrial>& in_flight() const = 0;
  virtual BatchSizeSearchView View() const = 0;
  // The bandit's arms once exploration is over; during exploration, every
  // batch size with its observations so far.
  virtual std::vector<ArmState> ArmStates() const = 0;

  // Complete state, random generator included: a policy restored from it
  // (LoadBatchSizePolicy) continues the same sequence.
  virtual nlohmann::json ToJson() const = 0;
  virtual std::unique_ptr<BatchSizePolicy> Clone() const = 0;
};

// The policy config.policy names, fresh. kInvalidArgument when `config`
// fails Validate().
StatusOr<std::unique_ptr<BatchSizePolicy>> MakeBatchSizePolicy(BatchSizeOptimizerConfig config);

// Restores BatchSizePolicy::ToJson()'s output exactly. kInvalidArgument
// naming the field for malformed or inconsistent state, for any cost the
// policy would refuse, and for state its policy does not keep.
StatusOr<std::unique_ptr<BatchSizePolicy>> LoadBatchSizePolicy(const nlohmann::json& json);

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_BATCH_SIZE_POLICY_H_
