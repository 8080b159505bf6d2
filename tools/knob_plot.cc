#include "tools/knob_plot.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "zeus/plot/gnuplot.h"

namespace zeus::cli {

std::string FormatSetting(uint32_t setting, const KnobPlotAxis& axis) {
  return fmt::format("{}", setting / axis.settings_per_unit);
}

Status PlotKnobProfile(const KnobProfile& profile, uint32_t chosen, const KnobPlotAxis& axis,
                       const SelectArgs& args, OptimumKind kind) {
  std::vector<KnobMeasurement> by_setting = profile.measurements;
  std::sort(by_setting.begin(), by_setting.end(),
            [](const auto& a, const auto& b) { return a.setting < b.setting; });
  PlotFigure figure;
  figure.title = fmt::format("{} {} ({} GPU{})", axis.title, args.profile_path, profile.num_gpus,
                             profile.num_gpus == 1 ? "" : "s");
  figure.x_label = axis.x_label;
  figure.y_label = "energy per step (J)";
  figure.y2_label = "time per step (s)";
  PlotSeries energy{"energy per step (J)", {}, PlotStyle::kLinesPoints, false};
  PlotSeries time{"time per step (s)", {}, PlotStyle::kLinesPoints, true};
  for (const KnobMeasurement& m : by_setting) {
    energy.points.emplace_back(m.setting / axis.settings_per_unit, m.energy_per_step_j());
    time.points.emplace_back(m.setting / axis.settings_per_unit, m.time_per_step_s());
  }
  figure.series = {energy, time};
  figure.marker_x = chosen / axis.settings_per_unit;
  figure.marker_label = fmt::format("chosen: {} {} ({})", FormatSetting(chosen, axis), axis.unit,
                                    SelectorDescription(args, kind));
  ZEUS_RETURN_IF_ERROR(RenderSvgFigures({{figure, args.out_path}}));
  std::cout << FormatSetting(chosen, axis) << "\n";
  return Status::Ok();
}

}  // namespace zeus::cli
