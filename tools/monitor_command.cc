// `zeus monitor [--gpus LIST] [--cpus LIST] [--interval S] [--csv FILE] [--json]
//  [--output FILE] [--power-domain D] -- CMD ARGS...`: runs CMD and reports
// its wall time and the energy of every measured device; without CMD,
// measures until SIGINT or SIGTERM. With --power-domain, the GPUs' power in
// domain D (device_instant, device_average, memory_average) is also sampled
// every 20 ms: each interval line shows its latest value and the final
// report its integral beside the counter's energy. With nothing to measure (no GPU, no readable
// RAPL), CMD still runs (a warning on stderr; the report has no devices). Exit codes: kExitHelp.

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "zeus/device/clock.h"
#include "zeus/device/devices.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/monitor/power_monitor.h"
#include "zeus/monitor/reporter.h"
#include "zeus/util/units.h"

#include "tools/commands.h"
#include "tools/device_flags.h"
#include "tools/flag_checks.h"

namespace zeus::cli {
namespace {

// `zeus monitor --help`'s account of exit codes and streams.
constexpr char kExitHelp[] =
    "Exit status: CMD's own (128+N when CMD died of signal N). 125: zeus monitor\n"
    "itself failed (a device error while measuring, or the report or --csv could\n"
    "not be written; when CMD failed too, CMD's status wins). 126: CMD cannot be\n"
    "executed. 127: CMD not found. 2: usage error. With nothing to measure (no GPU,\n"
    "no readable RAPL), CMD runs anyway, with a warning on stderr. Without CMD: 0\n"
    "after SIGINT/SIGTERM, 125 when nothing can be measured.\n"
    "Output: the report goes to -o FILE, else stdout. With --json and CMD but no -o,\n"
    "stdout carries only the JSON and CMD's stdout is sent to stderr. --json writes\n"
    "JSON Lines: one object per --interval (with \"elapsed_s\"), then the final\n"
    "report (with \"command\", \"exit_code\") as the last line; without --interval,\n"
    "one JSON document. --csv appends Python Zeus profile rows (start_time in Unix\n"
    "seconds), reading only the existing file's header line.";

// Signal handlers can only reach globals. The child's pid, once running.
volatile sig_atomic_t g_child_pid = 0;
// The first SIGINT/SIGTERM received while no child runs (0 = none).
volatile sig_atomic_t g_stop_signal = 0;

// Forwards SIGINT/SIGTERM to the child. A terminal's Ctrl-C already reaches
// the whole foreground process group (si_code SI_KERNEL), so only signals
// sent to us alone (kill, si_code <= 0) are forwarded, never twice.
void OnStopSignal(int sig, siginfo_t* info, void*) {
  pid_t child = g_child_pid;
  if (child > 0) {
    if (info == nullptr || info->si_code <= 0) kill(child, sig);
  } else {
    g_stop_signal = sig;
  }
}

void InstallStopHandlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnStopSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

struct MonitorFlags {
  std::string gpus;
  std::string cpus;
  double interval_s = 0.0;
  std::string csv_path;
  bool json = false;
  std::string output_path;
  std::string powercap_root = "/sys/class/powercap";
  std::string power_domain;
  std::vector<std::string> command;
};

// Opens the devices --gpus/--cpus select; warns about a kind that cannot be
// measured when the other can.
StatusOr<SelectedDevices> OpenDevices(const MonitorFlags& flags) {
  return OpenFlagDevices("monitor", "not measuring", flags.gpus, flags.cpus, flags.powercap_root);
}

// Starts `command` as a child with default signal dispositions, its stdout
// sent to our stderr when `stdout_to_stderr`, and makes it the child that
// stop signals are forwarded to (g_child_pid); a stop signal that came
// before is forwarded to it at once. The child exits 127 when the command is
// missing, 126 when it cannot be executed.
StatusOr<pid_t> StartChild(const std::vector<std::string>& command, bool stdout_to_stderr) {
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // Blocked across fork(): a signal forwarded to a child that has not yet
  // put back the default dispositions would run the handler it inherited,
  // which knows no child, and be lost (the command would then run on). The
  // child takes it once they are back.
  sigset_t stop_signals;
  sigset_t previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  pid_t pid = fork();
  if (pid < 0) {
    const int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return InternalError(std::string("fork: ") + std::strerror(fork_errno));
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    execvp(argv[0], argv.data());
    const int exec_errno = errno;
    std::fprintf(stderr, "zeus monitor: cannot run '%s': %s\n", argv[0], std::strerror(exec_errno));
    _exit(exec_errno == ENOENT ? 127 : 126);
  }
  g_child_pid = pid;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // One that another thread took before the child was known.
  if (g_stop_signal != 0) kill(pid, g_stop_signal);
  return pid;
}

// Polls `child` (when set) every few ms until it exits, or until a stop
// signal without a child; calls `on_tick` every interval_s (> 0). Returns the
// child's exit code.
std::optional<int> WaitForEnd(std::optional<pid_t> child, double interval_s,
                              const std::function<void()>& on_tick) {
  using Clock = std::chrono::steady_clock;
  auto next_tick = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(interval_s));
  for (;;) {
    if (child.has_value()) {
      int status = 0;
      pid_t done = waitpid(*child, &status, WNOHANG);
      if (done == *child) {
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return 1;
      }
      if (done < 0 && errno != EINTR) return 1;
    } else if (g_stop_signal != 0) {
      return std::nullopt;
    }
    if (interval_s > 0 && Clock::now() >= next_tick) {
      on_tick();
      next_tick +=
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Prints "zeus monitor: <message>" and returns kMonitorFailedExitCode, or
// the child's status when it failed.
int Failed(const std::string& message, std::optional<int> child_exit_code = std::nullopt) {
  std::cerr << "zeus monitor: " << message << "\n";
  return child_exit_code.value_or(0) != 0 ? *child_exit_code : kMonitorFailedExitCode;
}

int RunMonitor(const MonitorFlags& flags) {
  const bool has_command = !flags.command.empty();
  StatusOr<SelectedDevices> devices = OpenDevices(flags);
  if (!devices.ok()) {
    if (devices.status().code() == StatusCode::kInvalidArgument) {
      std::cerr << "zeus monitor: " << devices.status().message() << "\n";
      return kUsageExitCode;
    }
    if (!has_command) return Failed(devices.status().message());
    std::cerr << "zeus monitor: warning: " << devices.status().message()
              << "; running the command anyway, unmeasured\n";
  }
  std::ofstream output_file;
  std::ostream* out = &std::cout;
  if (!flags.output_path.empty()) {
    output_file.open(flags.output_path);
    if (!output_file) return Failed("cannot write --output '" + flags.output_path + "'");
    out = &output_file;
  }
  std::unique_ptr<MonitorReporter> reporter =
      flags.json ? NewJsonReporter(out) : NewTextReporter(out);

  MonitorReport report;
  report.command = flags.command;
  std::unique_ptr<EnergyMonitor> monitor;  // Null when nothing is measured.
  if (devices.ok()) {
    EnergyMonitorOptions options;
    if (!flags.csv_path.empty()) options.window_reporter = NewCsvWindowReporter(flags.csv_path);
    StatusOr<std::unique_ptr<EnergyMonitor>> created =
        EnergyMonitor::Create(devices->GpuPointers(), devices->CpuPointers(), RealClock(), options);
    if (!created.ok()) return Failed(created.status().message());
    monitor = *std::move(created);
    report.gpu_indices = devices->GpuIndices();
    report.cpu_indices = devices->CpuIndices();
  }
  std::unique_ptr<PowerMonitor> domain_monitor;  // With --power-domain.
  if (!flags.power_domain.empty()) {
    if (!devices.ok() || devices->GpuPointers().empty()) {
      return Failed("--power-domain " + flags.power_domain + ": no GPU to sample");
    }
    StatusOr<PowerDomain> domain = ParsePowerDomain(flags.power_domain);
    if (!domain.ok()) {
      std::cerr << "zeus monitor: --power-domain: " << domain.status().message() << "\n";
      return kUsageExitCode;
    }
    PowerMonitorOptions power_options;
    power_options.period = std::chrono::milliseconds(20);
    power_options.domains = {*domain};
    StatusOr<std::unique_ptr<PowerMonitor>> created =
        PowerMonitor::Create(devices->GpuPointers(), RealClock(), power_options);
    if (!created.ok()) return Failed(created.status().message());
    domain_monitor = *std::move(created);
    report.power_domain = flags.power_domain;
  }
  // The latest power of the domain per GPU, in W (0 before any sample).
  auto latest_domain_power_w = [&] {
    std::vector<double> power_w;
    const auto now = RealClock()->Now();
    for (size_t i = 0; i < domain_monitor->num_gpus(); ++i) {
      StatusOr<std::vector<PowerSample>> points =
          domain_monitor->Timeline(i, now - std::chrono::seconds(5), now);
      power_w.push_back(points.ok() && !points->empty() ? MwToW(points->back().power_mw) : 0.0);
    }
    return power_w;
  };
  const auto domain_start = RealClock()->Now();

  InstallStopHandlers();
  const std::string kWindow = "zeus monitor";
  const std::string kInterval = "zeus monitor interval";
  if (monitor != nullptr) {
    Status begun = monitor->Begin(kWindow);
    if (begun.ok() && flags.interval_s > 0) begun = monitor->Begin(kInterval);
    if (!begun.ok()) return Failed(begun.message());
  }
  auto start = std::chrono::steady_clock::now();
  if (!has_command) {
    // Without a command nothing else would show that it runs.
    std::string what;
    for (int gpu : report.gpu_indices)
      what += (what.empty() ? "GPU " : ", GPU ") + std::to_string(gpu);
    for (int cpu : report.cpu_indices)
      what += (what.empty() ? "CPU " : ", CPU ") + std::to_string(cpu);
    std::cerr << "zeus monitor: measuring " << what << " until Ctrl-C (SIGINT) or SIGTERM\n"
              << std::flush;
  }
  std::optional<pid_t> child;
  if (has_command) {
    // Keep a --json report on stdout apart from the command's output.
    const bool stdout_to_stderr = flags.json && flags.output_path.empty();
    StatusOr<pid_t> pid = StartChild(flags.command, stdout_to_stderr);
    if (!pid.ok()) return Failed(pid.status().message());
    child = *pid;
  }
  Status interval_error;
  auto on_tick = [&] {
    if (monitor == nullptr || !interval_error.ok()) return;
    StatusOr<Measurement> m = monitor->End(kInterval);
    if (domain_monitor != nullptr) report.domain_power_w = latest_domain_power_w();
    if (m.ok()) {
      double elapsed_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      reporter->ReportInterval(elapsed_s, *m, report);
      interval_error = monitor->Begin(kInterval);
    } else {
      interval_error = m.status();
    }
    if (!interval_error.ok()) {
      std::cerr << "zeus monitor: interval: " << interval_error.message() << "\n";
    }
  };
  report.exit_code = WaitForEnd(child, flags.interval_s, on_tick);
  g_child_pid = 0;
  if (monitor != nullptr) {
    StatusOr<Measurement> m = monitor->End(kWindow);
    if (!m.ok()) return Failed(m.status().message(), report.exit_code);
    report.measurement = *std::move(m);
  } else {
    report.measurement.time_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (domain_monitor != nullptr) {
    const auto domain_end = RealClock()->Now();
    domain_monitor->SampleOnce().IgnoreError();  // The run's last moment; errors show below.
    for (size_t i = 0; i < domain_monitor->num_gpus(); ++i) {
      StatusOr<double> energy_j = domain_monitor->EnergyJ(i, domain_start, domain_end);
      if (!energy_j.ok()) return Failed(energy_j.status().message(), report.exit_code);
      report.domain_energy_j.push_back(*energy_j);
    }
  }
  reporter->ReportFinal(report);  // Flushes: errno tells why a write failed.
  if (output_file.is_open()) {
    output_file.close();
    if (!output_file) {
      return Failed("cannot write --output '" + flags.output_path + "': " + std::strerror(errno),
                    report.exit_code);
    }
  } else if (!std::cout) {
    const int write_errno = errno;
    std::cout.clear();  // Reported here; main() need not report it again.
    std::clearerr(stdout);
    return Failed(std::string("cannot write the output to stdout: ") + std::strerror(write_errno),
                  report.exit_code);
  }
  return report.exit_code.value_or(0);
}

}  // namespace

void RegisterMonitorCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "monitor", "Run a command (or wait for Ctrl-C) and report its time and energy per device");
  auto flags = std::make_shared<MonitorFlags>();
  cmd->add_option("--gpus", flags->gpus,
                  "Comma-separated GPU indices, each at most once (default: all)");
  cmd->add_option("--cpus", flags->cpus,
                  "Comma-separated CPU socket indices, each at most once (default: all)");
  cmd->add_option("--interval", flags->interval_s, "Also print average power every S seconds")
      ->check(NumberIn(0.0, 1e6));
  cmd->add_option("--csv", flags->csv_path,
                  "Append start_time,window_name,elapsed_time,gpu{i}_energy rows to FILE");
  cmd->add_flag("--json", flags->json,
                "Report JSON Lines instead of a table (with CMD: CMD's stdout goes to stderr "
                "unless -o is given)");
  cmd->add_option("-o,--output", flags->output_path, "Write the report to FILE (default: stdout)");
  cmd->add_option("--powercap-root", flags->powercap_root, "Root of the powercap sysfs tree")
      ->capture_default_str();
  cmd->add_option("--power-domain", flags->power_domain,
                  "Also sample the GPUs' power in this domain (device_instant, device_average or "
                  "memory_average): its latest value per --interval and its integral at the end")
      ->check(CLI::IsMember({"device_instant", "device_average", "memory_average"}));
  cmd->add_option("command", flags->command, "The command to run, after --");
  cmd->footer(kExitHelp);
  cmd->callback([exit_code, flags] { *exit_code = RunMonitor(*flags); });
}

}  // namespace zeus::cli
