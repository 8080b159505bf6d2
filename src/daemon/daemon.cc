#include "zeus/daemon/daemon.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "zeus/daemon/token.h"

#include "src/daemon/http_server.h"
#include "src/daemon/lease_table.h"
#include "src/daemon/routes.h"
#include "src/daemon/single_instance.h"

namespace zeus {

struct Daemon::State {
  // Destroyed last: the lock is held until every lease is put back.
  daemon::StateFileLock lock;
  DaemonOptions options;
  std::unique_ptr<daemon::LeaseTable> leases;
  std::unique_ptr<daemon::Routes> routes;
  std::unique_ptr<daemon::HttpServer> server;
  bool stopped = false;
};

Daemon::Daemon(std::unique_ptr<State> state) : state_(std::move(state)) {}

Daemon::~Daemon() { Stop(); }

StatusOr<std::unique_ptr<Daemon>> Daemon::Start(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                                                DaemonOptions options) {
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  const DaemonOptions& o = state->options;
  // One daemon per state file and per socket, checked before anything is
  // read or changed: a second daemon would take the first's leases for a
  // crashed daemon's and rewrite its record.
  if (!o.dry_run) ZEUS_RETURN_IF_ERROR(daemon::CheckStateDirectory(o.state_file));
  const size_t slash = o.state_file.find_last_of('/');
  struct stat dir {};
  if (o.dry_run && slash != std::string::npos &&
      stat(o.state_file.substr(0, std::max<size_t>(slash, 1)).c_str(), &dir) != 0) {
    // A dry run writes no state: a missing state directory is not created
    // for the lock (no daemon can hold a lock there either).
    spdlog::info("zeus daemon: dry run: {} has no directory; not locking it", o.state_file);
  } else {
    ZEUS_ASSIGN_OR_RETURN(state->lock, daemon::LockStateFile(o.state_file));
  }
  for (const std::string& group : o.enabled_api_groups) {
    ZEUS_RETURN_IF_ERROR(CheckApiGroup(group, "enabled API groups"));
  }
  // At least 1 Hz: a one-shot /cpu/get_power may wait one period on an I/O
  // thread.
  if (!(o.gpu_power_poll_hz >= 1 && o.gpu_power_poll_hz <= 1000) ||
      !(o.cpu_power_poll_hz >= 1 && o.cpu_power_poll_hz <= 1000)) {
    return InvalidArgumentError("power poll rates must be in [1, 1000] Hz (GPU " +
                                fmt::format("{}", o.gpu_power_poll_hz) + ", CPU " +
                                fmt::format("{}", o.cpu_power_poll_hz) + ")");
  }
  if (o.tcp_port >= 0 && o.signing_key.empty() && o.tcp_host != "127.0.0.1" &&
      o.tcp_host != "::1" && o.tcp_host != "localhost") {
    spdlog::warn(
        "zeus daemon: serving reads on {} without authentication: anyone who reaches it can read "
        "power and energy (start with --signing-key-path to require tokens)",
        o.tcp_host);
  }
  if (o.tcp_port >= 0 && o.tcp_changes && o.signing_key.empty()) {
    spdlog::warn(
        "zeus daemon: accepting GPU changes on {} without authentication: anyone who reaches it "
        "can change power limits and clocks (start with --signing-key-path to require a "
        "gpu-control token)",
        o.tcp_host);
  }
  ZEUS_RETURN_IF_ERROR(daemon::ClaimSocketPath(o.socket_path));
  daemon::LeaseTableOptions lease_options;
  lease_options.state_file = o.state_file;
  lease_options.lease_timeout = o.lease_timeout;
  lease_options.dry_run = o.dry_run;
  lease_options.pause_at = o.pause_at;
  lease_options.pause_marker = o.pause_marker;
  state->leases = std::make_unique<daemon::LeaseTable>(gpus, lease_options);
  // Before serving: whatever a crashed daemon left changed goes back.
  ZEUS_RETURN_IF_ERROR(state->leases->Recover());
  state->leases->Start();
  state->routes = std::make_unique<daemon::Routes>(gpus, cpus, state->leases.get(), &o);
  daemon::Routes* routes = state->routes.get();
  state->server = std::make_unique<daemon::HttpServer>(o, routes->Table(), routes->NotFound());
  Status started = state->server->Start();
  if (!started.ok()) {
    state->routes->EndStreams();
    state->server->Stop();
    state->leases->Shutdown();
    return started;
  }
  return std::unique_ptr<Daemon>(new Daemon(std::move(state)));
}

void Daemon::Stop() {
  if (state_ == nullptr || state_->stopped) return;
  state_->stopped = true;
  // Streams get their last chunk before the server stops.
  state_->routes->EndStreams();
  state_->server->Stop();
  state_->leases->Shutdown();
}

int Daemon::tcp_port() const { return state_->server->tcp_port(); }

}  // namespace zeus
