// Policies `walk-floor` and `jump-floor`: the least exploration a batch-size
// policy of Zeus's kind must pay, given the hindsight that only `oracle` has.
//
// Both know the oracle's batch size b* and still pay what learning it costs
// an online policy that starts at the default and profiles power limits JIT:
//   1. the default's first run, profiled, with no cost limit (nothing has
//      been seen to bound it);
//   2. (`walk-floor` only) each size strictly between the default and b*,
//      in walk order, profiled, stopped at beta x the oracle's expected cost
//      (a walk must pass through them; every early-stopping policy of the
//      kind would stop a run there or sooner), and, where the trace records
//      milestones, at beta x the oracle's mean learning curve (a run that
//      learns slower than b* stops there, as frugal's and swarm's probes
//      stop against the curve of the run of the lowest cost known);
//   3. b*'s first run, profiled (unless b* is the default);
//   4. each neighbour of b* in the batch-size list not run yet, profiled,
//      under the early-stop limit L >= the oracle's expected cost (and L /
//      that cost x the oracle's mean curve) that costs least in expectation
//      over the trace's seed runs (a stopped run also
//      costs the recurrence a run of b*): a run stopped below the oracle's
//      cost leaves open that the neighbour is cheaper than b*, and until
//      that is ruled out no policy can know b* is the best;
// and b* at its chosen limit from then on. Every step runs once, whatever
// its outcome; a recurrence whose run did not reach the target runs the next
// step (or b*) again. Concurrent submissions take the next step, so a group
// explores in parallel: each step costs the same whenever it runs.
//
// What the floors leave out, every online policy pays on top: probes in the
// wrong direction, runs of b*'s neighbours beyond the least that rules them
// out, a walk that stops short of b* or passes it, and runs of a dearer size
// chosen through noise. So a policy's regret minus its floor's is what its
// exploration could still save; the floor itself cannot be saved by any
// policy of the kind (walk-floor: any that steps through adjacent sizes;
// jump-floor: any that starts at the default, whatever it tries next).

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "zeus/sim/simulator.h"

#include "src/sim/policies/jit_power_limit.h"
#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {
namespace {

// One exploration run: a batch size, its early-stop cost limit and its
// learning-curve limits.
struct Step {
  int batch_size = 0;
  std::optional<double> cost_limit;
  std::vector<ProgressPoint> progress_limits = {};
};

class FloorPolicy final : public Policy {
 public:
  FloorPolicy(const PolicyContext& context, int best_batch_size, std::deque<Step> steps)
      : jit_(*context.workload, context.eta, context.nonbinding_margin),
        best_batch_size_(best_batch_size),
        steps_(std::move(steps)) {}

  RunPlan Next(int /*attempt*/) override {
    Step step{best_batch_size_, std::nullopt};
    if (!steps_.empty()) {
      step = steps_.front();
      steps_.pop_front();
    }
    RunPlan plan;
    plan.run_id = next_run_id_++;
    plan.batch_size = step.batch_size;
    plan.power_limit_w = jit_.For(step.batch_size, &plan.profile_power);
    plan.cost_limit = step.cost_limit;
    plan.exact_cost_limit = true;
    plan.progress_limits = step.progress_limits;
    in_flight_.insert(plan.run_id);
    return plan;
  }

  Status Observe(const RunPlan& plan, const RunOutcome&) override {
    if (in_flight_.erase(plan.run_id) == 0) {
      return NotFoundError("floor policy: run " + std::to_string(plan.run_id) +
                           " is not in flight");
    }
    return Status::Ok();
  }

 private:
  JitPowerLimit jit_;
  int best_batch_size_;
  std::deque<Step> steps_;
  std::set<int64_t> in_flight_;
  int64_t next_run_id_ = 1;
};

// One profiled run of `batch_size` at `power_limit_w` under `cost_limit`
// (nullopt: none), on each of the trace's seed runs in turn, priced by
// ExecuteRun.
std::vector<RunOutcome> ProbeOutcomes(const Workload& workload, double eta, int batch_size,
                                      int power_limit_w, std::optional<double> cost_limit,
                                      const std::vector<ProgressPoint>& progress_limits = {},
                                      bool profile_power = true) {
  const BatchSizeTrace& trace = *workload.Find(batch_size);
  Workload one_seed;
  one_seed.job = workload.job;
  one_seed.max_power_w = workload.max_power_w;
  one_seed.milestones = workload.milestones;
  one_seed.batch_sizes = {trace};
  RunPlan plan;
  plan.batch_size = batch_size;
  plan.power_limit_w = power_limit_w;
  plan.profile_power = profile_power;
  plan.cost_limit = cost_limit;
  plan.exact_cost_limit = true;
  plan.progress_limits = progress_limits;
  plan.record_progress = true;
  std::vector<RunOutcome> outcomes;
  for (size_t i = 0; i < trace.target_epochs.size(); ++i) {
    one_seed.batch_sizes[0].target_epochs = {trace.target_epochs[i]};
    one_seed.batch_sizes[0].milestone_epochs.clear();
    if (i < trace.milestone_epochs.size()) {
      one_seed.batch_sizes[0].milestone_epochs = {trace.milestone_epochs[i]};
    }
    Rng rng(1);
    outcomes.push_back(ExecuteRun(one_seed, plan, eta, rng));
  }
  return outcomes;
}

// The oracle's mean learning curve: for each progress level, the mean cost
// at which b*'s seed runs that reach the target first got there (at the
// oracle's limit, not profiled), costs made ascending. Empty without
// milestones. Floor probes are held to it as frugal's and swarm's probes are
// held to the curve of the run of the lowest cost known.
std::vector<ProgressPoint> OracleCurve(const Workload& workload, double eta,
                                       const ExpectedRun& oracle) {
  if (workload.milestones.empty()) return {};
  std::vector<double> sum(workload.milestones.size() + 1, 0.0);
  int reached = 0;
  for (const RunOutcome& run : ProbeOutcomes(workload, eta, oracle.batch_size, oracle.power_limit_w,
                                             std::nullopt, {}, false)) {
    if (!run.reached) continue;
    ++reached;
    for (size_t level = 0; level < sum.size(); ++level) {
      for (const ProgressPoint& point : run.progress) {
        if (point.progress >= static_cast<double>(level + 1)) {
          sum[level] += point.cost;
          break;
        }
      }
    }
  }
  std::vector<ProgressPoint> curve;
  if (reached == 0) return curve;
  for (size_t level = 0; level < sum.size(); ++level) {
    const double cost = sum[level] / reached;
    curve.push_back(
        {curve.empty() ? cost : std::max(cost, curve.back().cost), static_cast<double>(level + 1)});
  }
  return curve;
}

// `curve` with its costs scaled by `limit` / `oracle_cost`; empty without a
// limit.
std::vector<ProgressPoint> Scaled(const std::vector<ProgressPoint>& curve,
                                  const std::optional<double>& limit, double oracle_cost) {
  if (!limit.has_value() || !(oracle_cost > 0.0)) return {};
  std::vector<ProgressPoint> scaled = curve;
  for (ProgressPoint& point : scaled) point.cost *= *limit / oracle_cost;
  return scaled;
}

// The early-stop limit, at least `oracle_cost`, under which a probe of
// `batch_size` costs least in expectation over the trace's seed runs,
// counting a run at `oracle_cost` for each probe that does not reach the
// target. The expectation changes only where the limit crosses a seed run's
// cost, so the candidates are the oracle's cost, each seed run's unstopped
// cost above it, and no limit; ties go to the lower limit.
std::optional<double> CheapestProbeLimit(const Workload& workload, double eta, int batch_size,
                                         double oracle_cost,
                                         const std::vector<ProgressPoint>& oracle_curve) {
  JitPowerLimit jit(workload, eta);
  bool profile = false;
  const int power_limit_w = jit.For(batch_size, &profile);
  std::vector<std::optional<double>> candidates{oracle_cost};
  for (const RunOutcome& run :
       ProbeOutcomes(workload, eta, batch_size, power_limit_w, std::nullopt)) {
    // Just above the run's cost, so that rounding does not stop it an epoch
    // short.
    if (run.reached && run.cost > oracle_cost) candidates.push_back(run.cost * (1 + 1e-9));
  }
  std::sort(candidates.begin() + 1, candidates.end());
  candidates.push_back(std::nullopt);
  size_t best = 0;
  double best_excess = 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    double excess = 0.0;
    for (const RunOutcome& run :
         ProbeOutcomes(workload, eta, batch_size, power_limit_w, candidates[i],
                       Scaled(oracle_curve, candidates[i], oracle_cost))) {
      excess += (run.ran ? run.cost : 0.0) + (run.reached ? 0.0 : oracle_cost);
    }
    if (i == 0 || excess < best_excess) {
      best = i;
      best_excess = excess;
    }
  }
  return candidates[best];
}

StatusOr<std::unique_ptr<Policy>> MakeFloor(const PolicyContext& context, bool walk) {
  const Workload& workload = *context.workload;
  ZEUS_ASSIGN_OR_RETURN(ExpectedRun oracle, OracleRun(workload, context.eta));
  const std::vector<int> sizes = workload.BatchSizeList();
  const auto index_of = [&sizes](int size) {
    return static_cast<int>(std::find(sizes.begin(), sizes.end(), size) - sizes.begin());
  };
  const int from = index_of(workload.default_batch_size);
  const int best = index_of(oracle.batch_size);
  const std::vector<ProgressPoint> curve = OracleCurve(workload, context.eta, oracle);
  std::deque<Step> steps{{sizes[from], std::nullopt}};
  std::vector<bool> run(sizes.size(), false);
  run[from] = true;
  if (walk && best != from) {
    std::optional<double> path_limit;
    if (context.beta.has_value()) path_limit = *context.beta * oracle.cost;
    const int direction = best < from ? -1 : 1;
    for (int i = from + direction; i != best; i += direction) {
      steps.push_back({sizes[i], path_limit, Scaled(curve, path_limit, oracle.cost)});
      run[i] = true;
    }
  }
  if (!run[best]) {
    steps.push_back({sizes[best], std::nullopt});
    run[best] = true;
  }
  for (int neighbour : {best - 1, best + 1}) {
    if (neighbour < 0 || neighbour >= static_cast<int>(sizes.size()) || run[neighbour]) continue;
    const std::optional<double> limit =
        CheapestProbeLimit(workload, context.eta, sizes[neighbour], oracle.cost, curve);
    steps.push_back({sizes[neighbour], limit, Scaled(curve, limit, oracle.cost)});
  }
  return std::unique_ptr<Policy>(
      std::make_unique<FloorPolicy>(context, oracle.batch_size, std::move(steps)));
}

}  // namespace

StatusOr<std::unique_ptr<Policy>> MakeWalkFloor(const PolicyContext& context) {
  return MakeFloor(context, /*walk=*/true);
}

StatusOr<std::unique_ptr<Policy>> MakeJumpFloor(const PolicyContext& context) {
  return MakeFloor(context, /*walk=*/false);
}

}  // namespace zeus::sim_policies
