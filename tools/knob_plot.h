// The profile figure `zeus power-limit plot` and `zeus frequency plot` draw:
// energy and time per step against the knob's setting, the setting the
// selector chooses marked (gnuplot, include/zeus/plot/gnuplot.h).

#ifndef ZEUS_TOOLS_KNOB_PLOT_H_
#define ZEUS_TOOLS_KNOB_PLOT_H_

#include <cstdint>
#include <string>

#include "zeus/core/knob_profile.h"
#include "zeus/core/optimum_selector.h"
#include "zeus/status.h"

#include "tools/selector_flags.h"

namespace zeus::cli {

// A knob's words and units on the figure.
struct KnobPlotAxis {
  // The title's start, e.g. "Power-limit profile" (then the file and GPUs).
  std::string title;
  // The x axis, e.g. "power limit (W)".
  std::string x_label;
  // The plotted unit, e.g. "W" (in "chosen: 250 W (cost selector, eta 0.5)").
  std::string unit;
  // KnobMeasurement::setting units per plotted unit (mW per W: 1000).
  double settings_per_unit = 1.0;
};

// The chosen setting in plotted units as `select` prints it ("250", "1530").
std::string FormatSetting(uint32_t setting, const KnobPlotAxis& axis);

// Draws `profile` to args.out_path with `chosen` (a setting) marked as chosen
// by the selector of `args`/`kind`, then prints FormatSetting(chosen) on
// stdout. Errors: RenderSvgFigures's (gnuplot missing, unwritable path).
Status PlotKnobProfile(const KnobProfile& profile, uint32_t chosen, const KnobPlotAxis& axis,
                       const SelectArgs& args, OptimumKind kind);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_KNOB_PLOT_H_
