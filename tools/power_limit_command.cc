// `zeus power-limit select --profile FILE [--selector energy|time|cost|slowdown]
//  [--eta 0.5] [--max-slowdown 1.1] [--json]`: the limit a saved profile
// (our JSON or the Python Zeus CSV log) leads to, in W. --eta applies only to
// the cost selector and --max-slowdown only to slowdown: given with another
// selector, they are refused (usage error, exit 2) rather than ignored.
//
// `zeus power-limit plot --profile FILE --out FILE.svg [selector flags]`:
// draws the profile's energy and time per step against the power limit, the
// selected limit marked (tools/knob_plot.h), and prints the selected limit as
// `select` does.

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"

#include "tools/commands.h"
#include "tools/knob_plot.h"
#include "tools/selector_flags.h"

namespace zeus::cli {
namespace {

const KnobPlotAxis kPowerLimitAxis{"Power-limit profile", "power limit (W)", "W", 1000.0};

Status RunSelect(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(PowerLimitProfile profile, LoadProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t limit_mw, SelectOptimumMw(profile, selector));
  if (args.json) {
    nlohmann::json out = {{"power_limit_w", limit_mw / 1000.0}};
    if (limit_mw % 1000 == 0) out["power_limit_w"] = limit_mw / 1000;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << FormatSetting(limit_mw, kPowerLimitAxis) << "\n";
  }
  return Status::Ok();
}

Status RunPlot(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(PowerLimitProfile profile, LoadProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t limit_mw, SelectOptimumMw(profile, selector));
  return PlotKnobProfile(ToKnobProfile(profile), limit_mw, kPowerLimitAxis, args, kind);
}

}  // namespace

void RegisterPowerLimitCommand(CLI::App& app, int* exit_code) {
  RegisterKnobCommand(
      app,
      {"power-limit", "GPU power-limit optimizer tools", "Profile: Zeus JSON or CSV log",
       "Print the power limit (W) a saved profile leads to", "Print {\"power_limit_w\": W}",
       RunSelect, "Draw a profile's energy and time per power limit, the selected one marked (SVG)",
       RunPlot},
      exit_code);
}

}  // namespace zeus::cli
