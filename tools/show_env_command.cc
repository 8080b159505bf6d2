// `zeus show-env [--json]`: what this machine offers Zeus.

#include <iostream>
#include <memory>

#include "zeus/device/environment.h"

#include "tools/commands.h"

namespace zeus::cli {

void RegisterShowEnvCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "show-env", "Show the GPUs and CPUs Zeus can measure and control (changes nothing)");
  auto json = std::make_shared<bool>(false);
  auto powercap_root = std::make_shared<std::string>("/sys/class/powercap");
  cmd->add_flag("--json", *json, "Print a JSON document instead of text");
  cmd->add_option("--powercap-root", *powercap_root, "Root of the powercap sysfs tree")
      ->capture_default_str();
  cmd->callback([exit_code, json, powercap_root] {
    EnvironmentOptions options;
    options.powercap_root = *powercap_root;
    EnvironmentDescription env = DescribeEnvironment(options);
    if (*json) {
      std::cout << EnvironmentToJson(env);
    } else {
      WriteEnvironmentText(env, std::cout);
    }
    // A machine with nothing to measure is a valid answer, not a failure.
    *exit_code = 0;
  });
}

}  // namespace zeus::cli
