// `zeus power-limit select --profile FILE [--selector energy|time|cost|slowdown]
//  [--eta 0.5] [--max-slowdown 1.1] [--json]`: the limit a saved profile
// (our JSON or the Python Zeus CSV log) leads to, in W. --eta applies only to
// the cost selector and --max-slowdown only to slowdown: given with another
// selector, they are refused (usage error, exit 2) rather than ignored.
//
// `zeus power-limit plot --profile FILE --out FILE.svg [selector flags]`:
// draws the profile's energy and time per step against the power limit, the
// selected limit marked (gnuplot; see include/zeus/plot/gnuplot.h), and
// prints the selected limit as `select` does.

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/plot/gnuplot.h"

#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/selector_flags.h"

namespace zeus::cli {
namespace {

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

Status RunPlot(const SelectArgs& args, OptimumKind kind) {
  OptimumSelector selector{kind, args.eta, args.max_slowdown};
  ZEUS_ASSIGN_OR_RETURN(PowerLimitProfile profile, LoadProfile(args.profile_path));
  ZEUS_ASSIGN_OR_RETURN(uint32_t limit_mw, SelectOptimumMw(profile, selector));
  std::vector<PowerLimitMeasurement> by_limit = profile.measurements;
  std::sort(by_limit.begin(), by_limit.end(),
            [](const auto& a, const auto& b) { return a.power_limit_mw < b.power_limit_mw; });
  PlotFigure figure;
  figure.title = fmt::format("Power-limit profile {} ({} GPU{})", args.profile_path,
                             profile.num_gpus, profile.num_gpus == 1 ? "" : "s");
  figure.x_label = "power limit (W)";
  figure.y_label = "energy per step (J)";
  figure.y2_label = "time per step (s)";
  PlotSeries energy{"energy per step (J)", {}, PlotStyle::kLinesPoints, false};
  PlotSeries time{"time per step (s)", {}, PlotStyle::kLinesPoints, true};
  for (const PowerLimitMeasurement& m : by_limit) {
    energy.points.emplace_back(m.power_limit_mw / 1000.0, m.energy_per_step_j());
    time.points.emplace_back(m.power_limit_mw / 1000.0, m.time_per_step_s());
  }
  figure.series = {energy, time};
  figure.marker_x = limit_mw / 1000.0;
  figure.marker_label =
      fmt::format("chosen: {} W ({})", limit_mw / 1000.0, SelectorDescription(args, kind));
  ZEUS_RETURN_IF_ERROR(RenderSvgFigures({{figure, args.out_path}}));
  std::cout << fmt::format("{}", limit_mw / 1000.0) << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterPowerLimitCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("power-limit", "GPU power-limit optimizer tools");
  cmd->require_subcommand(1);
  auto args = std::make_shared<SelectArgs>();
  auto* select =
      cmd->add_subcommand("select", "Print the power limit (W) a saved profile leads to");
  CLI::Option* eta = nullptr;
  CLI::Option* max_slowdown = nullptr;
  AddSelectorOptions(select, args.get(), "Profile: Zeus JSON or CSV log", &eta, &max_slowdown);
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

  auto plot_args = std::make_shared<SelectArgs>();
  auto* plot = cmd->add_subcommand(
      "plot", "Draw a profile's energy and time per power limit, the selected one marked (SVG)");
  CLI::Option* plot_eta = nullptr;
  CLI::Option* plot_max_slowdown = nullptr;
  AddSelectorOptions(plot, plot_args.get(), "Profile: Zeus JSON or CSV log", &plot_eta,
                     &plot_max_slowdown);
  plot->add_option("--out", plot_args->out_path, "The SVG file to write")->required();
  plot->footer("Draws with gnuplot (Debian package gnuplot-nox), which must be on PATH.");
  plot->callback([plot_args, exit_code, plot_eta, plot_max_slowdown] {
    const OptimumKind kind =
        CheckSelector(*plot_args, plot_eta->count() > 0, plot_max_slowdown->count() > 0);
    Status status = RunPlot(*plot_args, kind);
    if (!status.ok()) {
      std::cerr << "zeus power-limit plot: " << status.message() << "\n";
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace zeus::cli
