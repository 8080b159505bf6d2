// Registration of the `zeus` subcommands; one file per subcommand.
//
// Each Register*Command adds a CLI11 subcommand to `app` whose callback runs
// the command and stores the process exit code in `*exit_code`. Errors from
// the library arrive as Status; the command prints "zeus <cmd>: <message>" to
// stderr and sets a non-zero exit code (CLI edge: no exceptions escape except
// CLI11's own parse errors, which main() handles).

#ifndef ZEUS_TOOLS_COMMANDS_H_
#define ZEUS_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace zeus::cli {

void RegisterMonitorCommand(CLI::App& app, int* exit_code);
void RegisterPowerLimitCommand(CLI::App& app, int* exit_code);
void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterShowEnvCommand(CLI::App& app, int* exit_code);
void RegisterSimulateCommand(CLI::App& app, int* exit_code);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_COMMANDS_H_
