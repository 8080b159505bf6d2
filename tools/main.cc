// The `zeus` command-line tool.
//
// Exit status: 0 on success; 2 for a usage error (unknown option, bad value,
// missing subcommand); 1 when a command fails, including when its output
// cannot be written. `zeus monitor` documents its own codes (see
// tools/monitor_command.cc).

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zeus/version.h"

#include "tools/commands.h"

namespace {

// The deepest subcommand the command line selected (`app` itself if none).
CLI::App* SelectedCommand(CLI::App& app) {
  CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  return current;
}

// "zeus", "zeus monitor", "zeus power-limit select".
std::string CommandName(CLI::App* command) {
  std::string name = command->get_name();
  for (CLI::App* parent = command->get_parent(); parent != nullptr; parent = parent->get_parent()) {
    name = parent->get_name() + " " + name;
  }
  return name;
}

// Prints a usage error as "zeus <cmd>: <message>" and returns 2.
int UsageError(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* command = SelectedCommand(app);
  const std::string name = CommandName(command);
  std::vector<std::string> choices;
  for (CLI::App* sub : command->get_subcommands([](CLI::App*) { return true; })) {
    choices.push_back(sub->get_name());
  }
  if (!choices.empty() && command->get_subcommands().empty() &&
      dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i) list += (i == 0 ? "" : ", ") + choices[i];
    const std::vector<std::string> extra = command->remaining();
    if (extra.empty()) {
      std::fprintf(stderr, "%s: missing subcommand (one of: %s)\n", name.c_str(), list.c_str());
    } else {
      std::fprintf(stderr, "%s: unknown subcommand '%s' (one of: %s)\n", name.c_str(),
                   extra.front().c_str(), list.c_str());
    }
  } else {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
  }
  std::fprintf(stderr, "Run '%s --help' for usage.\n", name.c_str());
  return zeus::cli::kUsageExitCode;
}

#ifndef ZEUS_WITH_SERVICES
// A build with -DZEUS_BUILD_SERVICES=OFF (the README's quick start) has no
// daemon, exporter or serve: each name says how to get it (exit 2).
void RegisterMissingServices(CLI::App& app, int* exit_code) {
  for (const char* name : {"daemon", "exporter", "serve"}) {
    CLI::App* cmd =
        app.add_subcommand(name, "(not built: reconfigure with -DZEUS_BUILD_SERVICES=ON)");
    cmd->allow_extras();
    cmd->callback([name, exit_code] {
      std::fprintf(stderr,
                   "zeus %s: this zeus was built without the services; rebuild with "
                   "cmake -DZEUS_BUILD_SERVICES=ON\n",
                   name);
      *exit_code = zeus::cli::kUsageExitCode;
    });
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Zeus: measure and cut the GPU energy of deep-learning training."};
  app.name("zeus");
  app.require_subcommand(1);
  app.set_version_flag("--version", "zeus " ZEUS_VERSION);
  app.footer(
      "Exit status: 0 on success, 2 for a usage error, 1 when a command fails (including\n"
      "when its output cannot be written); zeus monitor exits with its command's status\n"
      "(see zeus monitor --help).");
  // Logs (dry-run notices included) go to stderr so stdout carries only
  // reports, e.g. the JSON of `--json`.
  spdlog::set_default_logger(spdlog::stderr_color_mt("zeus"));
  int exit_code = 0;
#ifdef ZEUS_WITH_SERVICES
  zeus::cli::RegisterDaemonCommand(app, &exit_code);
  zeus::cli::RegisterExporterCommand(app, &exit_code);
#else
  RegisterMissingServices(app, &exit_code);
#endif
  zeus::cli::RegisterMonitorCommand(app, &exit_code);
  zeus::cli::RegisterPowerLimitCommand(app, &exit_code);
#ifdef ZEUS_WITH_SERVICES
  zeus::cli::RegisterServeCommand(app, &exit_code);
#endif
  zeus::cli::RegisterShowEnvCommand(app, &exit_code);
  zeus::cli::RegisterSimulateCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version.
    return UsageError(app, e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zeus: %s\n", e.what());
    return 1;
  }
  // Reports go to stdout: a full disk or a closed pipe must not pass for
  // success.
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
    CLI::App* command = SelectedCommand(app);
    std::fprintf(stderr, "%s: cannot write the output to stdout: %s\n",
                 CommandName(command).c_str(), errno != 0 ? std::strerror(errno) : "write error");
    if (exit_code == 0) {
      exit_code = command->get_name() == "monitor" ? zeus::cli::kMonitorFailedExitCode : 1;
    }
  }
  return exit_code;
}
