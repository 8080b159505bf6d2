// The `zeus` command-line tool.

#include <cstdio>
#include <exception>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zeus/version.h"

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Zeus: measure and cut the GPU energy of deep-learning training."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zeus " ZEUS_VERSION);
  // Logs (dry-run notices included) go to stderr so stdout carries only
  // reports, e.g. the JSON of `--json`.
  spdlog::set_default_logger(spdlog::stderr_color_mt("zeus"));
  int exit_code = 0;
  zeus::cli::RegisterMonitorCommand(app, &exit_code);
  zeus::cli::RegisterPowerLimitCommand(app, &exit_code);
  zeus::cli::RegisterServeCommand(app, &exit_code);
  zeus::cli::RegisterShowEnvCommand(app, &exit_code);
  zeus::cli::RegisterSimulateCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zeus: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
