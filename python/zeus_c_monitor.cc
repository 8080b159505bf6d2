// The C ABI of the energy monitor (zeus_monitor_*), the power monitor
// (zeus_power_monitor_*) and direct GPU reads (zeus_gpu_reader_*).

#include <spdlog/spdlog.h>

#include "zeus/device/clock.h"
#include "zeus/monitor/power_monitor.h"
#include "zeus/monitor/reporter.h"
#include "zeus/util/units.h"

#include "python/zeus_c_internal.h"

namespace {

using zeus::SetIfPresent;
using zeus::Status;
using zeus::StatusOr;
using zeus::c_api::Guard;
using zeus::c_api::MonitorState;
using zeus::c_api::NullHandle;
using zeus::c_api::Report;

// Set while a *_nosync call runs on this thread: the caller has synchronised
// (or asked not to), so the sync callback is skipped for that call only.
thread_local bool t_skip_sync = false;

// Runs `call` with the sync callback skipped on this thread.
template <typename F>
int32_t WithoutSync(F call) {
  t_skip_sync = true;
  const int32_t code = call();
  t_skip_sync = false;
  return code;
}

Status CreateMonitor(const char* options_json, zeus_sync_fn sync, void* user, zeus_monitor** out) {
  constexpr const char* kFn = "zeus_monitor_create";
  if (out == nullptr) return zeus::InvalidArgumentError("zeus_monitor_create: out is NULL");
  *out = nullptr;
  ZEUS_ASSIGN_OR_RETURN(
      nlohmann::json j,
      zeus::c_api::ParseObject(
          kFn, options_json,
          {"gpu_indices", "cpu_indices", "mode", "approx_instant_energy", "log_file",
           "power_sample_period_s", "counter_poll_period_s", "powercap_root"}));
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kFn, j));
  zeus::EnergyMonitorOptions options;
  std::string mode = "exact";
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("mode"), &mode));
  if (mode == "low_overhead") {
    options.mode = zeus::EnergyMonitorMode::kLowOverhead;
  } else if (mode != "exact") {
    return zeus::InvalidArgumentError(
        "zeus_monitor_create: mode must be \"exact\" or \"low_overhead\", got \"" + mode + "\"");
  }
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("approx_instant_energy"), &options.approximate_short_windows));
  std::string log_file;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("log_file"), &log_file));
  std::string powercap_root = zeus::kDefaultPowercapRoot;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("powercap_root"), &powercap_root));
  for (const char* key : {"power_sample_period_s", "counter_poll_period_s"}) {
    ZEUS_ASSIGN_OR_RETURN(std::optional<double> period_s, f.OptionalDouble(key, 0.0, 3600.0));
    if (period_s.has_value()) {
      (std::string(key) == "power_sample_period_s" ? options.power_sample_period
                                                   : options.counter_poll_period) =
          zeus::FromSeconds(*period_s);
    }
  }
  auto state = std::make_shared<MonitorState>();
  ZEUS_ASSIGN_OR_RETURN(state->gpus,
                        zeus::c_api::SelectGpus(kFn, j.value("gpu_indices", nlohmann::json())));
  ZEUS_ASSIGN_OR_RETURN(
      state->cpus,
      zeus::c_api::SelectCpus(kFn, j.value("cpu_indices", nlohmann::json()), powercap_root));
  if (!log_file.empty()) {
    // Columns named by GPU index, as the original's log (ReplayZeusMonitor
    // reads the indices back from the header).
    std::vector<int> gpu_indices;
    for (zeus::Gpu* gpu : state->gpus.picked) gpu_indices.push_back(gpu->index());
    options.window_reporter = zeus::NewCsvWindowReporter(log_file, std::move(gpu_indices));
  }
  if (sync != nullptr) {
    state->sync = [sync, user] {
      if (t_skip_sync) return;
      if (sync(user) != 0) spdlog::warn("zeus C API: the sync callback failed");
    };
    options.sync = state->sync;
  }
  if (!state->gpus.picked.empty() || !state->cpus.picked.empty()) {
    ZEUS_ASSIGN_OR_RETURN(state->monitor,
                          zeus::EnergyMonitor::Create(state->gpus.picked, state->cpus.picked,
                                                      zeus::RealClock(), options));
  }
  *out = new zeus_monitor{std::move(state)};
  return Status::Ok();
}

Status CheckName(const char* fn, const zeus_monitor* monitor, const char* name) {
  if (monitor == nullptr) return NullHandle(fn);
  if (name == nullptr) return zeus::InvalidArgumentError(std::string(fn) + ": name is NULL");
  return Status::Ok();
}

Status Begin(zeus_monitor* monitor, const char* name) {
  ZEUS_RETURN_IF_ERROR(CheckName("zeus_monitor_begin", monitor, name));
  MonitorState& s = *monitor->state;
  if (s.monitor != nullptr) return s.monitor->Begin(name);
  if (*name == '\0') return zeus::InvalidArgumentError("zeus_monitor_begin: empty window name");
  if (s.sync) s.sync();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.bare_windows.emplace(name, zeus::RealClock()->Now()).second) {
    return zeus::AlreadyExistsError(std::string("zeus_monitor_begin: window '") + name +
                                    "' is already open");
  }
  return Status::Ok();
}

Status End(zeus_monitor* monitor, const char* name, double* values, size_t num_values) {
  ZEUS_RETURN_IF_ERROR(CheckName("zeus_monitor_end", monitor, name));
  MonitorState& s = *monitor->state;
  const size_t need = 2 + s.gpus.picked.size() + 2 * s.cpus.picked.size();
  if (values == nullptr || num_values < need) {
    return zeus::InvalidArgumentError("zeus_monitor_end: values holds " +
                                      std::to_string(num_values) + " doubles, need " +
                                      std::to_string(need));
  }
  if (s.monitor == nullptr) {
    if (s.sync) s.sync();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.bare_windows.find(name);
    if (it == s.bare_windows.end()) {
      return zeus::NotFoundError(std::string("zeus_monitor_end: no open window '") + name + "'");
    }
    values[0] = zeus::ToSeconds(zeus::RealClock()->Now() - it->second);
    values[1] = zeus::ToSeconds(it->second);
    s.bare_windows.erase(it);
    return Status::Ok();
  }
  ZEUS_ASSIGN_OR_RETURN(zeus::Measurement m, s.monitor->End(name));
  size_t k = 0;
  values[k++] = m.time_s;
  values[k++] = m.start_time_s;
  for (double e : m.gpu_energy_j) values[k++] = e;
  for (double e : m.cpu_energy_j) values[k++] = e;
  for (double e : m.dram_energy_j) values[k++] = e;
  return Status::Ok();
}

Status BeginOf(const zeus_monitor* monitor, const char* name, double* values, size_t num_values) {
  ZEUS_RETURN_IF_ERROR(CheckName("zeus_monitor_window_begin", monitor, name));
  MonitorState& s = *monitor->state;
  const size_t need = 1 + s.gpus.picked.size() + 2 * s.cpus.picked.size();
  if (values == nullptr || num_values < need) {
    return zeus::InvalidArgumentError("zeus_monitor_window_begin: values holds " +
                                      std::to_string(num_values) + " doubles, need " +
                                      std::to_string(need));
  }
  if (s.monitor == nullptr) {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.bare_windows.find(name);
    if (it == s.bare_windows.end()) {
      return zeus::NotFoundError(std::string("zeus_monitor_window_begin: no open window '") + name +
                                 "'");
    }
    values[0] = zeus::ToSeconds(it->second);
    return Status::Ok();
  }
  ZEUS_ASSIGN_OR_RETURN(zeus::WindowBegin w, s.monitor->BeginOf(name));
  size_t k = 0;
  values[k++] = w.start_time_s;
  for (double e : w.gpu_energy_j) values[k++] = e;
  for (double e : w.cpu_energy_j) values[k++] = e;
  for (double e : w.dram_energy_j) values[k++] = e;
  return Status::Ok();
}

Status Cancel(zeus_monitor* monitor, const char* name) {
  ZEUS_RETURN_IF_ERROR(CheckName("zeus_monitor_cancel", monitor, name));
  MonitorState& s = *monitor->state;
  if (s.monitor != nullptr) return s.monitor->Cancel(name);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.bare_windows.erase(name) == 0) {
    return zeus::NotFoundError(std::string("zeus_monitor_cancel: no open window '") + name + "'");
  }
  return Status::Ok();
}

}  // namespace

struct zeus_power_monitor {
  zeus::c_api::GpuSelection gpus;
  std::unique_ptr<zeus::PowerMonitor> monitor;
};

struct zeus_gpu_reader {
  zeus::c_api::GpuSelection gpus;
};

namespace {

// A list of domain names from the "domains" option (absent or null: empty).
StatusOr<std::vector<zeus::PowerDomain>> ParseDomains(const char* fn, const nlohmann::json& j) {
  std::vector<zeus::PowerDomain> domains;
  auto it = j.find("domains");
  if (it == j.end() || it->is_null()) return domains;
  if (!it->is_array() || it->empty()) {
    return zeus::InvalidArgumentError(std::string(fn) +
                                      ": field 'domains': expected a non-empty list of names");
  }
  for (const nlohmann::json& name : *it) {
    if (!name.is_string()) {
      return zeus::InvalidArgumentError(std::string(fn) +
                                        ": field 'domains': expected names, got " + name.dump());
    }
    ZEUS_ASSIGN_OR_RETURN(zeus::PowerDomain domain,
                          zeus::ParsePowerDomain(name.get<std::string>()));
    domains.push_back(domain);
  }
  return domains;
}

Status CreatePowerMonitor(const char* options_json, zeus_power_monitor** out) {
  constexpr const char* kFn = "zeus_power_monitor_create";
  if (out == nullptr) return zeus::InvalidArgumentError("zeus_power_monitor_create: out is NULL");
  *out = nullptr;
  ZEUS_ASSIGN_OR_RETURN(
      nlohmann::json j,
      zeus::c_api::ParseObject(kFn, options_json,
                               {"gpu_indices", "period_s", "max_points_per_gpu", "domains",
                                "counter_period_s", "sample_energy_counters"}));
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kFn, j));
  zeus::PowerMonitorOptions options;
  double period_s = zeus::ToSeconds(options.period);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("period_s", 0.0, 3600.0), &period_s));
  options.period = zeus::FromSeconds(period_s);
  double counter_period_s = zeus::ToSeconds(options.counter_period);
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("counter_period_s", 0.0, 3600.0), &counter_period_s));
  options.counter_period = zeus::FromSeconds(counter_period_s);
  options.sample_energy_counters = true;
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("sample_energy_counters"), &options.sample_energy_counters));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("max_points_per_gpu", 0), &options.max_points_per_gpu));
  ZEUS_ASSIGN_OR_RETURN(options.domains, ParseDomains(kFn, j));
  auto pm = std::make_unique<zeus_power_monitor>();
  ZEUS_ASSIGN_OR_RETURN(pm->gpus,
                        zeus::c_api::SelectGpus(kFn, j.value("gpu_indices", nlohmann::json())));
  if (pm->gpus.picked.empty()) {
    return zeus::UnavailableError("zeus_power_monitor_create: no GPUs to monitor");
  }
  ZEUS_ASSIGN_OR_RETURN(pm->monitor,
                        zeus::PowerMonitor::Create(pm->gpus.picked, zeus::RealClock(), options));
  *out = pm.release();
  return Status::Ok();
}

Status PowerPosition(const char* fn, const zeus_power_monitor* pm, int32_t position) {
  if (pm == nullptr) return NullHandle(fn);
  if (position < 0 || static_cast<size_t>(position) >= pm->gpus.picked.size()) {
    return zeus::InvalidArgumentError(std::string(fn) + ": no GPU at position " +
                                      std::to_string(position));
  }
  return Status::Ok();
}

Status CreateGpuReader(const char* options_json, zeus_gpu_reader** out) {
  constexpr const char* kFn = "zeus_gpu_reader_create";
  if (out == nullptr) return zeus::InvalidArgumentError("zeus_gpu_reader_create: out is NULL");
  *out = nullptr;
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                        zeus::c_api::ParseObject(kFn, options_json, {"gpu_indices"}));
  auto reader = std::make_unique<zeus_gpu_reader>();
  ZEUS_ASSIGN_OR_RETURN(reader->gpus,
                        zeus::c_api::SelectGpus(kFn, j.value("gpu_indices", nlohmann::json())));
  *out = reader.release();
  return Status::Ok();
}

StatusOr<zeus::Gpu*> ReaderGpu(const char* fn, const zeus_gpu_reader* reader, int32_t position) {
  if (reader == nullptr) return NullHandle(fn);
  if (position < 0 || static_cast<size_t>(position) >= reader->gpus.picked.size()) {
    return zeus::InvalidArgumentError(std::string(fn) + ": no GPU at position " +
                                      std::to_string(position));
  }
  return reader->gpus.picked[position];
}

}  // namespace

extern "C" {

int32_t zeus_monitor_create(const char* options_json, zeus_sync_fn sync, void* user,
                            zeus_monitor** out, char* message, size_t message_size) {
  return Guard([&] { return CreateMonitor(options_json, sync, user, out); }, message, message_size);
}

int32_t zeus_monitor_num_gpus(const zeus_monitor* monitor) {
  return monitor == nullptr ? 0 : static_cast<int32_t>(monitor->state->gpus.picked.size());
}

int32_t zeus_monitor_num_cpus(const zeus_monitor* monitor) {
  return monitor == nullptr ? 0 : static_cast<int32_t>(monitor->state->cpus.picked.size());
}

int32_t zeus_monitor_gpu_index(const zeus_monitor* monitor, int32_t position) {
  if (position < 0 || position >= zeus_monitor_num_gpus(monitor)) return -1;
  return monitor->state->gpus.picked[position]->index();
}

int32_t zeus_monitor_cpu_index(const zeus_monitor* monitor, int32_t position) {
  if (position < 0 || position >= zeus_monitor_num_cpus(monitor)) return -1;
  return monitor->state->cpus.picked[position]->index();
}

int32_t zeus_monitor_begin(zeus_monitor* monitor, const char* name, char* message,
                           size_t message_size) {
  return Guard([&] { return Begin(monitor, name); }, message, message_size);
}

int32_t zeus_monitor_end(zeus_monitor* monitor, const char* name, double* values, size_t num_values,
                         char* message, size_t message_size) {
  return Guard([&] { return End(monitor, name, values, num_values); }, message, message_size);
}

int32_t zeus_monitor_begin_nosync(zeus_monitor* monitor, const char* name, char* message,
                                  size_t message_size) {
  return WithoutSync([&] { return zeus_monitor_begin(monitor, name, message, message_size); });
}

int32_t zeus_monitor_end_nosync(zeus_monitor* monitor, const char* name, double* values,
                                size_t num_values, char* message, size_t message_size) {
  return WithoutSync(
      [&] { return zeus_monitor_end(monitor, name, values, num_values, message, message_size); });
}

int32_t zeus_monitor_cancel(zeus_monitor* monitor, const char* name, char* message,
                            size_t message_size) {
  return Guard([&] { return Cancel(monitor, name); }, message, message_size);
}

int32_t zeus_monitor_window_begin(const zeus_monitor* monitor, const char* name, double* values,
                                  size_t num_values, char* message, size_t message_size) {
  return Guard([&] { return BeginOf(monitor, name, values, num_values); }, message, message_size);
}

int32_t zeus_monitor_is_open(const zeus_monitor* monitor, const char* name) {
  if (monitor == nullptr || name == nullptr) return 0;
  MonitorState& s = *monitor->state;
  if (s.monitor != nullptr) return s.monitor->IsOpen(name) ? 1 : 0;
  std::lock_guard<std::mutex> lock(s.mu);
  return s.bare_windows.count(name) > 0 ? 1 : 0;
}

void zeus_monitor_destroy(zeus_monitor* monitor) {
  try {
    delete monitor;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying a monitor");
  }
}

int32_t zeus_power_monitor_create(const char* options_json, zeus_power_monitor** out, char* message,
                                  size_t message_size) {
  return Guard([&] { return CreatePowerMonitor(options_json, out); }, message, message_size);
}

int32_t zeus_power_monitor_num_gpus(const zeus_power_monitor* pm) {
  return pm == nullptr ? 0 : static_cast<int32_t>(pm->gpus.picked.size());
}

int32_t zeus_power_monitor_gpu_index(const zeus_power_monitor* pm, int32_t position) {
  if (position < 0 || position >= zeus_power_monitor_num_gpus(pm)) return -1;
  return pm->gpus.picked[position]->index();
}

int32_t zeus_power_monitor_num_domains(const zeus_power_monitor* pm) {
  return pm == nullptr ? 0 : static_cast<int32_t>(pm->monitor->domains().size());
}

const char* zeus_power_monitor_domain_name(const zeus_power_monitor* pm, int32_t i) {
  if (i < 0 || i >= zeus_power_monitor_num_domains(pm)) return nullptr;
  return zeus::PowerDomainName(pm->monitor->domains()[i]);
}

int32_t zeus_power_monitor_has_counter(const zeus_power_monitor* pm, int32_t position) {
  if (position < 0 || position >= zeus_power_monitor_num_gpus(pm)) return 0;
  return pm->monitor->HasCounter(position) ? 1 : 0;
}

int32_t zeus_power_monitor_domain_energy(const zeus_power_monitor* pm, int32_t position,
                                         const char* domain, double start_s, double end_s,
                                         double* energy_j, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(PowerPosition("zeus_power_monitor_domain_energy", pm, position));
        if (energy_j == nullptr) {
          return zeus::InvalidArgumentError("zeus_power_monitor_domain_energy: energy_j is NULL");
        }
        const auto start = zeus::FromSeconds(start_s);
        const auto end = zeus::FromSeconds(end_s);
        if (domain == nullptr) {
          ZEUS_ASSIGN_OR_RETURN(*energy_j, pm->monitor->CounterEnergyJ(position, start, end));
          return Status::Ok();
        }
        ZEUS_ASSIGN_OR_RETURN(zeus::PowerDomain d, zeus::ParsePowerDomain(domain));
        ZEUS_ASSIGN_OR_RETURN(*energy_j, pm->monitor->EnergyJ(position, d, start, end));
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_power_monitor_domain_timeline(const zeus_power_monitor* pm, int32_t position,
                                           const char* domain, double start_s, double end_s,
                                           double* times_s, double* powers_w, size_t capacity,
                                           size_t* count, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(PowerPosition("zeus_power_monitor_domain_timeline", pm, position));
        zeus::PowerDomain d = pm->monitor->domains().front();
        if (domain != nullptr) {
          ZEUS_ASSIGN_OR_RETURN(d, zeus::ParsePowerDomain(domain));
        }
        ZEUS_ASSIGN_OR_RETURN(std::vector<zeus::PowerSample> samples,
                              pm->monitor->Timeline(position, d, zeus::FromSeconds(start_s),
                                                    zeus::FromSeconds(end_s)));
        if (count != nullptr) *count = samples.size();
        if (times_s == nullptr || powers_w == nullptr || capacity < samples.size()) {
          return zeus::InvalidArgumentError("zeus_power_monitor_domain_timeline: room for " +
                                            std::to_string(capacity) + " points, need " +
                                            std::to_string(samples.size()));
        }
        for (size_t i = 0; i < samples.size(); ++i) {
          times_s[i] = zeus::ToSeconds(samples[i].time);
          powers_w[i] = zeus::MwToW(samples[i].power_mw);
        }
        return Status::Ok();
      },
      message, message_size);
}

void zeus_power_monitor_destroy(zeus_power_monitor* pm) {
  try {
    delete pm;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying a power monitor");
  }
}

int32_t zeus_gpu_reader_create(const char* options_json, zeus_gpu_reader** out, char* message,
                               size_t message_size) {
  return Guard([&] { return CreateGpuReader(options_json, out); }, message, message_size);
}

int32_t zeus_gpu_reader_num_gpus(const zeus_gpu_reader* reader) {
  return reader == nullptr ? 0 : static_cast<int32_t>(reader->gpus.picked.size());
}

int32_t zeus_gpu_reader_gpu_index(const zeus_gpu_reader* reader, int32_t position) {
  if (position < 0 || position >= zeus_gpu_reader_num_gpus(reader)) return -1;
  return reader->gpus.picked[position]->index();
}

int32_t zeus_gpu_reader_temperature_c(const zeus_gpu_reader* reader, int32_t position,
                                      int32_t* temperature_c, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_ASSIGN_OR_RETURN(zeus::Gpu * gpu,
                              ReaderGpu("zeus_gpu_reader_temperature_c", reader, position));
        if (temperature_c == nullptr) {
          return zeus::InvalidArgumentError("zeus_gpu_reader_temperature_c: out is NULL");
        }
        ZEUS_ASSIGN_OR_RETURN(*temperature_c, gpu->TemperatureC());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpu_reader_power_mw(const zeus_gpu_reader* reader, int32_t position,
                                 const char* domain, uint32_t* power_mw, char* message,
                                 size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_ASSIGN_OR_RETURN(zeus::Gpu * gpu,
                              ReaderGpu("zeus_gpu_reader_power_mw", reader, position));
        if (power_mw == nullptr || domain == nullptr) {
          return zeus::InvalidArgumentError("zeus_gpu_reader_power_mw: NULL argument");
        }
        ZEUS_ASSIGN_OR_RETURN(zeus::PowerDomain d, zeus::ParsePowerDomain(domain));
        ZEUS_ASSIGN_OR_RETURN(*power_mw, gpu->DomainPowerMw(d));
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpu_reader_name(const zeus_gpu_reader* reader, int32_t position, char* buffer,
                             size_t buffer_size, size_t* length, char* message,
                             size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_ASSIGN_OR_RETURN(zeus::Gpu * gpu, ReaderGpu("zeus_gpu_reader_name", reader, position));
        ZEUS_ASSIGN_OR_RETURN(std::string name, gpu->Name());
        return zeus::c_api::CopyOut("zeus_gpu_reader_name", name, buffer, buffer_size, length);
      },
      message, message_size);
}

void zeus_gpu_reader_destroy(zeus_gpu_reader* reader) {
  try {
    delete reader;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying a GPU reader");
  }
}

}  // extern "C"
