// Registration of the `zeus` subcommands; one file per subcommand.
//
// Each Register*Command adds a CLI11 subcommand to `app` whose callback runs
// the command and stores the process exit code in `*exit_code`. Errors from
// the library arrive as Status; the command prints "zeus <cmd>: <message>" to
// stderr and sets a non-zero exit code (CLI edge: no exceptions escape except
// CLI11's own parse errors, which main() handles). A bad flag value found in a
// callback throws UsageError, so every usage error exits 2. main() flushes
// stdout after the command and fails when that write failed.

#ifndef ZEUS_TOOLS_COMMANDS_H_
#define ZEUS_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace zeus::cli {

// The exit status of every usage error (unknown option, bad value, missing
// subcommand), as most Unix tools use it.
inline constexpr int kUsageExitCode = 2;
// `zeus monitor`'s own failure (it could not measure or report), distinct
// from its command's status; 125 as env(1), timeout(1) and docker use it.
inline constexpr int kMonitorFailedExitCode = 125;

// A usage error found after parsing: "OPTION VALUE: WHY". main() prints it
// after "zeus <cmd>: " and exits kUsageExitCode.
class UsageError : public CLI::ValidationError {
 public:
  UsageError(const std::string& option, const std::string& value, const std::string& why)
      : CLI::ValidationError(option + " " + value, why) {}
};

void RegisterDaemonCommand(CLI::App& app, int* exit_code);
void RegisterExporterCommand(CLI::App& app, int* exit_code);
void RegisterFrequencyCommand(CLI::App& app, int* exit_code);
void RegisterMonitorCommand(CLI::App& app, int* exit_code);
void RegisterPowerLimitCommand(CLI::App& app, int* exit_code);
void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterShowEnvCommand(CLI::App& app, int* exit_code);
void RegisterSimulateCommand(CLI::App& app, int* exit_code);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_COMMANDS_H_
