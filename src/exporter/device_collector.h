// The prometheus-cpp Collectable behind DeviceMetrics: reads the devices at
// every Collect() (see include/zeus/exporter/device_exporter.h for the
// metrics). Thread-safety: Collect() may run on several threads at once.

#ifndef ZEUS_SRC_EXPORTER_DEVICE_COLLECTOR_H_
#define ZEUS_SRC_EXPORTER_DEVICE_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/exporter/device_exporter.h"
#include "zeus/status.h"

namespace zeus::exporter_internal {

class DeviceCollector final : public prometheus::Collectable {
 public:
  // Reads each GPU's name and UUID once. The devices must outlive this.
  DeviceCollector(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                  const DeviceMetricsOptions& options = {});

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  using Labels = std::vector<prometheus::ClientMetric::Label>;
  struct Device {
    // "gpu 0", "cpu socket 1": names the device in logs and error counts.
    std::string key;
    Labels labels;
  };
  // (Device::key, metric) -> failed reads so far.
  using ErrorKey = std::pair<std::string, std::string>;

  // Counts a failed read of `metric` on `device` and logs when the read
  // starts or stops failing; kNotSupported is not a failure (logged once).
  // Returns status.ok().
  bool Record(const Device& device, const std::string& metric, const Status& status) const;
  uint64_t ErrorCount(const Device& device, const std::string& metric) const;

  std::vector<Gpu*> gpus_;
  std::vector<Cpu*> cpus_;
  std::vector<Device> gpu_devices_;
  // DCGM-compatible: each GPU's DCGM labels; empty otherwise.
  std::vector<Labels> dcgm_labels_;
  std::vector<Device> cpu_devices_;
  mutable std::mutex mu_;
  mutable std::map<ErrorKey, uint64_t> errors_;  // Guarded by mu_.
  mutable std::set<ErrorKey> failing_;           // Guarded by mu_.
  mutable std::set<ErrorKey> unsupported_;       // Guarded by mu_.
};

}  // namespace zeus::exporter_internal

#endif  // ZEUS_SRC_EXPORTER_DEVICE_COLLECTOR_H_
