// `zeus show-env [--json]`: what this machine offers Zeus.

#include <iostream>

#include "zeus/util/env.h"

#include "tools/commands.h"

namespace zeus::cli {

void RegisterShowEnvCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("show-env", "Show the GPUs and CPUs Zeus can measure and control");
  cmd->callback([exit_code] {
    // TODO(device layer): GPUs via NVML and CPUs via RAPL.
    std::cout << "Dry run (ZEUS_DRY_RUN): " << (IsDryRun() ? "on" : "off") << "\n";
    *exit_code = 0;
  });
}

}  // namespace zeus::cli
