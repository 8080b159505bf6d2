// `zeus serve`: the batch-size optimizer server.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "zeus/device/clock.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_server.h"
#include "zeus/server/store.h"
#include "zeus/util/strings.h"

#include "tools/commands.h"
#include "tools/host_port.h"
#include "tools/service_loop.h"

namespace zeus::cli {
namespace {

struct ServeFlags {
  std::string db = "sqlite:zeus-batch-size.db";
  std::string listen = "127.0.0.1:8000";
  std::string token_file;
  std::string chartjs;
  double trial_timeout_s = 24 * 3600.0;
  double min_trial_timeout_s = 1800.0;
  double trial_timeout_epochs = 4.0;
  bool access_log = false;
  std::string log_level;  // Empty: ZEUS_LOG_LEVEL, else info.
  int threads = 32;
  int io_threads = 1;
  int db_connections = 32;
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 * 1024;
  double idle_timeout_s = 60.0;
  double read_timeout_s = 5.0;
};

// Raises the soft limit on open descriptors to the hard limit: each open
// connection holds one. Returns the limit now in force.
rlim_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return raised.rlim_cur;
  }
  return limit.rlim_cur;
}

// True for addresses only this host can reach.
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Writes `text` to stderr with write(2) only (async-signal-safe).
void WriteStderr(const char* text) {
  size_t length = 0;
  while (text[length] != '\0') ++length;
  while (length > 0) {
    ssize_t n = write(STDERR_FILENO, text, length);
    if (n <= 0) return;
    text += n;
    length -= static_cast<size_t>(n);
  }
}

// Logs a fatal signal and dies of it (the handler is reset on entry, so the
// re-raised signal takes its default action: core dump, exit status).
void OnFatalSignal(int signal) {
  const char* name = "fatal signal";
  switch (signal) {
    case SIGSEGV:
      name = "SIGSEGV (invalid memory access)";
      break;
    case SIGBUS:
      name = "SIGBUS (bus error)";
      break;
    case SIGFPE:
      name = "SIGFPE (arithmetic error)";
      break;
    case SIGILL:
      name = "SIGILL (illegal instruction)";
      break;
    case SIGABRT:
      name = "SIGABRT (abort)";
      break;
  }
  WriteStderr("zeus serve: killed by ");
  WriteStderr(name);
  WriteStderr("; the store keeps every committed request\n");
  raise(signal);
}

// Installs OnFatalSignal for the signals of a crash, on an alternate stack
// (the HTTP workers have their own; this one is the main thread's).
void InstallFatalSignalHandler() {
  static std::vector<char> alt_stack(std::max<size_t>(SIGSTKSZ, 64 * 1024));
  stack_t stack{};
  stack.ss_sp = alt_stack.data();
  stack.ss_size = alt_stack.size();
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = OnFatalSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(signal, &action, nullptr);
}

Status Serve(const ServeFlags& flags) {
  ZEUS_ASSIGN_OR_RETURN(auto address, ParseHostPort("--listen", flags.listen));
  if (!(flags.trial_timeout_s > 0)) {
    return InvalidArgumentError("--trial-timeout-s must be > 0");
  }
  if (!(flags.min_trial_timeout_s >= 0)) {
    return InvalidArgumentError("--min-trial-timeout-s must be >= 0");
  }
  if (!(flags.idle_timeout_s > 0)) return InvalidArgumentError("--idle-timeout-s must be > 0");
  if (!(flags.read_timeout_s > 0)) return InvalidArgumentError("--read-timeout-s must be > 0");
  if (!(flags.trial_timeout_epochs >= 0)) {
    return InvalidArgumentError("--trial-timeout-epochs must be >= 0");
  }
  ZEUS_RETURN_IF_ERROR(SetLogLevel(flags.log_level));
  HttpServerOptions options;
  options.host = address.first;
  options.port = address.second;
  options.threads = flags.threads;
  options.io_threads = flags.io_threads;
  options.max_body_bytes = flags.max_body_bytes;
  options.max_header_bytes = flags.max_header_bytes;
  options.idle_timeout_s = flags.idle_timeout_s;
  options.read_timeout_s = flags.read_timeout_s;
  if (!flags.token_file.empty()) {
    ZEUS_ASSIGN_OR_RETURN(options.token, ReadTokenFile(flags.token_file));
  }
  if (!flags.chartjs.empty()) options.dashboard_chartjs_path = flags.chartjs;
  if (access(options.dashboard_chartjs_path.c_str(), R_OK) != 0) {
    spdlog::warn(
        "zeus serve: dashboard: cannot read Chart.js at {} ({}); the page at / shows "
        "no charts until it exists (Debian: apt install libjs-chart.js)",
        options.dashboard_chartjs_path, std::strerror(errno));
  }
  if (!options.token && !IsLoopback(options.host)) {
    spdlog::warn(
        "zeus serve: listening on {} without --token-file: anyone who can reach this address "
        "can register, read and delete jobs",
        options.host);
  }
  if (flags.access_log || spdlog::should_log(spdlog::level::debug)) {
    options.access_log = [](const AccessLogEntry& e) {
      // Latency -1 ms: refused before routing (malformed request line).
      spdlog::info("access: {} {} {} {:.3f} ms {}", e.method, e.path, e.status,
                   e.latency_s >= 0 ? e.latency_s * 1e3 : -1.0, e.remote_addr);
    };
  }
  const rlim_t open_files = RaiseOpenFileLimit();
  spdlog::debug("zeus serve: up to {} open descriptors (RLIMIT_NOFILE)", open_files);
  InstallFatalSignalHandler();
  // Block the stop signals before any thread starts (the SQLite store starts
  // a checkpointer) so that only the wait below receives them.
  const StopSignals stop_signals;

  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        OpenStore(flags.db, StoreOptions{flags.db_connections}));
  BatchSizeServiceOptions service_options;
  service_options.silent_trial_timeout_s = flags.trial_timeout_s;
  service_options.min_silent_trial_timeout_s = flags.min_trial_timeout_s;
  service_options.silent_epochs = flags.trial_timeout_epochs;
  BatchSizeService service(store.get(), RealClock(), service_options);

  HttpServer server(&service, options);
  ZEUS_RETURN_IF_ERROR(server.Start());
  const std::string shown_host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  std::printf("zeus serve: listening on http://%s:%d (store %s, schema version %d)\n",
              shown_host.c_str(), server.port(), std::string(store->backend()).c_str(),
              kStoreSchemaVersion);
  std::fflush(stdout);

  // Sweep silent trials a few times per timeout, at least once a minute.
  const double sweep_s = std::clamp(flags.trial_timeout_s / 4, 0.05, 60.0);
  stop_signals.WaitTicking(sweep_s, [&service] {
    StatusOr<int> failed = service.FailSilentTrials();
    if (!failed.ok()) {
      std::fprintf(stderr, "zeus serve: failing silent trials: %s\n",
                   failed.status().ToString().c_str());
    } else if (*failed > 0) {
      std::fprintf(stderr, "zeus serve: failed %d silent trial(s)\n", *failed);
    }
  });
  server.Stop();
  std::printf("zeus serve: stopped\n");
  return Status::Ok();
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the batch-size optimizer server (JSON over HTTP) for recurring jobs.");
  cmd->add_option("--db", flags->db,
                  "Store: sqlite:PATH (default sqlite:zeus-batch-size.db) or postgresql://...");
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT or [IPV6]:PORT to bind (port 0 picks a free one); refused when "
                  "another process listens there; a non-loopback HOST without --token-file "
                  "logs a warning")
      ->capture_default_str();
  cmd->add_option("--token-file", flags->token_file,
                  "File holding a bearer token every request but /health must carry");
  cmd->add_option("--chartjs", flags->chartjs,
                  "Chart.js 3 UMD file the dashboard at / serves (default: Debian's "
                  "libjs-chart.js, /usr/share/javascript/chart.js/chart.min.js)");
  cmd->add_option("--trial-timeout-s", flags->trial_timeout_s,
                  "Fail a dispatched trial (its client gone) silent for longer than this; the "
                  "upper limit, and the limit while no epoch time is known")
      ->capture_default_str();
  cmd->add_option("--trial-timeout-epochs", flags->trial_timeout_epochs,
                  "Fail a dispatched trial sooner, once silent for this many of its (or its "
                  "job's slowest) epochs, but never within --min-trial-timeout-s; 0 disables")
      ->capture_default_str();
  cmd->add_option("--min-trial-timeout-s", flags->min_trial_timeout_s,
                  "Shortest silence after which a trial is failed")
      ->capture_default_str();
  cmd->add_flag("--access-log", flags->access_log,
                "Log every request (method, path, status, latency) to stderr; also on at "
                "--log-level debug");
  cmd->add_option("--log-level", flags->log_level,
                  "trace, debug, info, warn, error or off (stderr; default: $ZEUS_LOG_LEVEL, "
                  "else info)")
      ->type_name("LEVEL");
  cmd->add_option("--threads", flags->threads,
                  "Worker threads running requests (the database work); connections do not "
                  "hold one")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--io-threads", flags->io_threads,
                  "Event-loop threads reading and writing connections")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--idle-timeout-s", flags->idle_timeout_s,
                  "Close a keep-alive connection idle for longer than this")
      ->capture_default_str();
  cmd->add_option("--read-timeout-s", flags->read_timeout_s,
                  "A request must arrive whole (headers and body) within this from its first "
                  "byte, and its answer be taken within this, or the connection is closed")
      ->capture_default_str();
  cmd->add_option("--max-header-bytes", flags->max_header_bytes,
                  "Larger request heads (request line and headers) get 431")
      ->capture_default_str();
  cmd->add_option("--db-connections", flags->db_connections,
                  "Database connections this server keeps open at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-body-bytes", flags->max_body_bytes, "Larger request bodies get 413")
      ->capture_default_str();
  cmd->callback([flags, exit_code] {
    Status status = Serve(*flags);
    if (!status.ok()) {
      std::fprintf(stderr, "zeus serve: %s\n", status.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace zeus::cli
