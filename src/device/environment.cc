#include "zeus/device/environment.h"

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/util/env.h"
#include "zeus/util/units.h"

#include "src/device/rapl/rapl.h"

namespace zeus {
namespace {

GpuDescription DescribeGpu(Gpu& gpu) {
  GpuDescription d;
  d.index = gpu.index();
  d.name = gpu.Name();
  d.architecture = gpu.Architecture();
  d.uuid = gpu.Uuid();
  d.constraints_mw = gpu.PowerLimitConstraintsMw();
  d.default_power_limit_mw = gpu.DefaultPowerLimitMw();
  d.power_limit_mw = gpu.PowerLimitMw();
  d.enforced_power_limit_mw = gpu.EnforcedPowerLimitMw();
  d.persistence_mode = gpu.PersistenceMode();
  d.graphics_clocks_mhz = gpu.SupportedGraphicsClocksMhz();
  d.workload_power_profiles = gpu.WorkloadPowerProfiles();
  d.energy_counter = gpu.TotalEnergyMj().status();
  return d;
}

void DescribeCpus(EnvironmentDescription& env) {
  rapl::SysfsReader* reader = rapl::RealSysfsReader();
  StatusOr<std::vector<rapl::RaplPackage>> packages =
      rapl::FindRaplPackages(env.powercap_root, reader);
  if (!packages.ok()) {
    env.cpus_status = packages.status();
    return;
  }
  auto add_zone = [&](int socket, const char* kind, const rapl::RaplZone& zone) {
    CpuZoneDescription d{socket, kind, zone.path, Status::Ok()};
    StatusOr<std::string> text = reader->Read(zone.EnergyPath());
    if (!text.ok()) {
      d.readable = text.status().code() == StatusCode::kPermissionDenied
                       ? rapl::RaplPermissionError(zone.EnergyPath())
                       : text.status();
    } else {
      d.readable = rapl::ParseCounter(zone.EnergyPath(), *text).status();
    }
    env.cpu_zones.push_back(std::move(d));
  };
  for (const rapl::RaplPackage& package : *packages) {
    add_zone(package.socket, "package", package.package);
    if (package.dram) add_zone(package.socket, "dram", *package.dram);
  }
}

std::string Watts(const StatusOr<uint32_t>& mw) {
  return mw.ok() ? fmt::format("{:.1f} W", MwToW(*mw)) : "unknown";
}

template <typename T>
std::string Or(const StatusOr<T>& value, const std::string& fallback) {
  return value.ok() ? fmt::format("{}", *value) : fallback;
}

nlohmann::json WattsJson(const StatusOr<uint32_t>& mw) {
  return mw.ok() ? nlohmann::json(MwToW(*mw)) : nlohmann::json(nullptr);
}

nlohmann::json StatusJson(const Status& status) {
  return status.ok() ? nlohmann::json(nullptr) : nlohmann::json(status.ToString());
}

}  // namespace

bool EnvironmentDescription::AnyGpuBackendLoaded() const {
  for (const GpuBackendDescription& backend : gpu_backends) {
    if (backend.loaded) return true;
  }
  return false;
}

EnvironmentDescription DescribeEnvironment(const EnvironmentOptions& options) {
  EnvironmentDescription env;
  env.dry_run = IsDryRun();
  env.gpu_backends = DescribeGpuBackends(options.gpus);
  StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus(options.gpus);
  if (gpus.ok()) {
    for (const std::unique_ptr<Gpu>& gpu : *gpus) env.gpus.push_back(DescribeGpu(*gpu));
  } else {
    env.gpus_status = gpus.status();
  }
  // The tree OpenCpus reads: the container mount when the default root has
  // no RAPL package zone.
  env.powercap_root = options.powercap_root == kDefaultPowercapRoot
                          ? rapl::ChoosePowercapRoot(options.powercap_root, kContainerPowercapRoot,
                                                     rapl::RealSysfsReader())
                          : options.powercap_root;
  DescribeCpus(env);
  return env;
}

void WriteEnvironmentText(const EnvironmentDescription& env, std::ostream& out) {
  out << "Dry run (ZEUS_DRY_RUN): " << (env.dry_run ? "on (setters only log)" : "off") << "\n";
  for (const GpuBackendDescription& backend : env.gpu_backends) {
    out << backend.display_name << ": ";
    if (backend.loaded && !backend.versions.empty()) {
      for (size_t i = 0; i < backend.versions.size(); ++i) {
        out << (i == 0 ? "" : ", ") << backend.versions[i].first << " "
            << backend.versions[i].second;
      }
    } else if (backend.loaded) {
      out << "loaded, versions unknown (" << backend.status.message() << ")";
    }
    if (backend.loaded) {
      out << (backend.selection.empty() ? "" : " [" + backend.selection + "]") << "\n";
    } else {
      out << "unavailable (" << backend.status.message() << ")\n";
    }
  }

  if (!env.gpus_status.ok() && !env.AnyGpuBackendLoaded()) {
    out << "GPUs: none (no GPU library available)\n";
  } else if (!env.gpus_status.ok()) {
    out << "GPUs: none (" << env.gpus_status.ToString() << ")\n";
  } else if (env.gpus.empty()) {
    out << "GPUs: none visible (check CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES)\n";
  } else {
    out << "GPUs: " << env.gpus.size() << "\n";
  }
  for (const GpuDescription& gpu : env.gpus) {
    out << "  GPU " << gpu.index << ": " << Or(gpu.name, "unknown name") << " ("
        << Or(gpu.architecture, "unknown architecture") << ")\n";
    out << "    uuid: " << Or(gpu.uuid, "unknown") << "\n";
    out << "    power limit: min "
        << (gpu.constraints_mw.ok() ? Watts(gpu.constraints_mw->min_mw) : "unknown") << ", max "
        << (gpu.constraints_mw.ok() ? Watts(gpu.constraints_mw->max_mw) : "unknown") << ", default "
        << Watts(gpu.default_power_limit_mw) << ", current " << Watts(gpu.power_limit_mw)
        << ", enforced " << Watts(gpu.enforced_power_limit_mw) << "\n";
    out << "    energy counter: ";
    if (gpu.energy_counter.ok()) {
      out << "supported\n";
    } else if (gpu.energy_counter.code() == StatusCode::kNotSupported) {
      out << "not supported (Zeus integrates power instead)\n";
    } else {
      out << "read failed (" << gpu.energy_counter.ToString() << ")\n";
    }
    out << "    persistence mode: "
        << (gpu.persistence_mode.ok() ? (*gpu.persistence_mode ? "on" : "off") : "unknown") << "\n";
    if (gpu.graphics_clocks_mhz.ok() && !gpu.graphics_clocks_mhz->empty()) {
      out << "    graphics clocks: " << gpu.graphics_clocks_mhz->size() << " supported, "
          << gpu.graphics_clocks_mhz->back() << "-" << gpu.graphics_clocks_mhz->front() << " MHz\n";
    } else {
      out << "    graphics clocks: not listed (the frequency optimizer cannot run)\n";
    }
    // Only where the driver offers them; nothing sets them.
    if (gpu.workload_power_profiles.ok() && !gpu.workload_power_profiles->empty()) {
      out << "    workload power profiles: ";
      for (size_t i = 0; i < gpu.workload_power_profiles->size(); ++i) {
        out << (i == 0 ? "" : ", ") << (*gpu.workload_power_profiles)[i].name;
      }
      out << "\n";
    }
    for (const Status* status :
         {&gpu.name.status(), &gpu.architecture.status(), &gpu.uuid.status(),
          &gpu.constraints_mw.status(), &gpu.default_power_limit_mw.status(),
          &gpu.power_limit_mw.status(), &gpu.enforced_power_limit_mw.status(),
          &gpu.persistence_mode.status()}) {
      if (!status->ok()) out << "    note: " << status->ToString() << "\n";
    }
  }

  if (!env.cpus_status.ok()) {
    out << "CPU RAPL zones: unavailable (" << env.cpus_status.ToString() << ")\n";
  } else if (env.cpu_zones.empty()) {
    out << "CPU RAPL zones: none under " << env.powercap_root << "\n";
  } else {
    out << "CPU RAPL zones (" << env.powercap_root << "):\n";
  }
  for (const CpuZoneDescription& zone : env.cpu_zones) {
    out << "  CPU " << zone.socket << " " << zone.kind << ": "
        << (zone.readable.ok() ? "readable" : "not readable") << " (" << zone.path << ")\n";
    if (!zone.readable.ok()) out << "    " << zone.readable.ToString() << "\n";
  }

  if (env.NothingToMeasure()) {
    out << "Nothing to measure on this machine: no usable GPU and no CPU RAPL zone. "
           "Zeus's simulator and fakes still work.\n";
  }
}

std::string EnvironmentToJson(const EnvironmentDescription& env) {
  nlohmann::json j;
  j["dry_run"] = env.dry_run;
  nlohmann::json backends = nlohmann::json::array();
  for (const GpuBackendDescription& backend : env.gpu_backends) {
    nlohmann::json versions = nlohmann::json::object();
    for (const auto& [component, version] : backend.versions) versions[component] = version;
    backends.push_back({{"name", backend.name},
                        {"available", backend.loaded},
                        {"versions", versions},
                        {"error", StatusJson(backend.status)},
                        {"in_use", backend.in_use},
                        {"selection", backend.selection}});
  }
  j["gpu_backends"] = backends;

  j["gpus_error"] = StatusJson(env.gpus_status);
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuDescription& gpu : env.gpus) {
    nlohmann::json g;
    nlohmann::json errors = nlohmann::json::object();
    auto note = [&errors](const char* field, const Status& status) {
      if (!status.ok()) errors[field] = status.ToString();
    };
    g["index"] = gpu.index;
    g["name"] = gpu.name.ok() ? nlohmann::json(*gpu.name) : nullptr;
    note("name", gpu.name.status());
    g["architecture"] = gpu.architecture.ok() ? nlohmann::json(*gpu.architecture) : nullptr;
    note("architecture", gpu.architecture.status());
    g["uuid"] = gpu.uuid.ok() ? nlohmann::json(*gpu.uuid) : nullptr;
    note("uuid", gpu.uuid.status());
    nlohmann::json limits;
    limits["min"] = gpu.constraints_mw.ok() ? WattsJson(gpu.constraints_mw->min_mw) : nullptr;
    limits["max"] = gpu.constraints_mw.ok() ? WattsJson(gpu.constraints_mw->max_mw) : nullptr;
    note("power_limit_constraints", gpu.constraints_mw.status());
    limits["default"] = WattsJson(gpu.default_power_limit_mw);
    note("power_limit_default", gpu.default_power_limit_mw.status());
    limits["current"] = WattsJson(gpu.power_limit_mw);
    note("power_limit_current", gpu.power_limit_mw.status());
    limits["enforced"] = WattsJson(gpu.enforced_power_limit_mw);
    note("power_limit_enforced", gpu.enforced_power_limit_mw.status());
    g["power_limit_w"] = limits;
    if (gpu.energy_counter.ok()) {
      g["energy_counter_supported"] = true;
    } else if (gpu.energy_counter.code() == StatusCode::kNotSupported) {
      g["energy_counter_supported"] = false;
    } else {
      g["energy_counter_supported"] = nullptr;
    }
    note("energy_counter", gpu.energy_counter);
    g["persistence_mode"] =
        gpu.persistence_mode.ok() ? nlohmann::json(*gpu.persistence_mode) : nullptr;
    note("persistence_mode", gpu.persistence_mode.status());
    g["graphics_clocks_mhz"] =
        gpu.graphics_clocks_mhz.ok() ? nlohmann::json(*gpu.graphics_clocks_mhz) : nullptr;
    note("graphics_clocks", gpu.graphics_clocks_mhz.status());
    if (gpu.workload_power_profiles.ok()) {
      nlohmann::json profiles = nlohmann::json::array();
      for (const WorkloadPowerProfile& p : *gpu.workload_power_profiles) {
        profiles.push_back({{"id", p.id}, {"name", p.name}, {"priority", p.priority}});
      }
      g["workload_power_profiles"] = profiles;
    } else {
      g["workload_power_profiles"] = nullptr;
    }
    g["errors"] = errors;
    gpus.push_back(g);
  }
  j["gpus"] = gpus;

  nlohmann::json cpus;
  cpus["powercap_root"] = env.powercap_root;
  cpus["error"] = StatusJson(env.cpus_status);
  nlohmann::json zones = nlohmann::json::array();
  for (const CpuZoneDescription& zone : env.cpu_zones) {
    zones.push_back({{"socket", zone.socket},
                     {"kind", zone.kind},
                     {"path", zone.path},
                     {"readable", zone.readable.ok()},
                     {"error", StatusJson(zone.readable)}});
  }
  cpus["zones"] = zones;
  j["cpus"] = cpus;
  j["nothing_to_measure"] = env.NothingToMeasure();
  return j.dump(2) + "\n";
}

}  // namespace zeus
