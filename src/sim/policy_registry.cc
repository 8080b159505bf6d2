// The registry of simulation policies: one line per policy.

#include <utility>

#include "zeus/sim/policy.h"
#include "zeus/util/strings.h"

#include "src/sim/policies/policies.h"

namespace zeus {
namespace {

using Factory = StatusOr<std::unique_ptr<Policy>> (*)(const PolicyContext&);

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const auto* registry = new std::vector<std::pair<std::string, Factory>>{
      {"zeus", sim_policies::MakeZeus},
      {"frugal", sim_policies::MakeFrugal},
      {"swarm", sim_policies::MakeSwarm},
      {"default", sim_policies::MakeDefault},
      {"oracle", sim_policies::MakeOracle},
      {"walk-floor", sim_policies::MakeWalkFloor},
      {"jump-floor", sim_policies::MakeJumpFloor},
      {"grid-search", sim_policies::MakeGridSearch},
      {"power-limit-only", sim_policies::MakePowerLimitOnly},
      {"batch-size-only", sim_policies::MakeBatchSizeOnly},
  };
  return *registry;
}

}  // namespace

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context) {
  if (context.workload == nullptr) {
    return InvalidArgumentError("policy '" + std::string(name) + "': no workload");
  }
  for (const auto& [known, factory] : Registry()) {
    if (known == name) return factory(context);
  }
  return NotFoundError("unknown policy '" + std::string(name) +
                       "' (known: " + Join(PolicyNames(), ", ") + ")");
}

}  // namespace zeus
