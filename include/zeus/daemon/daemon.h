// The Zeus daemon (`zeus daemon`): a privileged process that changes GPU
// settings for unprivileged jobs and puts every change back when the job
// ends, however it ends. It speaks the HTTP API of the original zeusd
// (ml-energy/zeus) on a Unix socket, and optionally on TCP for reads.
//
// Authorisation: changes only over the Unix socket (the kernel tells the
// daemon which process, user and groups is asking), from root or a member of
// `control_group`; reads from anyone unless `restrict_reads`. Every change is
// leased to the process that made it (see src/daemon/lease_table.h). With a
// `signing_key`, every request but /discover and /time also needs a bearer
// token whose scopes include the route's API group (both rules must pass).
// Live power: GET /{gpu,cpu}/get_power and the Server-Sent Event streams
// GET /{gpu,cpu}/stream_power (see src/daemon/power_stream.h).
//
// Thread-safety: Start, Stop and the destructor from one thread.

#ifndef ZEUS_DAEMON_DAEMON_H_
#define ZEUS_DAEMON_DAEMON_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

struct DaemonOptions {
  // The Unix socket. Default: /run/zeus/zeusd.sock.
  std::string socket_path = "/run/zeus/zeusd.sock";
  // Owner group and mode of the socket file. Default: unchanged, 0666.
  std::optional<gid_t> socket_group;
  mode_t socket_mode = 0666;
  // Optional TCP listener (reads only unless tcp_changes). Port -1: off; 0:
  // any free port. Default: off.
  std::string tcp_host = "127.0.0.1";
  int tcp_port = -1;
  // Accept GPU changes on the TCP listener, as the original zeusd in TCP
  // mode does (with tokens, those carrying the gpu-control scope). A TCP
  // client's process is unknown: its changes are held by one lease shared by
  // every TCP client ("the TCP clients"), renewed by each TCP request and put
  // back when the daemon stops, after lease_timeout without a TCP request,
  // or on a TCP POST /lease/release. Default: false (changes only on the
  // Unix socket, leased to the calling process).
  bool tcp_changes = false;
  // The durable record of changes to put back. Default:
  // /var/lib/zeus/zeusd-state.json.
  std::string state_file = "/var/lib/zeus/zeusd-state.json";
  // Besides root, the members of this group may change settings. Default:
  // none (root only).
  std::optional<gid_t> control_group;
  // Reads need what changes need (root or control_group, Unix socket).
  // Default: false (reads open to anyone who can reach a socket).
  bool restrict_reads = false;
  // A lease not renewed by a request of its client for this long is released.
  // Zero: never (the client's end releases it). Default: zero.
  std::chrono::milliseconds lease_timeout{0};
  // Request limits (see src/daemon/http_server.h; max_connections for each
  // of TCP, root and control_group on the Unix socket, and everyone else
  // there). Defaults: 64 KiB, 5 s, 512.
  size_t max_body_bytes = 64 * 1024;
  std::chrono::milliseconds request_timeout{5000};
  int max_connections = 512;
  // Log the changes instead of making them, and leave the state file alone.
  // REQUIRES: ZEUS_DRY_RUN is set in the environment when true (the GPU
  // backends read it). Default: false.
  bool dry_run = false;
  // Bearer-token authentication (the original zeusd's): the HS256 signing
  // key's bytes (see zeus/daemon/token.h). Empty: no tokens (every request
  // is judged by the peer-credential rules above only). Default: empty.
  std::string signing_key;
  // The API groups served ("gpu-control", "gpu-read", "cpu-read"); a route
  // of another group answers 404. Default: all three.
  std::vector<std::string> enabled_api_groups = {"gpu-control", "gpu-read", "cpu-read"};
  // Polling rates of the power streams (one poller per kind, shared by every
  // subscriber), Hz. Defaults: 20 (GPU), 10 (CPU), as the original's.
  double gpu_power_poll_hz = 20;
  double cpu_power_poll_hz = 10;
  // Test hooks (see LeaseTableOptions): stop forever "after_record" or
  // "after_change" of the first change, creating `pause_marker`. Default: off.
  std::string pause_at;
  std::string pause_marker;
};

class Daemon {
 public:
  // Puts back whatever the state file lists (a crashed daemon's changes),
  // then starts serving. `gpus[i]` is GPU i of the API and `cpus[i]` CPU i;
  // they must outlive the daemon. Fails when the state file cannot be read or
  // written, or a socket cannot be bound.
  static StatusOr<std::unique_ptr<Daemon>> Start(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                                                 DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Ends the power streams, stops serving and puts back every change still
  // leased. Idempotent.
  void Stop();
  // The bound TCP port; -1 without TCP.
  int tcp_port() const;

 private:
  struct State;
  explicit Daemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace zeus

#endif  // ZEUS_DAEMON_DAEMON_H_
