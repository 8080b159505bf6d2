#include "src/daemon/routes.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "zeus/http/query.h"
#include "zeus/http/status_map.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

#include "src/device/zeusd/zeusd_api.h"

namespace zeus::daemon {
namespace {

using json = nlohmann::json;

// zeusd's statuses: bad input and unknown devices 400, refusals 403, a GPU
// another client holds 409.
const HttpStatusMap kZeusdStatus{{StatusCode::kNotFound, 400}, {StatusCode::kNotSupported, 400}};

// `text` as a decimal number of ASCII digits only: no sign, no space, no
// hexadecimal ("%2B200000" and "%20200000" decode to "+200000" and " 200000",
// which are refused). nullopt when it is not one or exceeds `max`.
std::optional<uint64_t> StrictUint(const std::string& text, uint64_t max) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > max) return std::nullopt;
  return value;
}

StatusOr<uint32_t> Uint32Param(const std::map<std::string, std::string>& params,
                               const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return InvalidArgumentError("missing parameter " + name);
  std::optional<uint64_t> value = StrictUint(it->second, UINT32_MAX);
  if (!value) {
    return InvalidArgumentError(name + " \"" + it->second.substr(0, 64) +
                                "\": expected an integer in [0, 4294967295]");
  }
  return static_cast<uint32_t>(*value);
}

StatusOr<std::optional<bool>> BoolParam(const std::map<std::string, std::string>& params,
                                        const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return std::optional<bool>();
  if (it->second == "true") return std::optional<bool>(true);
  if (it->second == "false") return std::optional<bool>(false);
  return InvalidArgumentError(name + " \"" + it->second.substr(0, 64) +
                              "\": expected true or false");
}

StatusOr<bool> RequiredBool(const std::map<std::string, std::string>& params,
                            const std::string& name) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<bool> value, BoolParam(params, name));
  if (!value) return InvalidArgumentError("missing parameter " + name);
  return *value;
}

// The legacy routes' JSON body as parameters ("true"/"false", integers).
StatusOr<std::map<std::string, std::string>> BodyParams(const std::string& body) {
  std::map<std::string, std::string> params;
  if (Trim(body).empty()) return params;
  ZEUS_ASSIGN_OR_RETURN(json doc, ParseJson(body, "request body", JsonLimits{64 * 1024, 4}));
  ZEUS_ASSIGN_OR_RETURN(JsonFields fields,
                        JsonFields::Of(doc, "request body",
                                       {zeusd::kPowerLimitMw, zeusd::kEnabled, zeusd::kMinClockMhz,
                                        zeusd::kMaxClockMhz, zeusd::kBlock}));
  for (const auto& [key, value] : fields.object().items()) {
    if (value.is_boolean()) {
      params[key] = value.get<bool>() ? "true" : "false";
    } else if (value.is_number_unsigned()) {
      params[key] = std::to_string(value.get<uint64_t>());
    } else {
      return InvalidArgumentError("request body: field '" + key + "': expected " +
                                  (key == zeusd::kEnabled || key == zeusd::kBlock
                                       ? "true or false"
                                       : "a non-negative integer") +
                                  ", got " + DescribeJson(value));
    }
  }
  return params;
}

std::chrono::microseconds PeriodOf(double hz) {
  return std::chrono::microseconds(static_cast<int64_t>(1e6 / hz));
}

}  // namespace

HttpResponse JsonAnswer(int status, const json& body) { return HttpResponse{status, body.dump()}; }

HttpResponse ErrorAnswer(int status, const std::string& message) {
  return JsonAnswer(status, json{{"error", message}});
}

HttpResponse ErrorAnswerOf(const Status& s) {
  return ErrorAnswer(kZeusdStatus(s.code()), s.message());
}

StatusOr<std::map<std::string, std::string>> ParseQuery(const std::string& query) {
  ZEUS_ASSIGN_OR_RETURN(HttpFields fields,
                        zeus::ParseQuery(query, BadEscape::kRefuse, /*refuse_repeats=*/true));
  return std::map<std::string, std::string>(fields.begin(), fields.end());
}

Routes::Routes(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus, LeaseTable* leases,
               const DaemonOptions* options)
    : gpus_(std::move(gpus)), cpus_(std::move(cpus)), leases_(leases), options_(options) {
  gpu_power_ = std::make_unique<PowerHub>("GPU", MakeGpuPowerSampler(gpus_),
                                          PeriodOf(options_->gpu_power_poll_hz));
  cpu_power_ = std::make_unique<PowerHub>("CPU", MakeCpuPowerSampler(cpus_),
                                          PeriodOf(options_->cpu_power_poll_hz));
}

void Routes::EndStreams() {
  gpu_power_->Shutdown();
  cpu_power_->Shutdown();
}

HttpResponse Routes::GetCpuPower(const Params& params) {
  StatusOr<std::vector<int>> ids = CpuIds(params);
  if (!ids.ok()) return ErrorAnswerOf(ids.status());
  if (cpus_.empty())
    return ErrorAnswer(400, "this daemon has no CPUs whose RAPL energy it can read");
  // Power is energy over time: a poll of the CPU poller (two RAPL reads one
  // poll period apart), shared with the streams; the latest one while the
  // poller runs, so that readers park an I/O thread only for the first poll
  // of a burst (at most one period: the rates are bounded).
  StatusOr<PowerSnapshot> snapshot = cpu_power_->RecentSnapshot(
      std::chrono::milliseconds(std::max<int64_t>(2000, 3 * cpu_power_->period().count() / 1000)));
  if (!snapshot.ok()) return ErrorAnswerOf(snapshot.status());
  json power = json::object();
  for (int id : *ids) {
    const std::string key = std::to_string(id);
    power[key] = (*snapshot)->at("power_mw").at(key);
  }
  return JsonAnswer(200,
                    json{{"timestamp_ms", (*snapshot)->at("timestamp_ms")}, {"power_mw", power}});
}

HttpResponse Routes::Stream(PowerHub* hub, const std::vector<int>& ids) {
  std::vector<std::string> keys;
  for (int id : ids) keys.push_back(std::to_string(id));
  HttpResponse r;
  r.content_type = "text/event-stream";
  r.stream = hub->Subscribe(std::move(keys));
  return r;
}

HttpResponse Routes::StreamStats() {
  auto stats = [](const PowerHub& hub) {
    const PowerHubStats s = hub.Stats();
    return json{{"subscribers", s.subscribers},
                {"polls", s.polls},
                {"polling", s.polling},
                {"period_us", hub.period().count()}};
  };
  return JsonAnswer(200, json{{"gpu", stats(*gpu_power_)}, {"cpu", stats(*cpu_power_)}});
}

StatusOr<std::vector<int>> Routes::GpuIds(const Params& params, bool required) const {
  std::vector<int> ids;
  auto it = params.find(zeusd::kGpuIds);
  if (it == params.end()) {
    if (required) return InvalidArgumentError("missing parameter gpu_ids (e.g. gpu_ids=0,1)");
    for (size_t i = 0; i < gpus_.size(); ++i) ids.push_back(static_cast<int>(i));
    return ids;
  }
  for (const std::string& item : Split(it->second, ',')) {
    std::optional<uint64_t> id = StrictUint(item, 1'000'000);
    if (!id) {
      return InvalidArgumentError("gpu_ids \"" + it->second.substr(0, 64) +
                                  "\": expected comma-separated GPU indices");
    }
    if (*id >= gpus_.size()) {
      return InvalidArgumentError("GPU index " + std::to_string(*id) +
                                  " does not exist (this daemon has " +
                                  std::to_string(gpus_.size()) + " GPUs)");
    }
    if (std::find(ids.begin(), ids.end(), static_cast<int>(*id)) != ids.end()) {
      return InvalidArgumentError("gpu_ids: GPU " + std::to_string(*id) + " is listed twice");
    }
    ids.push_back(static_cast<int>(*id));
  }
  return ids;
}

StatusOr<std::vector<int>> Routes::CpuIds(const Params& params) const {
  std::vector<int> ids;
  auto it = params.find(zeusd::kCpuIds);
  if (it == params.end()) {
    for (size_t i = 0; i < cpus_.size(); ++i) ids.push_back(static_cast<int>(i));
    return ids;
  }
  for (const std::string& item : Split(it->second, ',')) {
    std::optional<uint64_t> id = StrictUint(item, 1'000'000);
    if (!id) {
      return InvalidArgumentError("cpu_ids \"" + it->second.substr(0, 64) +
                                  "\": expected comma-separated CPU indices");
    }
    if (*id >= cpus_.size()) {
      return InvalidArgumentError("CPU index " + std::to_string(*id) +
                                  " does not exist (this daemon has " +
                                  std::to_string(cpus_.size()) + " CPUs)");
    }
    ids.push_back(static_cast<int>(*id));
  }
  return ids;
}

HttpResponse Routes::Control(const std::string& op, const Params& params, const Peer& peer) {
  if (Status s = Authorize(peer, true); !s.ok()) return ErrorAnswerOf(s);
  if (peer.Exited()) {
    // A process that inherited the connection (a child of an exited
    // parent): its change would be leased to the dead parent and put back at
    // once, while it believes it holds the GPU.
    return ErrorAnswer(403,
                       peer.description +
                           ", which opened this connection, has exited: changes are accepted only "
                           "from the live process that connected (the change is leased to it); "
                           "open a new connection. Nothing was changed");
  }
  StatusOr<std::vector<int>> ids = GpuIds(params, true);
  if (!ids.ok()) return ErrorAnswerOf(ids.status());
  StatusOr<std::optional<bool>> block = BoolParam(params, zeusd::kBlock);
  if (!block.ok()) return ErrorAnswerOf(block.status());
  std::vector<Change> changes(1);
  Change& change = changes[0];
  if (op == zeusd::kSetGpuLockedClocks || op == zeusd::kSetMemLockedClocks) {
    StatusOr<uint32_t> min_mhz = Uint32Param(params, zeusd::kMinClockMhz);
    if (!min_mhz.ok()) return ErrorAnswerOf(min_mhz.status());
    StatusOr<uint32_t> max_mhz = Uint32Param(params, zeusd::kMaxClockMhz);
    if (!max_mhz.ok()) return ErrorAnswerOf(max_mhz.status());
    if (*min_mhz > *max_mhz) {
      return ErrorAnswer(400, "min_clock_mhz " + std::to_string(*min_mhz) +
                                  " is above max_clock_mhz " + std::to_string(*max_mhz));
    }
    change = Change{
        op == zeusd::kSetGpuLockedClocks ? Setting::kGpuLockedClocks : Setting::kMemLockedClocks,
        *min_mhz, *max_mhz, false};
  } else if (op == zeusd::kResetGpuLockedClocks) {
    change = Change{Setting::kGpuLockedClocks, 0, 0, true};
  } else if (op == zeusd::kResetMemLockedClocks) {
    change = Change{Setting::kMemLockedClocks, 0, 0, true};
  } else if (op == zeusd::kResetLockedClocks) {
    change = Change{Setting::kGpuLockedClocks, 0, 0, true, true};
    changes.push_back(Change{Setting::kMemLockedClocks, 0, 0, true, true});
  } else if (op == zeusd::kSetPowerLimit) {
    StatusOr<uint32_t> limit = Uint32Param(params, zeusd::kPowerLimitMw);
    if (!limit.ok()) return ErrorAnswerOf(limit.status());
    change = Change{Setting::kPowerLimit, *limit};
  } else if (op == zeusd::kSetPersistenceMode) {
    StatusOr<bool> enabled = RequiredBool(params, zeusd::kEnabled);
    if (!enabled.ok()) return ErrorAnswerOf(enabled.status());
    change = Change{Setting::kPersistenceMode, *enabled ? 1u : 0u};
  } else {
    return ErrorAnswer(404, "no route POST /gpu/" + op);
  }
  // block=false is accepted and served as block=true: the change is made
  // before the answer, which only strengthens the contract.
  std::vector<Status> results = leases_->Apply(peer, *ids, changes[0]);
  for (size_t c = 1; c < changes.size(); ++c) {
    const std::vector<Status> more = leases_->Apply(peer, *ids, changes[c]);
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].ok()) results[i] = more[i];
    }
  }
  int worst = 200;
  json errors = json::object();
  std::string first;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    worst = std::max(worst, kZeusdStatus(results[i].code()));
    errors[std::to_string((*ids)[i])] = results[i].message();
    if (first.empty()) first = results[i].message();
  }
  if (worst == 200) return HttpResponse{200, "", "text/plain"};
  json body{{"error", first}};
  if (results.size() > 1) body["errors"] = errors;
  return JsonAnswer(worst, body);
}

HttpResponse Routes::GpuRead(const std::string& op, const Params& params) {
  StatusOr<std::vector<int>> ids = GpuIds(params, false);
  if (!ids.ok()) return ErrorAnswerOf(ids.status());
  json out = json::object();
  json power = json::object();
  for (int id : *ids) {
    Gpu* gpu = gpus_[static_cast<size_t>(id)];
    const std::string key = std::to_string(id);
    if (op == zeusd::kGetPowerLimit) {
      StatusOr<uint32_t> v = gpu->PowerLimitMw();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      out[key] = {{zeusd::kPowerLimitMw, *v}};
    } else if (op == zeusd::kGetPowerLimitConstraints) {
      StatusOr<PowerLimitConstraints> v = gpu->PowerLimitConstraintsMw();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      out[key] = {{"min_power_limit_mw", v->min_mw}, {"max_power_limit_mw", v->max_mw}};
    } else if (op == zeusd::kGetPersistenceMode) {
      StatusOr<bool> v = gpu->PersistenceMode();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      out[key] = {{zeusd::kEnabled, *v}};
    } else if (op == zeusd::kGetCumulativeEnergy) {
      StatusOr<uint64_t> v = gpu->TotalEnergyMj();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      out[key] = {{"energy_mj", *v}};
    } else if (op == zeusd::kGetPower) {
      StatusOr<uint32_t> v = gpu->PowerMw();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      power[key] = *v;
    } else {
      return ErrorAnswer(404, "no route GET /gpu/" + op);
    }
  }
  if (op == zeusd::kGetPower)
    return JsonAnswer(200, json{{"timestamp_ms", UnixTimeMs()}, {"power_mw", power}});
  return JsonAnswer(200, out);
}

HttpResponse Routes::CpuRead(const std::string& op, const Params& params) {
  if (op != zeusd::kGetCumulativeEnergy) {
    return ErrorAnswer(404,
                       "no route GET /cpu/" + op +
                           " (this daemon serves /cpu/get_cumulative_energy, /cpu/get_power and "
                           "/cpu/stream_power)");
  }
  StatusOr<std::vector<int>> ids = CpuIds(params);
  if (!ids.ok()) return ErrorAnswerOf(ids.status());
  StatusOr<bool> want_cpu = RequiredBool(params, zeusd::kCpu);
  if (!want_cpu.ok()) return ErrorAnswerOf(want_cpu.status());
  StatusOr<bool> want_dram = RequiredBool(params, zeusd::kDram);
  if (!want_dram.ok()) return ErrorAnswerOf(want_dram.status());
  json out = json::object();
  for (int id : *ids) {
    Cpu* cpu = cpus_[static_cast<size_t>(id)];
    json entry{{zeusd::kCpuEnergyUj, nullptr}, {zeusd::kDramEnergyUj, nullptr}};
    if (*want_cpu) {
      StatusOr<uint64_t> v = cpu->PackageEnergyUj();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      entry[zeusd::kCpuEnergyUj] = *v;
    }
    if (*want_dram && cpu->HasDram()) {
      StatusOr<uint64_t> v = cpu->DramEnergyUj();
      if (!v.ok()) return ErrorAnswerOf(v.status());
      entry[zeusd::kDramEnergyUj] = *v;
    }
    out[std::to_string(id)] = entry;
  }
  return JsonAnswer(200, out);
}

HttpResponse Routes::Discover() {
  json gpu_ids = json::array(), gpus = json::array();
  for (size_t i = 0; i < gpus_.size(); ++i) {
    StatusOr<std::string> name = gpus_[i]->Name();
    StatusOr<uint64_t> energy = gpus_[i]->TotalEnergyMj();
    // The original client requires the field: "" when the backend cannot
    // tell the address.
    StatusOr<std::string> pci = gpus_[i]->PciBusId();
    gpu_ids.push_back(i);
    gpus.push_back({{"id", i},
                    {"name", name.ok() ? *name : "unknown"},
                    {"pci_address", pci.ok() ? *pci : ""},
                    {"cumulative_energy_available", energy.ok()}});
  }
  json cpu_ids = json::array(), cpus = json::array(), dram = json::array();
  for (size_t i = 0; i < cpus_.size(); ++i) {
    cpu_ids.push_back(i);
    dram.push_back(cpus_[i]->HasDram());
    cpus.push_back({{"id", i}, {"dram_available", cpus_[i]->HasDram()}});
  }
  return JsonAnswer(200, json{{zeusd::kGpuIds, gpu_ids},
                              {zeusd::kCpuIds, cpu_ids},
                              {"dram_available", dram},
                              {"gpus", gpus},
                              {"cpus", cpus},
                              {"enabled_api_groups", options_->enabled_api_groups},
                              {"auth_required", !options_->signing_key.empty()},
                              {"dry_run", options_->dry_run},
                              {"lease_timeout_ms", options_->lease_timeout.count()}});
}

namespace {

// 405 with the Allow field RFC 9110 requires, the allowed method also named
// in the message.
HttpResponse MethodNotAllowed(const HttpRequest& request, const char* allowed) {
  HttpResponse response =
      ErrorAnswer(405, request.method.substr(0, 16) + " " + request.path.substr(0, 128) +
                           ": method not allowed (use " + allowed + ")");
  response.headers.emplace_back("Allow", allowed);
  return response;
}

}  // namespace

std::vector<HttpRoute> Routes::Table() {
  using Match = HttpRoute::Match;
  // Every route takes every method and answers 405 itself, after the checks
  // (Check) that zeusd makes first; paths are matched as sent.
  auto route = [](std::string path, Match match, HttpHandler handler) {
    return HttpRoute{"", std::move(path), std::move(handler), match, HttpRoute::Access::kPublic};
  };
  std::vector<HttpRoute> table;
  table.push_back(route(zeusd::kDiscoverPath, Match::kExact,
                        Guarded(/*open=*/true, [this](const HttpRequest& r, Checked&) {
                          return r.method == "GET" ? Discover() : MethodNotAllowed(r, "GET");
                        })));
  table.push_back(route(
      zeusd::kTimePath, Match::kExact, Guarded(/*open=*/true, [](const HttpRequest& r, Checked&) {
        return r.method == "GET" ? JsonAnswer(200, json{{"timestamp_ms", UnixTimeMs()}})
                                 : MethodNotAllowed(r, "GET");
      })));
  table.push_back(
      route("/auth/whoami", Match::kExact, Guarded(false, [](const HttpRequest& r, Checked& c) {
              if (r.method != "GET") return MethodNotAllowed(r, "GET");
              if (!c.claims) {
                return ErrorAnswer(404,
                                   "authentication is not enabled on this daemon (start it with "
                                   "--signing-key-path)");
              }
              json who{{"sub", c.claims->sub}, {"scopes", c.claims->scopes}};
              if (c.claims->exp) who["exp"] = *c.claims->exp;
              return JsonAnswer(200, who);
            })));
  table.push_back(
      route("/streams", Match::kExact, Guarded(false, [this](const HttpRequest& r, Checked&) {
              if (r.method != "GET") return MethodNotAllowed(r, "GET");
              if (Status s = Authorize(r.peer, false); !s.ok()) return ErrorAnswerOf(s);
              return StreamStats();
            })));
  table.push_back(
      route("/leases", Match::kExact, Guarded(false, [this](const HttpRequest& r, Checked&) {
              if (r.method != "GET") return MethodNotAllowed(r, "GET");
              if (Status s = Authorize(r.peer, false); !s.ok()) return ErrorAnswerOf(s);
              return Leases();
            })));
  table.push_back(
      route("/lease/release", Match::kExact, Guarded(false, [this](const HttpRequest& r, Checked&) {
              if (r.method != "POST") return MethodNotAllowed(r, "POST");
              if (!r.peer.local && !options_->tcp_changes) {
                return ErrorAnswer(403,
                                   "leases belong to Unix-socket clients only (TCP clients hold "
                                   "one only with --tcp-changes)");
              }
              return JsonAnswer(200, json{{"released_gpus", leases_->Release(r.peer)}});
            })));
  table.push_back(route(zeusd::kGpuPrefix, Match::kPrefix,
                        Guarded(false, [this](const HttpRequest& r, Checked& c) {
                          return GpuRoute(r, std::move(c.params));
                        })));
  table.push_back(route(
      zeusd::kCpuPrefix, Match::kPrefix,
      Guarded(false, [this](const HttpRequest& r, Checked& c) { return CpuRoute(r, c.params); })));
  return table;
}

HttpHandler Routes::NotFound() {
  return Guarded(false, [](const HttpRequest& r, Checked&) {
    return ErrorAnswer(404, "no route " + r.path.substr(0, 128));
  });
}

HttpResponse Routes::Leases() {
  json leases = json::array();
  for (const LeaseRecord& r : leases_->Records()) {
    json j{{"gpu", r.gpu}, {"pid", r.pid}, {"uid", r.uid}};
    if (r.original_power_limit_mw) j["original_power_limit_mw"] = *r.original_power_limit_mw;
    if (r.original_persistence_mode) j["original_persistence_mode"] = *r.original_persistence_mode;
    if (r.reset_gpu_locked_clocks) j["reset_gpu_locked_clocks"] = true;
    if (r.reset_mem_locked_clocks) j["reset_mem_locked_clocks"] = true;
    leases.push_back(j);
  }
  return JsonAnswer(200, json{{"leases", leases}});
}

HttpResponse Routes::GpuRoute(const HttpRequest& request, Params params) {
  static const char* const kControl[] = {zeusd::kSetPowerLimit,      zeusd::kSetPersistenceMode,
                                         zeusd::kSetGpuLockedClocks, zeusd::kResetGpuLockedClocks,
                                         zeusd::kSetMemLockedClocks, zeusd::kResetMemLockedClocks,
                                         zeusd::kResetLockedClocks};
  std::string rest = request.path.substr(std::strlen(zeusd::kGpuPrefix));
  // Legacy form: /gpu/<id>/<op> with a JSON body.
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    const std::string id = rest.substr(0, slash);
    rest = rest.substr(slash + 1);
    StatusOr<Params> body = BodyParams(request.body);
    if (!body.ok()) return ErrorAnswerOf(body.status());
    params = std::move(*body);
    params[zeusd::kGpuIds] = id;
  }
  for (const char* op : kControl) {
    if (rest == op) {
      return request.method == "POST" ? Control(rest, params, request.peer)
                                      : MethodNotAllowed(request, "POST");
    }
  }
  if (request.method != "GET") return MethodNotAllowed(request, "GET");
  if (Status s = Authorize(request.peer, false); !s.ok()) return ErrorAnswerOf(s);
  if (rest == "stream_power") {
    StatusOr<std::vector<int>> ids = GpuIds(params, false);
    if (!ids.ok()) return ErrorAnswerOf(ids.status());
    return Stream(gpu_power_.get(), *ids);
  }
  return GpuRead(rest, params);
}

HttpResponse Routes::CpuRoute(const HttpRequest& request, const Params& params) {
  if (request.method != "GET") return MethodNotAllowed(request, "GET");
  if (Status s = Authorize(request.peer, false); !s.ok()) return ErrorAnswerOf(s);
  const std::string op = request.path.substr(std::strlen(zeusd::kCpuPrefix));
  if (op == "get_power") return GetCpuPower(params);
  if (op == "stream_power") {
    StatusOr<std::vector<int>> ids = CpuIds(params);
    if (!ids.ok()) return ErrorAnswerOf(ids.status());
    if (cpus_.empty())
      return ErrorAnswer(400, "this daemon has no CPUs whose RAPL energy it can read");
    return Stream(cpu_power_.get(), *ids);
  }
  return CpuRead(op, params);
}

}  // namespace zeus::daemon
