#include "src/exporter/dcgm_names.h"

#include <unistd.h>

#include <cctype>
#include <utility>

namespace zeus::exporter_internal {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily DcgmFamily(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddSeries(MetricFamily& family, const Labels& labels, std::optional<double> value) {
  if (!value) return;
  ClientMetric metric;
  metric.label = labels;
  if (family.type == MetricType::Counter) {
    metric.counter.value = *value;
  } else {
    metric.gauge.value = *value;
  }
  family.metric.push_back(std::move(metric));
}

std::string ThisHostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// "0000:3b:00.0" (Gpu::PciBusId) -> "00000000:3B:00.0" (NVML, DCGM).
std::string NvmlPciBusId(const std::string& address) {
  std::string upper = address;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const size_t colon = upper.find(':');
  if (colon != std::string::npos && colon < 8) upper.insert(0, 8 - colon, '0');
  return upper;
}

}  // namespace

Labels DcgmLabels(Gpu* gpu, const std::string& hostname) {
  Labels labels{{"gpu", std::to_string(gpu->index())}};
  if (StatusOr<std::string> uuid = gpu->Uuid(); uuid.ok()) labels.push_back({"UUID", *uuid});
  if (StatusOr<std::string> pci = gpu->PciBusId(); pci.ok()) {
    labels.push_back({"pci_bus_id", NvmlPciBusId(*pci)});
  }
  labels.push_back({"device", "nvidia" + std::to_string(gpu->index())});
  if (StatusOr<std::string> name = gpu->Name(); name.ok()) labels.push_back({"modelName", *name});
  const std::string host = hostname.empty() ? ThisHostname() : hostname;
  if (!host.empty()) labels.push_back({"Hostname", host});
  return labels;
}

DcgmFamilies::DcgmFamilies()
    : power_(DcgmFamily("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", MetricType::Gauge)),
      energy_(DcgmFamily("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                         "Total energy consumption since boot (in mJ).", MetricType::Counter)),
      temperature_(
          DcgmFamily("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::Gauge)),
      limit_(DcgmFamily("DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).",
                        MetricType::Gauge)),
      enforced_limit_(DcgmFamily("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "Enforced power limit (in W).",
                                 MetricType::Gauge)) {}

void DcgmFamilies::Add(const Labels& labels, std::optional<double> power_w,
                       std::optional<double> energy_j, std::optional<double> temperature_c,
                       std::optional<double> limit_w, std::optional<double> enforced_limit_w) {
  AddSeries(power_, labels, power_w);
  AddSeries(energy_, labels, energy_j ? std::optional<double>(*energy_j * 1000.0) : std::nullopt);
  AddSeries(temperature_, labels, temperature_c);
  AddSeries(limit_, labels, limit_w);
  AddSeries(enforced_limit_, labels, enforced_limit_w);
}

std::vector<MetricFamily> DcgmFamilies::Take() {
  std::vector<MetricFamily> families;
  for (MetricFamily* family : {&power_, &energy_, &temperature_, &limit_, &enforced_limit_}) {
    if (!family->metric.empty()) families.push_back(std::move(*family));
  }
  return families;
}

}  // namespace zeus::exporter_internal
