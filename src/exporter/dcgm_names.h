// The DCGM exporter's names, units and labels for the GPU metrics Zeus and
// it both have (DeviceMetricsOptions::dcgm_compatible): one place that knows
// how DCGM spells them.

#ifndef ZEUS_SRC_EXPORTER_DCGM_NAMES_H_
#define ZEUS_SRC_EXPORTER_DCGM_NAMES_H_

#include <optional>
#include <string>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/family.h>
#include <prometheus/metric_family.h>

#include "zeus/device/gpu.h"

namespace zeus::exporter_internal {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// gpu, UUID, pci_bus_id ("00000000:3B:00.0", NVML's spelling), device
// ("nvidia<index>"), modelName, Hostname: DCGM's labels of `gpu`, each left
// out when it cannot be read. `hostname` empty: this machine's name.
Labels DcgmLabels(Gpu* gpu, const std::string& hostname);

// One scrape's DCGM-named families.
class DcgmFamilies {
 public:
  DcgmFamilies();
  // Adds one GPU's readings (nullopt: not read, the series is left out).
  void Add(const Labels& labels, std::optional<double> power_w, std::optional<double> energy_j,
           std::optional<double> temperature_c, std::optional<double> limit_w,
           std::optional<double> enforced_limit_w);
  // The families with at least one series.
  std::vector<prometheus::MetricFamily> Take();

 private:
  prometheus::MetricFamily power_, energy_, temperature_, limit_, enforced_limit_;
};

}  // namespace zeus::exporter_internal

#endif  // ZEUS_SRC_EXPORTER_DCGM_NAMES_H_
