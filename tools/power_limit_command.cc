// `zeus power-limit select --profile FILE [--selector energy|time|cost|slowdown]
//  [--eta 0.5] [--max-slowdown 1.1] [--json]`: the limit a saved profile
// (our JSON or the Python Zeus CSV log) leads to, in W. --eta applies only to
// the cost selector and --max-slowdown only to slowdown: given with another
// selector, they are refused (usage error, exit 2) rather than ignored.

#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"

#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace zeus::cli {
namespace {

struct SelectArgs {
  std::string profile_path;
  std::string selector = "cost";
  double eta = 0.5;
  double max_slowdown = 1.1;
  bool json = false;
};

// Throws UsageError for an unknown --selector, or --eta/--max-slowdown given
// (`eta_given`, `max_slowdown_given`) with a selector that ignores them.
OptimumKind CheckSelector(const SelectArgs& args, bool eta_given, bool max_slowdown_given) {
  StatusOr<OptimumKind> kind = ParseOptimumKind(args.selector);
  if (!kind.ok()) throw UsageError("--selector", args.selector, kind.status().message());
  if (max_slowdown_given && *kind != OptimumKind::kSlowdown) {
    throw UsageError("--max-slowdown", fmt::format("{}", args.max_slowdown),
                     "applies only to --selector slowdown, not --selector " + args.selector);
  }
  if (eta_given && *kind != OptimumKind::kCost) {
    throw UsageError("--eta", fmt::format("{}", args.eta),
                     "applies only to --selector cost, not --selector " + args.selector);
  }
  return *kind;
}

Status RunSelect(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(PowerLimitProfile profile, LoadProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t limit_mw, SelectOptimumMw(profile, selector));
  double limit_w = limit_mw / 1000.0;
  if (args.json) {
    nlohmann::json out = {{"power_limit_w", limit_w}};
    if (limit_mw % 1000 == 0) out["power_limit_w"] = limit_mw / 1000;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format("{}", limit_w) << "\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterPowerLimitCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("power-limit", "GPU power-limit optimizer tools");
  cmd->require_subcommand(1);
  auto args = std::make_shared<SelectArgs>();
  auto* select =
      cmd->add_subcommand("select", "Print the power limit (W) a saved profile leads to");
  select->add_option("--profile", args->profile_path, "Profile: Zeus JSON or CSV log")->required();
  select->add_option("--selector", args->selector, "energy, time, cost or slowdown")
      ->capture_default_str();
  auto* eta =
      select->add_option("--eta", args->eta, "Cost selector only: weight of energy, in [0, 1]")
          ->capture_default_str()
          ->check(NumberIn(0.0, 1.0));
  auto* max_slowdown =
      select
          ->add_option("--max-slowdown", args->max_slowdown,
                       "Slowdown selector only: allowed time factor vs the maximum limit, >= 1")
          ->capture_default_str()
          ->check(NumberIn(1.0, 1e6));
  select->add_flag("--json", args->json, "Print {\"power_limit_w\": W}");
  select->callback([args, exit_code, eta, max_slowdown] {
    const OptimumKind kind = CheckSelector(*args, eta->count() > 0, max_slowdown->count() > 0);
    Status status = RunSelect(*args, kind);
    if (!status.ok()) {
      std::cerr << "zeus power-limit select: " << status.message() << "\n";
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace zeus::cli
