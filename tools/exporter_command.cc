// `zeus exporter [--listen HOST:PORT] [--gpus LIST] [--cpus LIST]
//  [--powercap-root DIR] [--dcgm-names]`: serves Prometheus metrics of the selected GPUs and
// CPU sockets at GET /metrics until SIGINT or SIGTERM (metrics: see
// include/zeus/exporter/device_exporter.h). Once listening, prints one line
// "zeus exporter: serving http://HOST:PORT/metrics" to stdout. Only reads
// the devices. Exit status: 0 after SIGINT/SIGTERM, 2 for a usage error
// (a bad --listen, --gpus or --cpus), 1 when there is nothing to export or
// the address cannot be listened on.

#include <signal.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "zeus/device/devices.h"
#include "zeus/exporter/device_exporter.h"

#include "tools/commands.h"
#include "tools/device_flags.h"
#include "tools/service_loop.h"

namespace zeus::cli {
namespace {

struct ExporterFlags {
  std::string listen = "127.0.0.1:9401";
  bool dcgm_names = false;
  std::string gpus;
  std::string cpus;
  std::string powercap_root = "/sys/class/powercap";
};

StatusOr<SelectedDevices> OpenDevices(const ExporterFlags& flags) {
  return OpenFlagDevices("exporter", "not exporting", flags.gpus, flags.cpus, flags.powercap_root);
}

int RunExporter(const ExporterFlags& flags) {
  // Blocked before any thread starts, so every thread inherits the mask and
  // only the wait below receives them.
  const StopSignals stop_signals;
  // A scraper that hangs up mid-answer must not kill the exporter.
  signal(SIGPIPE, SIG_IGN);

  StatusOr<SelectedDevices> devices = OpenDevices(flags);
  if (!devices.ok()) {
    std::cerr << "zeus exporter: " << devices.status().message() << "\n";
    return devices.status().code() == StatusCode::kInvalidArgument ? kUsageExitCode : 1;
  }
  DeviceMetricsOptions metrics_options;
  metrics_options.dcgm_compatible = flags.dcgm_names;
  DeviceMetrics metrics(devices->GpuPointers(), devices->CpuPointers(), metrics_options);
  DeviceExporterOptions options;
  options.listen_address = flags.listen;
  StatusOr<std::unique_ptr<DeviceExporter>> exporter = DeviceExporter::Start(&metrics, options);
  if (!exporter.ok()) {
    std::cerr << "zeus exporter: --listen " << exporter.status().message() << "\n";
    return exporter.status().code() == StatusCode::kInvalidArgument ? kUsageExitCode : 1;
  }
  std::cout << "zeus exporter: serving " << (*exporter)->MetricsUrl() << " ("
            << devices->gpus.size() << " GPUs, " << devices->cpus.size() << " CPU sockets)"
            << std::endl;
  const int signal_number = stop_signals.Wait();
  spdlog::info("zeus exporter: stopping on signal {}", signal_number);
  return 0;
}

}  // namespace

void RegisterExporterCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "exporter", "Serve Prometheus metrics of GPU and CPU energy and power (GET /metrics)");
  auto flags = std::make_shared<ExporterFlags>();
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT to serve on (port 0: any free port; the default leaves 9400 to the "
                  "DCGM exporter)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_flag("--dcgm-names", flags->dcgm_names,
                "Also serve each GPU's power, energy, temperature and limits under the DCGM "
                "exporter's names and labels (DCGM_FI_DEV_POWER_USAGE{gpu,UUID,modelName,...}), "
                "for the dashboards written for it");
  cmd->add_option("--gpus", flags->gpus,
                  "Comma-separated GPU indices, each at most once (default: all)");
  cmd->add_option("--cpus", flags->cpus,
                  "Comma-separated CPU socket indices, each at most once (default: all)");
  cmd->add_option("--powercap-root", flags->powercap_root, "Root of the powercap sysfs tree")
      ->capture_default_str();
  cmd->footer(
      "Metrics (per scrape, read on demand): zeus_gpu_energy_joules_total, zeus_gpu_power_watts,\n"
      "zeus_gpu_power_limit_watts, zeus_gpu_up, zeus_gpu_read_errors_total (labels gpu, uuid,\n"
      "name); zeus_cpu_package_energy_joules_total, zeus_cpu_dram_energy_joules_total,\n"
      "zeus_cpu_up, zeus_cpu_read_errors_total (label socket). A device read that fails sets\n"
      "its *_up to 0 and counts an error; the exporter keeps serving. It never changes a device\n"
      "setting. Exit status: 0 after SIGINT/SIGTERM, 2 for a usage error, 1 when there is\n"
      "nothing to export or the address cannot be listened on.");
  cmd->callback([exit_code, flags] { *exit_code = RunExporter(*flags); });
}

}  // namespace zeus::cli
