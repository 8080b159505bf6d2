// `zeus frequency select --profile FILE [--selector energy|time|cost|slowdown]
//  [--eta 0.5] [--max-slowdown 1.1] [--json]`: the SM clock (MHz) a saved
// frequency profile (GlobalFrequencyOptimizer's profile_path, format
// "zeus-frequency-profile") leads to, chosen by the same selectors as power
// limits (MaxPower: the profile's power limit). Flag rules as `zeus
// power-limit select` (tools/selector_flags.h).
//
// `zeus frequency plot --profile FILE --out FILE.svg [selector flags]`: draws
// the profile's energy and time per step against the SM clock, the selected
// clock marked (tools/knob_plot.h), and prints the selected clock as `select`
// does.

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/core/frequency_profile.h"
#include "zeus/core/optimum_selector.h"

#include "tools/commands.h"
#include "tools/knob_plot.h"
#include "tools/selector_flags.h"

namespace zeus::cli {
namespace {

const KnobPlotAxis kClockAxis{"Frequency profile", "SM clock (MHz)", "MHz", 1.0};

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

Status RunFrequencyPlot(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(FrequencyProfile profile, LoadFrequencyProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t mhz, SelectOptimumMhz(profile, selector));
  return PlotKnobProfile(profile.profile, mhz, kClockAxis, args, kind);
}

}  // namespace

void RegisterFrequencyCommand(CLI::App& app, int* exit_code) {
  RegisterKnobCommand(
      app,
      {"frequency", "GPU SM-clock (frequency) optimizer tools",
       "Frequency profile (JSON, zeus-frequency-profile)",
       "Print the SM clock (MHz) a saved frequency profile leads to",
       "Print {\"sm_clock_mhz\": MHz}", RunFrequencySelect,
       "Draw a frequency profile's energy and time per SM clock, the selected one marked (SVG)",
       RunFrequencyPlot},
      exit_code);
}

}  // namespace zeus::cli
