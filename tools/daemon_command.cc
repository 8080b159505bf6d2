// `zeus daemon`: the privileged GPU-settings daemon (see
// include/zeus/daemon/daemon.h and docs/DAEMON.md).

#include <grp.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "zeus/daemon/daemon.h"
#include "zeus/daemon/token.h"
#include "zeus/device/devices.h"
#include "zeus/util/env.h"
#include "zeus/util/strings.h"

#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/host_port.h"
#include "tools/service_loop.h"

namespace zeus::cli {
namespace {

struct DaemonFlags {
  std::string socket_path = "/run/zeus/zeusd.sock";
  std::string socket_group;
  std::string socket_mode = "0666";
  std::string tcp;
  std::string state_file = "/var/lib/zeus/zeusd-state.json";
  std::string group;
  bool restrict_reads = false;
  bool tcp_changes = false;
  double lease_timeout_s = 0;
  double request_timeout_s = 5;
  size_t max_body_bytes = 64 * 1024;
  int max_connections = 512;
  bool dry_run = false;
  std::string powercap_root = "/sys/class/powercap";
  std::string log_level;  // Empty: ZEUS_LOG_LEVEL, else info.
  std::string signing_key_path;
  std::vector<std::string> enable = {kApiGroupGpuControl, kApiGroupGpuRead, kApiGroupCpuRead};
  double gpu_power_poll_hz = 20;
  double cpu_power_poll_hz = 10;
};

struct TokenFlags {
  std::string signing_key_path;
  std::string user;
  std::vector<std::string> scopes;
  std::string expires = "never";
};

// "never": no expiry; else a positive number of seconds, or a number with a
// unit s, m, h, d (e.g. 3600, 90m, 7d); 0 is refused, whatever its unit.
// The expiry in Unix seconds, counted from the next whole second: a token
// never expires within the second it is issued.
StatusOr<std::optional<int64_t>> ParseExpiry(const std::string& text) {
  if (text == "never") return std::optional<int64_t>();
  std::string digits = text;
  int64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 's':
        unit = 1;
        digits.pop_back();
        break;
      case 'm':
        unit = 60;
        digits.pop_back();
        break;
      case 'h':
        unit = 3600;
        digits.pop_back();
        break;
      case 'd':
        unit = 86400;
        digits.pop_back();
        break;
      default:
        break;
    }
  }
  StatusOr<uint64_t> count = ParseUint64(digits);
  if (!count.ok() || *count == 0 || *count > 100ull * 365 * 86400) {
    return InvalidArgumentError("--expires \"" + text +
                                "\": expected a positive duration such as 3600, 90m, 12h or 7d, "
                                "or never");
  }
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() +
                        1;
  return std::optional<int64_t>(now_s + static_cast<int64_t>(*count) * unit);
}

Status IssueTokenCommand(const TokenFlags& flags) {
  ZEUS_ASSIGN_OR_RETURN(std::string key, ReadSigningKey(flags.signing_key_path));
  TokenClaims claims;
  claims.sub = flags.user;
  for (const std::string& item : flags.scopes) {
    for (const std::string& scope : Split(item, ',')) {
      if (scope.empty()) continue;
      ZEUS_RETURN_IF_ERROR(CheckApiGroup(scope, "--scopes"));
      claims.scopes.push_back(scope);
    }
  }
  if (claims.scopes.empty()) {
    return InvalidArgumentError("--scopes: give at least one of gpu-control, gpu-read, cpu-read");
  }
  ZEUS_ASSIGN_OR_RETURN(claims.exp, ParseExpiry(flags.expires));
  ZEUS_ASSIGN_OR_RETURN(std::string token, IssueToken(key, claims));
  std::printf("%s\n", token.c_str());
  return Status::Ok();
}

// A group given by name or number.
StatusOr<gid_t> ParseGroup(const std::string& flag, const std::string& value) {
  if (group* g = getgrnam(value.c_str())) return g->gr_gid;
  StatusOr<uint64_t> id = ParseUint64(value);
  if (id.ok() && *id < UINT32_MAX) return static_cast<gid_t>(*id);
  return InvalidArgumentError(flag + " \"" + value + "\": no such group");
}

Status RunDaemon(const DaemonFlags& flags) {
  ZEUS_RETURN_IF_ERROR(SetLogLevel(flags.log_level));
  DaemonOptions options;
  options.socket_path = flags.socket_path;
  if (!flags.socket_group.empty()) {
    ZEUS_ASSIGN_OR_RETURN(options.socket_group, ParseGroup("--socket-group", flags.socket_group));
  }
  char* end = nullptr;
  const unsigned long mode = std::strtoul(flags.socket_mode.c_str(), &end, 8);  // NOLINT
  if (flags.socket_mode.empty() || *end != '\0' || mode > 0777) {
    return InvalidArgumentError("--socket-mode \"" + flags.socket_mode +
                                "\": expected an octal mode such as 0660");
  }
  options.socket_mode = static_cast<mode_t>(mode);
  if (!flags.tcp.empty()) {
    // PORT and :PORT listen on 127.0.0.1, never on every interface.
    ZEUS_ASSIGN_OR_RETURN(auto address, ParseHostPort("--tcp", flags.tcp, "127.0.0.1"));
    options.tcp_host = address.first;
    options.tcp_port = address.second;
  }
  options.state_file = flags.state_file;
  if (!flags.group.empty()) {
    ZEUS_ASSIGN_OR_RETURN(options.control_group, ParseGroup("--group", flags.group));
  }
  options.restrict_reads = flags.restrict_reads;
  options.tcp_changes = flags.tcp_changes;
  if (!(flags.lease_timeout_s >= 0)) return InvalidArgumentError("--lease-timeout-s must be >= 0");
  if (!(flags.request_timeout_s > 0))
    return InvalidArgumentError("--request-timeout-s must be > 0");
  options.lease_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.lease_timeout_s * 1e3));
  options.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.request_timeout_s * 1e3));
  options.max_body_bytes = flags.max_body_bytes;
  options.max_connections = flags.max_connections;
  if (!flags.signing_key_path.empty()) {
    ZEUS_ASSIGN_OR_RETURN(options.signing_key, ReadSigningKey(flags.signing_key_path));
  }
  options.enabled_api_groups.clear();
  for (const std::string& item : flags.enable) {
    for (const std::string& group : Split(item, ',')) {
      if (group.empty()) continue;
      ZEUS_RETURN_IF_ERROR(CheckApiGroup(group, "--enable"));
      if (std::find(options.enabled_api_groups.begin(), options.enabled_api_groups.end(), group) ==
          options.enabled_api_groups.end()) {
        options.enabled_api_groups.push_back(group);
      }
    }
  }
  options.gpu_power_poll_hz = flags.gpu_power_poll_hz;
  options.cpu_power_poll_hz = flags.cpu_power_poll_hz;
  if (flags.dry_run) setenv("ZEUS_DRY_RUN", "1", 1);
  // The daemon reads its devices itself, never through a daemon.
  unsetenv("ZEUSD_SOCK_PATH");
  options.dry_run = IsDryRun();
  if (std::optional<std::string> pause = GetEnv("ZEUSD_TEST_PAUSE_AT")) {
    options.pause_at = *pause;
    options.pause_marker = GetEnv("ZEUSD_TEST_PAUSE_MARKER").value_or("");
  }

  // Block the stop signals before any thread starts so only the wait sees them.
  const StopSignals stop_signals;

  // The daemon sees every GPU in its backend's order (NVML / AMD SMI):
  // clients name GPUs by that index (ZeusdGpu sends it), so visible-devices
  // variables the daemon inherits must not renumber them.
  GpuOptions gpu_options;
  gpu_options.environment["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  gpu_options.environment["HIP_VISIBLE_DEVICES"] = std::nullopt;
  gpu_options.environment["ZEUSD_SOCK_PATH"] = std::nullopt;
  std::vector<std::unique_ptr<Gpu>> gpus;
  StatusOr<std::vector<std::unique_ptr<Gpu>>> opened = OpenGpus(gpu_options);
  if (opened.ok()) {
    gpus = std::move(*opened);
  } else if (opened.status().code() == StatusCode::kUnavailable) {
    spdlog::warn("zeus daemon: no GPUs: {}", opened.status().ToString());
  } else {
    return opened.status();
  }
  std::vector<std::unique_ptr<Cpu>> cpus;
  StatusOr<std::vector<std::unique_ptr<Cpu>>> opened_cpus = OpenCpus(flags.powercap_root);
  if (opened_cpus.ok()) {
    cpus = std::move(*opened_cpus);
  } else {
    spdlog::warn("zeus daemon: no CPU energy: {}", opened_cpus.status().ToString());
  }
  std::vector<Gpu*> gpu_pointers;
  for (auto& g : gpus) gpu_pointers.push_back(g.get());
  std::vector<Cpu*> cpu_pointers;
  for (auto& c : cpus) cpu_pointers.push_back(c.get());

  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Daemon> daemon,
                        Daemon::Start(gpu_pointers, cpu_pointers, options));
  std::printf("zeus daemon: serving %zu GPU(s), %zu CPU(s) on %s%s%s\n", gpus.size(), cpus.size(),
              options.socket_path.c_str(),
              daemon->tcp_port() >= 0
                  ? (" and " + HostPortString(options.tcp_host, daemon->tcp_port())).c_str()
                  : "",
              options.dry_run ? " (dry run: changes are logged, not made)" : "");
  std::fflush(stdout);
  const int signal_number = stop_signals.Wait();
  spdlog::info("zeus daemon: stopping on signal {} ({}); putting back every leased setting",
               signal_number, strsignal(signal_number));
  daemon->Stop();
  return Status::Ok();
}

}  // namespace

void RegisterDaemonCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<DaemonFlags>();
  CLI::App* cmd = app.add_subcommand(
      "daemon",
      "Run the privileged GPU-settings daemon (zeusd API): unprivileged jobs change power "
      "limits through it, and every change is put back when the job ends.");
  cmd->add_option("--socket", flags->socket_path, "Unix socket path")->capture_default_str();
  cmd->add_option("--socket-group", flags->socket_group, "Group owning the socket file");
  cmd->add_option("--socket-mode", flags->socket_mode, "Octal mode of the socket file")
      ->capture_default_str();
  cmd->add_option("--tcp", flags->tcp,
                  "Also serve reads on TCP [HOST:]PORT or [IPV6]:PORT (host default 127.0.0.1, "
                  "also for :PORT; changes need the Unix socket unless --tcp-changes)");
  cmd->add_flag("--tcp-changes", flags->tcp_changes,
                "Accept GPU changes over --tcp too, as the original zeusd does (with "
                "--signing-key-path: from gpu-control tokens); they are held by one lease of all "
                "TCP clients, put back when the daemon stops or after --lease-timeout-s without "
                "a TCP request");
  cmd->add_option("--state-file", flags->state_file,
                  "Durable record of the values to put back (crash recovery)")
      ->capture_default_str();
  cmd->add_option("--group", flags->group,
                  "Members of this group (name or gid) may change settings; root always may");
  cmd->add_flag("--restrict-reads", flags->restrict_reads,
                "Reads also need root or --group (default: reads are open)");
  cmd->add_option("--lease-timeout-s", flags->lease_timeout_s,
                  "Put a client's settings back after this many seconds without a request from "
                  "it (0: only when it ends)")
      ->capture_default_str();
  cmd->add_option("--request-timeout-s", flags->request_timeout_s,
                  "Time a client has to send a whole request")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", flags->max_body_bytes, "Largest request body")
      ->capture_default_str();
  cmd->add_option("--max-connections", flags->max_connections,
                  "Most open connections of each kind: TCP; root and --group members on the Unix "
                  "socket; everyone else there")
      ->capture_default_str();
  cmd->add_flag("--dry-run", flags->dry_run,
                "Log the changes instead of making them (as ZEUS_DRY_RUN=1); the state file is "
                "left alone");
  cmd->add_option("--powercap-root", flags->powercap_root, "powercap sysfs root (RAPL)")
      ->capture_default_str();
  cmd->add_option("--log-level", flags->log_level,
                  "trace, debug, info, warn, error or off (default: $ZEUS_LOG_LEVEL, else info)")
      ->type_name("LEVEL");
  cmd->add_option("--signing-key-path", flags->signing_key_path,
                  "Require bearer tokens (HS256 JWTs signed with this file's bytes; see `zeus "
                  "daemon token issue`) on every route but /discover and /time");
  cmd->add_option("--enable", flags->enable,
                  "API groups to serve, comma-separated: gpu-control, gpu-read, cpu-read (others "
                  "answer 404)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--gpu-power-poll-hz", flags->gpu_power_poll_hz,
                  "GPU power polling rate of /gpu/stream_power, 1 to 1000 Hz")
      ->check(NumberIn(1, 1000))
      ->capture_default_str();
  cmd->add_option("--cpu-power-poll-hz", flags->cpu_power_poll_hz,
                  "CPU (RAPL) power polling rate of /cpu/stream_power and /cpu/get_power, 1 to "
                  "1000 Hz")
      ->check(NumberIn(1, 1000))
      ->capture_default_str();

  auto token_flags = std::make_shared<TokenFlags>();
  CLI::App* token = cmd->add_subcommand("token",
                                        "Bearer tokens for a daemon run with "
                                        "--signing-key-path");
  token->require_subcommand(1);
  CLI::App* issue =
      token->add_subcommand("issue", "Print a new token (an HS256 JWT with sub, scopes, exp)");
  issue
      ->add_option("--signing-key-path", token_flags->signing_key_path,
                   "The daemon's signing key file")
      ->required();
  issue->add_option("--user,--sub", token_flags->user, "Who the token names (its sub claim)")
      ->required();
  issue
      ->add_option("--scope,--scopes", token_flags->scopes,
                   "API groups it may use, comma-separated: gpu-control, gpu-read, cpu-read")
      ->required();
  issue
      ->add_option("--expires,--expires-in", token_flags->expires,
                   "Lifetime: positive seconds, or with a unit (90m, 12h, 7d), or never (the "
                   "default; 0 is refused)")
      ->capture_default_str();
  issue->callback([token_flags, exit_code] {
    Status s = IssueTokenCommand(*token_flags);
    if (!s.ok()) {
      std::fprintf(stderr, "zeus daemon token issue: %s\n", s.ToString().c_str());
      *exit_code = 1;
    }
  });
  cmd->callback([flags, exit_code, token] {
    if (token->parsed()) return;  // `zeus daemon token ...` runs no daemon.
    Status s = RunDaemon(*flags);
    if (!s.ok()) {
      std::fprintf(stderr, "zeus daemon: %s\n", s.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace zeus::cli
