// The optimum-selector flags that `zeus power-limit` and `zeus frequency`
// share: --profile, --selector, --eta (cost only), --max-slowdown (slowdown
// only). A flag given with a selector that ignores it is a usage error (exit
// 2), not silently dropped.

#ifndef ZEUS_TOOLS_SELECTOR_FLAGS_H_
#define ZEUS_TOOLS_SELECTOR_FLAGS_H_

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "zeus/core/optimum_selector.h"
#include "zeus/status.h"

namespace zeus::cli {

struct SelectArgs {
  std::string profile_path;
  std::string selector = "cost";
  double eta = 0.5;
  double max_slowdown = 1.1;
  bool json = false;
  // `plot` only: the SVG to write.
  std::string out_path;
};

// Adds --profile (described by `profile_help`), --selector, --eta and
// --max-slowdown to `cmd`, bound to `args`; `eta` and `max_slowdown` receive
// their options (to tell whether they were given).
void AddSelectorOptions(CLI::App* cmd, SelectArgs* args, const std::string& profile_help,
                        CLI::Option** eta, CLI::Option** max_slowdown);

// The selector kind. Throws UsageError for an unknown --selector, or
// --eta/--max-slowdown given (`eta_given`, `max_slowdown_given`) with a
// selector that ignores them.
OptimumKind CheckSelector(const SelectArgs& args, bool eta_given, bool max_slowdown_given);

// "cost selector, eta 0.5", "slowdown selector, at most 1.1x the time".
std::string SelectorDescription(const SelectArgs& args, OptimumKind kind);

// What a `select` or `plot` subcommand does with its checked flags.
using SelectorRun = std::function<Status(const SelectArgs& args, OptimumKind kind)>;

// A knob's command (`zeus power-limit`, `zeus frequency`): its `select` and
// `plot` subcommands over a saved profile, in the knob's words.
struct KnobCommandSpec {
  // The subcommand of `zeus`, e.g. "power-limit", and its help line.
  std::string name;
  std::string description;
  // The --profile help, e.g. "Profile: Zeus JSON or CSV log".
  std::string profile_help;
  // `select`: its help line, the --json help, and what it runs.
  std::string select_description;
  std::string json_help;
  SelectorRun select;
  // `plot` (adds --out, the SVG to write): its help line and what it runs.
  std::string plot_description;
  SelectorRun plot;
};

// Adds `zeus <spec.name> select|plot`. Each checks its selector flags
// (CheckSelector), runs and sets *exit_code: 0, or 1 with
// "zeus <name> <select|plot>: <error>" on stderr.
void RegisterKnobCommand(CLI::App& app, const KnobCommandSpec& spec, int* exit_code);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_SELECTOR_FLAGS_H_
