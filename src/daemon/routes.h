// The HTTP API: the original zeusd's routes (GPU control and reads, CPU
// energy reads, /discover, /time), its legacy per-GPU routes
// (POST /gpu/<id>/set_power_limit with a JSON body), and the lease routes of
// this daemon (GET /leases, POST /lease/release), live power
// (GET /{gpu,cpu}/get_power, the SSE streams GET /{gpu,cpu}/stream_power,
// and GET /streams, ours: each poller's subscribers and polls), and the
// original's bearer tokens (GET /auth/whoami; API groups). Parameters and error
// statuses follow zeusd: 400 for bad input or an unknown device, 403 when
// not authorised, 409 (ours) when another client holds the GPU; error bodies
// are {"error": "..."}, plus {"errors": {"<gpu>": "..."}} for several GPUs.
// The routes are entries of the HTTP layer's route table (Table(), served by
// src/daemon/http_server.h); a new route is one more entry there, behind
// Guarded() so that zeusd's checks come first.
//
// Thread-safety: the handlers of Table() and NotFound() may be called
// concurrently; they must not outlive this object.

#ifndef ZEUS_SRC_DAEMON_ROUTES_H_
#define ZEUS_SRC_DAEMON_ROUTES_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/daemon/daemon.h"
#include "zeus/daemon/token.h"
#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/http/message.h"
#include "zeus/http/router.h"
#include "zeus/status.h"

#include "src/daemon/lease_table.h"
#include "src/daemon/power_stream.h"

namespace zeus::daemon {

// Splits "a=1&b=x%20y" into a map, percent-decoding names and values
// (zeus/http/query.h). kInvalidArgument for a bad escape or a parameter given
// twice.
StatusOr<std::map<std::string, std::string>> ParseQuery(const std::string& query);

class Routes {
 public:
  // Everything must outlive this object.
  Routes(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus, LeaseTable* leases,
         const DaemonOptions* options);

  // The daemon's routes for the HTTP layer's route table, which must match
  // paths as sent (undecoded), and the answer for a path no route matches.
  std::vector<HttpRoute> Table();
  HttpHandler NotFound();
  // Ends every power stream (their connections close after the last chunk);
  // later stream requests end at once. Idempotent.
  void EndStreams();

 private:
  using Params = std::map<std::string, std::string>;
  // What every request has passed before its route's body.
  struct Checked {
    Params params;
    // The bearer token's claims when the daemon has a signing key.
    std::optional<TokenClaims> claims;
  };
  using Body = std::function<HttpResponse(const HttpRequest&, Checked&)>;

  // What zeusd checks before any route, in its order: the request renews the
  // peer's leases, its query must parse (400), and unless `open` the path's
  // API group must be enabled (404) and, with a signing key, the bearer token
  // valid (401) and scoped for that group (403). An answer refuses.
  std::optional<HttpResponse> Check(const HttpRequest& request, bool open, Checked* checked) const;
  // `body` behind Check.
  HttpHandler Guarded(bool open, Body body);
  HttpResponse Leases();
  HttpResponse GpuRoute(const HttpRequest& request, Params params);
  HttpResponse CpuRoute(const HttpRequest& request, const Params& params);

  // OK when `peer` may change settings (or read, with `write` false).
  Status Authorize(const Peer& peer, bool write) const;
  StatusOr<std::vector<int>> GpuIds(const Params& params, bool required) const;
  StatusOr<std::vector<int>> CpuIds(const Params& params) const;
  HttpResponse Control(const std::string& op, const Params& params, const Peer& peer);
  HttpResponse GpuRead(const std::string& op, const Params& params);
  HttpResponse CpuRead(const std::string& op, const Params& params);
  HttpResponse Discover();
  HttpResponse GetCpuPower(const Params& params);
  HttpResponse Stream(PowerHub* hub, const std::vector<int>& ids);
  HttpResponse StreamStats();
  bool GroupEnabled(const std::string& group) const;

  const std::vector<Gpu*> gpus_;
  const std::vector<Cpu*> cpus_;
  LeaseTable* const leases_;
  const DaemonOptions* const options_;
  std::unique_ptr<PowerHub> gpu_power_;
  std::unique_ptr<PowerHub> cpu_power_;
};

// True when `peer` is one who may change settings by its credentials: a
// process on the Unix socket that runs as root or is a member of
// `control_group` (tokens are judged apart).
bool MayControl(const Peer& peer, const std::optional<gid_t>& control_group);

// The daemon's answers: `body` as JSON; an error as {"error": message}; a
// Status with zeusd's HTTP status for its code (bad input and unknown
// devices 400, refusals 403, a GPU another client holds 409).
HttpResponse JsonAnswer(int status, const nlohmann::json& body);
HttpResponse ErrorAnswer(int status, const std::string& message);
HttpResponse ErrorAnswerOf(const Status& status);

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_ROUTES_H_
