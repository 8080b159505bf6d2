// Policy `grid-search`: tries every (batch size, power limit) once across
// recurrences (batch sizes ascending, power limits descending), then keeps
// the one with the lowest observed cost among runs that reached the target
// (the default configuration if none did). No early stopping.

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {
namespace {

class GridSearchPolicy final : public Policy {
 public:
  explicit GridSearchPolicy(const Workload& workload) {
    for (const BatchSizeTrace& trace : workload.batch_sizes) {
      for (auto point = trace.power.rbegin(); point != trace.power.rend(); ++point) {
        grid_.emplace_back(trace.batch_size, point->power_limit_w);
      }
    }
    const int default_size = workload.default_batch_size;
    best_ = {default_size, workload.Find(default_size)->max_power_limit_w()};
  }

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = next_run_id_++;
    const std::pair<int, int> config = next_index_ < grid_.size() ? grid_[next_index_++] : best_;
    plan.batch_size = config.first;
    plan.power_limit_w = config.second;
    in_flight_.emplace(plan.run_id, config);
    return plan;
  }

  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    auto it = in_flight_.find(plan.run_id);
    if (it == in_flight_.end()) {
      return NotFoundError("grid-search: run " + std::to_string(plan.run_id) + " is not in flight");
    }
    if (outcome.reached && (!best_cost_.has_value() || outcome.cost < *best_cost_)) {
      best_cost_ = outcome.cost;
      best_ = it->second;
    }
    in_flight_.erase(it);
    return Status::Ok();
  }

 private:
  std::vector<std::pair<int, int>> grid_;
  size_t next_index_ = 0;
  std::pair<int, int> best_;
  std::optional<double> best_cost_;
  std::map<int64_t, std::pair<int, int>> in_flight_;
  int64_t next_run_id_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> MakeGridSearch(const PolicyContext& context) {
  return std::unique_ptr<Policy>(std::make_unique<GridSearchPolicy>(*context.workload));
}

}  // namespace zeus::sim_policies
