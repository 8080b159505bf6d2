// Formats measurements for people (text) and programs (JSON). Measuring code
// never prints; the `zeus monitor` tool hands what it measured to a reporter
// writing to a stream it chooses.
//
// Thread-safety: a reporter is used from one thread at a time.

#ifndef ZEUS_MONITOR_REPORTER_H_
#define ZEUS_MONITOR_REPORTER_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zeus/monitor/energy_monitor.h"

namespace zeus {

// Everything one `zeus monitor` run reports.
struct MonitorReport {
  // The command run (empty when measuring until interrupted).
  std::vector<std::string> command;
  // The command's exit code (128 + N when killed by signal N); nullopt
  // without a command.
  std::optional<int> exit_code;
  // Gpu::index() and Cpu::index() of the measured devices, in the order of
  // the measurement's vectors.
  std::vector<int> gpu_indices;
  std::vector<int> cpu_indices;
  Measurement measurement;
};

class MonitorReporter {
 public:
  virtual ~MonitorReporter() = default;
  // One periodic line for the window `m` (an interval of the run).
  // `elapsed_s` is the time since the run started.
  virtual void ReportInterval(double elapsed_s, const Measurement& m,
                              const MonitorReport& devices) = 0;
  // The final report of the run.
  virtual void ReportFinal(const MonitorReport& report) = 0;
};

// A human-readable table. `out` must outlive the reporter.
std::unique_ptr<MonitorReporter> NewTextReporter(std::ostream* out);
// JSON Lines: each interval as one JSON object on one line, then the final
// report as one more line (alone, it is one JSON document): {"command", "exit_code", "time_s",
// "gpus": [{"index", "energy_j", "average_power_w", "source", "below_counter_resolution"}], "cpus":
// [{"index", "package_energy_j", "dram_energy_j"}], "total_gpu_energy_j"}. `out` must outlive the
// reporter.
std::unique_ptr<MonitorReporter> NewJsonReporter(std::ostream* out);

// "counter", "counter+power", "power_integration" or "instant_power_approximation".
const char* GpuEnergySourceName(GpuEnergySource source);

}  // namespace zeus

#endif  // ZEUS_MONITOR_REPORTER_H_
