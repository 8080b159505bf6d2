// `zeus frequency select --profile FILE [--selector energy|time|cost|slowdown]
//  [--eta 0.5] [--max-slowdown 1.1] [--json]`: the SM clock (MHz) a saved
// frequency profile (GlobalFrequencyOptimizer's profile_path, format
// "zeus-frequency-profile") leads to, chosen by the same selectors as power
// limits (MaxPower: the profile's power limit). Flag rules as `zeus
// power-limit select` (tools/selector_flags.h).

#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/core/frequency_profile.h"
#include "zeus/core/optimum_selector.h"

#include "tools/commands.h"
#include "tools/selector_flags.h"

namespace zeus::cli {
namespace {

Status RunFrequencySelect(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(FrequencyProfile profile, LoadFrequencyProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t mhz, SelectOptimumMhz(profile, selector));
  if (args.json) {
    std::cout << nlohmann::json{{"sm_clock_mhz", mhz}}.dump() << "\n";
  } else {
    std::cout << mhz << "\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterFrequencyCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("frequency", "GPU SM-clock (frequency) optimizer tools");
  cmd->require_subcommand(1);
  auto args = std::make_shared<SelectArgs>();
  auto* select =
      cmd->add_subcommand("select", "Print the SM clock (MHz) a saved frequency profile leads to");
  CLI::Option* eta = nullptr;
  CLI::Option* max_slowdown = nullptr;
  AddSelectorOptions(select, args.get(), "Frequency profile (JSON, zeus-frequency-profile)", &eta,
                     &max_slowdown);
  select->add_flag("--json", args->json, "Print {\"sm_clock_mhz\": MHz}");
  select->callback([args, exit_code, eta, max_slowdown] {
    const OptimumKind kind = CheckSelector(*args, eta->count() > 0, max_slowdown->count() > 0);
    Status status = RunFrequencySelect(*args, kind);
    if (!status.ok()) {
      std::cerr << "zeus frequency select: " << status.message() << "\n";
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace zeus::cli
