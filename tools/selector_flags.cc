#include "tools/selector_flags.h"

#include <iostream>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace zeus::cli {

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

// "cost selector, eta 0.5", "slowdown selector, at most 1.1x the time".
std::string SelectorDescription(const SelectArgs& args, OptimumKind kind) {
  switch (kind) {
    case OptimumKind::kCost:
      return fmt::format("cost selector, eta {}", args.eta);
    case OptimumKind::kSlowdown:
      return fmt::format("slowdown selector, at most {}x the time", args.max_slowdown);
    default:
      return args.selector + " selector";
  }
}

// The --selector, --eta and --max-slowdown flags of `select` and `plot`.
void AddSelectorOptions(CLI::App* cmd, SelectArgs* args, const std::string& profile_help,
                        CLI::Option** eta, CLI::Option** max_slowdown) {
  cmd->add_option("--profile", args->profile_path, profile_help)->required();
  cmd->add_option("--selector", args->selector, "energy, time, cost or slowdown")
      ->capture_default_str();
  *eta = cmd->add_option("--eta", args->eta, "Cost selector only: weight of energy, in [0, 1]")
             ->capture_default_str()
             ->check(NumberIn(0.0, 1.0));
  *max_slowdown =
      cmd->add_option("--max-slowdown", args->max_slowdown,
                      "Slowdown selector only: allowed time factor vs the highest setting, >= 1")
          ->capture_default_str()
          ->check(NumberIn(1.0, 1e6));
}

namespace {

// Adds the subcommand `name` of `cmd` with the selector options bound to
// `args`, running `run`; returns it for the caller's own flags.
CLI::App* AddSelectorCommand(CLI::App* cmd, const std::string& name, const std::string& description,
                             const std::string& profile_help, std::shared_ptr<SelectArgs> args,
                             SelectorRun run, int* exit_code) {
  CLI::App* sub = cmd->add_subcommand(name, description);
  CLI::Option* eta = nullptr;
  CLI::Option* max_slowdown = nullptr;
  AddSelectorOptions(sub, args.get(), profile_help, &eta, &max_slowdown);
  const std::string context = "zeus " + cmd->get_name() + " " + name + ": ";
  sub->callback([args, run = std::move(run), exit_code, eta, max_slowdown, context] {
    const OptimumKind kind = CheckSelector(*args, eta->count() > 0, max_slowdown->count() > 0);
    Status status = run(*args, kind);
    if (!status.ok()) {
      std::cerr << context << status.message() << "\n";
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
  return sub;
}

}  // namespace

void RegisterKnobCommand(CLI::App& app, const KnobCommandSpec& spec, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(spec.name, spec.description);
  cmd->require_subcommand(1);
  auto select_args = std::make_shared<SelectArgs>();
  AddSelectorCommand(cmd, "select", spec.select_description, spec.profile_help, select_args,
                     spec.select, exit_code)
      ->add_flag("--json", select_args->json, spec.json_help);
  auto plot_args = std::make_shared<SelectArgs>();
  CLI::App* plot = AddSelectorCommand(cmd, "plot", spec.plot_description, spec.profile_help,
                                      plot_args, spec.plot, exit_code);
  plot->add_option("--out", plot_args->out_path, "The SVG file to write")->required();
  plot->footer("Draws with gnuplot (Debian package gnuplot-nox), which must be on PATH.");
}

}  // namespace zeus::cli
