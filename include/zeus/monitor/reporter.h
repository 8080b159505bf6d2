// Formats measurements for people (text), programs (JSON) and logs (CSV).
// Measuring code never prints: the `zeus monitor` tool hands what it measured
// to a MonitorReporter writing to a stream it chooses, and an EnergyMonitor
// hands each window it closes to its WindowReporter.
//
// Thread-safety: a MonitorReporter is used from one thread at a time; see
// WindowReporter for its own rule.

#ifndef ZEUS_MONITOR_REPORTER_H_
#define ZEUS_MONITOR_REPORTER_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zeus/monitor/energy_monitor.h"
#include "zeus/status.h"

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
  // With `zeus monitor --power-domain D`: D's name ("device_instant", ...);
  // per GPU (in the order of gpu_indices) its latest power in D, in W (set
  // before each interval report), and in the final report the integral of D
  // over the run, in J. Empty without --power-domain.
  std::string power_domain;
  std::vector<double> domain_power_w;
  std::vector<double> domain_energy_j;
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
// [{"index", "package_energy_j", "dram_energy_j"}], "total_gpu_energy_j"}; with a power domain,
// also "power_domain" and, per GPU, "domain_power_w" (intervals) or "domain_energy_j" (final).
// `out` must outlive the reporter.
std::unique_ptr<MonitorReporter> NewJsonReporter(std::ostream* out);

// Receives the windows an EnergyMonitor closes (EnergyMonitorOptions::
// window_reporter), e.g. to log them.
//
// Thread-safety: one monitor serialises its calls; a reporter shared by
// several monitors must lock.
class WindowReporter {
 public:
  virtual ~WindowReporter() = default;
  // Called by EnergyMonitor::Create with the number of GPUs measured; an
  // error fails Create.
  virtual Status Open(size_t num_gpus) = 0;
  // Called after each successful End with its measurement; an error is
  // returned by End (the window is closed either way).
  virtual Status ReportWindow(const Measurement& m) = 0;
};

// Appends one row "start_time,window_name,elapsed_time,gpu0_energy,..."
// (s, s, J; the format of the Zeus power-limit profiles) per window to the
// file `path`. Open writes the header when the file is new or empty, and
// reads only the first line of an existing regular file: kInvalidArgument
// naming the file when that header is for another number of GPUs. A file
// that is not regular (a pipe, /dev/stdout) gets the header without being
// read. Each row is appended and flushed by itself (open, write, close), so
// a crash loses no finished window. kIoError naming the file when a write
// fails. Thread-safe. The GPU columns are named by `gpu_indices` (the
// original Zeus names them by GPU index: gpu1_energy,gpu3_energy for GPUs
// 1 and 3), which must then list as many GPUs as the monitor measures; empty
// names them by position.
std::shared_ptr<WindowReporter> NewCsvWindowReporter(std::string path,
                                                     std::vector<int> gpu_indices = {});

// "start_time,window_name,elapsed_time,gpu0_energy,...": the CSV log header
// for `num_gpus` GPUs named by position, or for the GPUs `gpu_indices`.
std::string EnergyCsvHeader(size_t num_gpus);
std::string EnergyCsvHeader(const std::vector<int>& gpu_indices);
// One CSV log row for `m` (start_wall_time_s, Unix seconds, first; no trailing
// newline); a name holding a comma, quote or newline is quoted as RFC 4180 says.
std::string EnergyCsvRow(const Measurement& m);

// "counter", "counter+power", "power_integration" or "instant_power_approximation".
const char* GpuEnergySourceName(GpuEnergySource source);

}  // namespace zeus

#endif  // ZEUS_MONITOR_REPORTER_H_
