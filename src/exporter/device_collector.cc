#include "src/exporter/device_collector.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_type.h>
#include <spdlog/spdlog.h>

#include "zeus/util/units.h"

#include "src/exporter/dcgm_names.h"

namespace zeus::exporter_internal {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// The metrics a GPU and a CPU socket are read for, as the `metric` label of
// the error counters names them.
constexpr const char* kGpuMetrics[] = {"energy", "power", "power_limit"};
// Read only for the DCGM-compatible names.
constexpr const char* kDcgmOnlyGpuMetrics[] = {"temperature", "enforced_power_limit"};
constexpr const char* kCpuMetrics[] = {"package_energy", "dram_energy"};

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void Add(MetricFamily& family, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

std::vector<ClientMetric::Label> With(std::vector<ClientMetric::Label> labels, std::string name,
                                      std::string value) {
  labels.push_back({std::move(name), std::move(value)});
  return labels;
}

}  // namespace

DeviceCollector::DeviceCollector(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                                 const DeviceMetricsOptions& options)
    : gpus_(std::move(gpus)), cpus_(std::move(cpus)) {
  if (options.dcgm_compatible) {
    for (Gpu* gpu : gpus_) dcgm_labels_.push_back(DcgmLabels(gpu, options.hostname));
  }
  for (Gpu* gpu : gpus_) {
    Device device{"gpu " + std::to_string(gpu->index()), {{"gpu", std::to_string(gpu->index())}}};
    if (StatusOr<std::string> uuid = gpu->Uuid(); uuid.ok()) {
      device.labels.push_back({"uuid", *uuid});
    }
    if (StatusOr<std::string> name = gpu->Name(); name.ok()) {
      device.labels.push_back({"name", *name});
    }
    gpu_devices_.push_back(std::move(device));
  }
  for (Cpu* cpu : cpus_) {
    const std::string socket = std::to_string(cpu->index());
    cpu_devices_.push_back({"cpu socket " + socket, {{"socket", socket}}});
  }
}

bool DeviceCollector::Record(const Device& device, const std::string& metric,
                             const Status& status) const {
  const ErrorKey key{device.key, metric};
  std::lock_guard<std::mutex> lock(mu_);
  if (status.code() == StatusCode::kNotSupported) {
    if (unsupported_.insert(key).second) {
      spdlog::info("zeus exporter: {} has no {} reading ({}); not exported", device.key, metric,
                   status.message());
    }
    return false;
  }
  if (!status.ok()) {
    ++errors_[key];
    if (failing_.insert(key).second) {
      spdlog::warn("zeus exporter: {}: reading {} failed: {}", device.key, metric,
                   status.message());
    }
    return false;
  }
  if (failing_.erase(key) > 0)
    spdlog::info("zeus exporter: {}: {} reads again", device.key, metric);
  return true;
}

uint64_t DeviceCollector::ErrorCount(const Device& device, const std::string& metric) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = errors_.find({device.key, metric});
  return it == errors_.end() ? 0 : it->second;
}

std::vector<MetricFamily> DeviceCollector::Collect() const {
  MetricFamily gpu_energy = Family("zeus_gpu_energy_joules_total",
                                   "GPU energy since the driver loaded, in J", MetricType::Counter);
  MetricFamily gpu_power =
      Family("zeus_gpu_power_watts", "GPU instant board power, in W", MetricType::Gauge);
  MetricFamily gpu_limit =
      Family("zeus_gpu_power_limit_watts", "GPU power management limit, in W", MetricType::Gauge);
  MetricFamily gpu_up =
      Family("zeus_gpu_up", "1 when every read of the GPU in this scrape succeeded, else 0",
             MetricType::Gauge);
  MetricFamily gpu_errors =
      Family("zeus_gpu_read_errors_total", "Failed GPU reads since the exporter started, by metric",
             MetricType::Counter);
  DcgmFamilies dcgm;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    Gpu* gpu = gpus_[i];
    const Device& device = gpu_devices_[i];
    bool up = true;
    std::optional<double> energy_j, power_w, limit_w;
    StatusOr<uint64_t> energy_mj = gpu->TotalEnergyMj();
    if (Record(device, "energy", energy_mj.status())) {
      energy_j = MjToJ(static_cast<double>(*energy_mj));
      Add(gpu_energy, device.labels, *energy_j);
    } else {
      up = up && energy_mj.status().code() == StatusCode::kNotSupported;
    }
    StatusOr<uint32_t> power_mw = gpu->PowerMw();
    if (Record(device, "power", power_mw.status())) {
      power_w = MwToW(*power_mw);
      Add(gpu_power, device.labels, *power_w);
    } else {
      up = false;
    }
    StatusOr<uint32_t> limit_mw = gpu->PowerLimitMw();
    if (Record(device, "power_limit", limit_mw.status())) {
      limit_w = MwToW(*limit_mw);
      Add(gpu_limit, device.labels, *limit_w);
    } else {
      up = false;
    }
    if (!dcgm_labels_.empty()) {
      // Read only for the DCGM names; an unsupported reading leaves its
      // series out, like a GPU without energy counter.
      std::optional<double> temperature_c, enforced_w;
      StatusOr<int32_t> temperature = gpu->TemperatureC();
      if (Record(device, "temperature", temperature.status())) {
        temperature_c = *temperature;
      } else {
        up = up && temperature.status().code() == StatusCode::kNotSupported;
      }
      StatusOr<uint32_t> enforced_mw = gpu->EnforcedPowerLimitMw();
      if (Record(device, "enforced_power_limit", enforced_mw.status())) {
        enforced_w = MwToW(*enforced_mw);
      } else {
        up = up && enforced_mw.status().code() == StatusCode::kNotSupported;
      }
      dcgm.Add(dcgm_labels_[i], power_w, energy_j, temperature_c, limit_w, enforced_w);
    }
    Add(gpu_up, device.labels, up ? 1.0 : 0.0);
    for (const char* metric : kGpuMetrics) {
      Add(gpu_errors, With(device.labels, "metric", metric),
          static_cast<double>(ErrorCount(device, metric)));
    }
    if (!dcgm_labels_.empty()) {
      for (const char* metric : kDcgmOnlyGpuMetrics) {
        Add(gpu_errors, With(device.labels, "metric", metric),
            static_cast<double>(ErrorCount(device, metric)));
      }
    }
  }

  MetricFamily cpu_package = Family("zeus_cpu_package_energy_joules_total",
                                    "CPU package (RAPL) energy, in J", MetricType::Counter);
  MetricFamily cpu_dram = Family("zeus_cpu_dram_energy_joules_total",
                                 "CPU DRAM (RAPL) energy, in J", MetricType::Counter);
  MetricFamily cpu_up =
      Family("zeus_cpu_up", "1 when every read of the socket in this scrape succeeded, else 0",
             MetricType::Gauge);
  MetricFamily cpu_errors =
      Family("zeus_cpu_read_errors_total",
             "Failed CPU socket reads since the exporter started, by metric", MetricType::Counter);
  for (size_t i = 0; i < cpus_.size(); ++i) {
    Cpu* cpu = cpus_[i];
    const Device& device = cpu_devices_[i];
    bool up = true;
    StatusOr<uint64_t> package_uj = cpu->PackageEnergyUj();
    if (Record(device, "package_energy", package_uj.status())) {
      Add(cpu_package, device.labels, UjToJ(static_cast<double>(*package_uj)));
    } else {
      up = false;
    }
    if (cpu->HasDram()) {
      StatusOr<uint64_t> dram_uj = cpu->DramEnergyUj();
      if (Record(device, "dram_energy", dram_uj.status())) {
        Add(cpu_dram, device.labels, UjToJ(static_cast<double>(*dram_uj)));
      } else {
        up = false;
      }
    }
    Add(cpu_up, device.labels, up ? 1.0 : 0.0);
    for (const char* metric : kCpuMetrics) {
      if (std::string(metric) == "dram_energy" && !cpu->HasDram()) continue;
      Add(cpu_errors, With(device.labels, "metric", metric),
          static_cast<double>(ErrorCount(device, metric)));
    }
  }

  std::vector<MetricFamily> families;
  for (MetricFamily* family : {&gpu_energy, &gpu_power, &gpu_limit, &gpu_up, &gpu_errors,
                               &cpu_package, &cpu_dram, &cpu_up, &cpu_errors}) {
    if (!family->metric.empty()) families.push_back(std::move(*family));
  }
  for (MetricFamily& family : dcgm.Take()) families.push_back(std::move(family));
  return families;
}

}  // namespace zeus::exporter_internal
