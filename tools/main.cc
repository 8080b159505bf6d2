// The `zeus` command-line tool.
//
// Exit status: 0 on success; 2 for a usage error (unknown option, bad value,
// missing subcommand); 1 when a command fails, including when its output
// cannot be written. `zeus monitor` documents its own codes (see
// tools/monitor_command.cc).

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zeus/version.h"

#include "tools/commands.h"
#include "tools/help_format.h"

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

// Applies ZEUS_LOG_LEVEL (trace, debug, info, warn or warning, error,
// critical, off, any case, or Python's numbers 10-50) to the logs on stderr;
// unset or empty: info. False, after saying why on stderr, for another value.
bool ApplyEnvLogLevel() {
  const char* raw = std::getenv("ZEUS_LOG_LEVEL");
  std::string value = raw == nullptr ? "" : raw;
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value.empty()) return true;
  struct Name {
    const char* name;
    spdlog::level::level_enum level;
  };
  for (const Name& n : {Name{"trace", spdlog::level::trace}, Name{"debug", spdlog::level::debug},
                        Name{"10", spdlog::level::debug}, Name{"info", spdlog::level::info},
                        Name{"20", spdlog::level::info}, Name{"warn", spdlog::level::warn},
                        Name{"warning", spdlog::level::warn}, Name{"30", spdlog::level::warn},
                        Name{"error", spdlog::level::err}, Name{"40", spdlog::level::err},
                        Name{"critical", spdlog::level::critical},
                        Name{"50", spdlog::level::critical}, Name{"off", spdlog::level::off}}) {
    if (value == n.name) {
      spdlog::set_level(n.level);
      return true;
    }
  }
  std::fprintf(stderr,
               "zeus: ZEUS_LOG_LEVEL='%s': expected trace, debug, info, warning, error, critical "
               "or off\n",
               raw);
  return false;
}

// --version on every subcommand, as on `zeus` itself.
void AddVersionFlags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->set_version_flag("--version", "zeus " ZEUS_VERSION);
    AddVersionFlags(*sub);
  }
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
  if (!ApplyEnvLogLevel()) return zeus::cli::kUsageExitCode;
  int exit_code = 0;
#ifdef ZEUS_WITH_SERVICES
  zeus::cli::RegisterDaemonCommand(app, &exit_code);
  zeus::cli::RegisterExporterCommand(app, &exit_code);
#else
  RegisterMissingServices(app, &exit_code);
#endif
  zeus::cli::RegisterFrequencyCommand(app, &exit_code);
  zeus::cli::RegisterMonitorCommand(app, &exit_code);
  zeus::cli::RegisterPowerLimitCommand(app, &exit_code);
#ifdef ZEUS_WITH_SERVICES
  zeus::cli::RegisterServeCommand(app, &exit_code);
#endif
  zeus::cli::RegisterShowEnvCommand(app, &exit_code);
  zeus::cli::RegisterSimulateCommand(app, &exit_code);
  AddVersionFlags(app);
  zeus::cli::TidyHelp(app);
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
