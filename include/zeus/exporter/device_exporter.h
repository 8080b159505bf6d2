// Prometheus metrics of this machine's GPUs and CPU sockets, in the manner of
// NVIDIA's DCGM exporter: every scrape reads each device once (nothing is
// sampled between scrapes) and reports
//   zeus_gpu_energy_joules_total{gpu,uuid,name}    counter (NVML: J since the
//                                                  driver loaded; absent on a
//                                                  GPU without energy counter)
//   zeus_gpu_power_watts{gpu,uuid,name}            gauge, instant board power
//   zeus_gpu_power_limit_watts{gpu,uuid,name}      gauge, management limit
//   zeus_gpu_up{gpu,uuid,name}                     1 when every read of this
//                                                  scrape succeeded, else 0
//   zeus_gpu_read_errors_total{gpu,uuid,name,metric}  failed reads since start
//   zeus_cpu_package_energy_joules_total{socket}   counter (RAPL package)
//   zeus_cpu_dram_energy_joules_total{socket}      counter (RAPL DRAM, where
//                                                  the socket has a DRAM zone)
//   zeus_cpu_up{socket}, zeus_cpu_read_errors_total{socket,metric}
// With DeviceMetricsOptions::dcgm_compatible, each GPU is also reported under
// the names, units and labels of NVIDIA's DCGM exporter, so dashboards and
// alerts written for it show these GPUs (labels gpu, UUID, pci_bus_id as
// "00000000:3B:00.0", device "nvidia<gpu>", modelName, Hostname):
//   DCGM_FI_DEV_POWER_USAGE                 gauge, W
//   DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION    counter, mJ
//   DCGM_FI_DEV_GPU_TEMP                    gauge, C (where the GPU reports it)
//   DCGM_FI_DEV_POWER_MGMT_LIMIT            gauge, W
//   DCGM_FI_DEV_ENFORCED_POWER_LIMIT        gauge, W
// A device whose read fails is reported (up 0, its error counter moves, the
// failed series are left out of that scrape) and the exporter goes on. It
// only reads: no device setting is ever changed. The text is produced by
// prometheus-cpp's serializer (exposition format 0.0.4).
//
// Thread-safety: DeviceMetrics::ScrapeText and concurrent scrapes of a
// DeviceExporter may run on several threads at once (Gpu and Cpu are
// thread-safe; the error counts are locked).

#ifndef ZEUS_EXPORTER_DEVICE_EXPORTER_H_
#define ZEUS_EXPORTER_DEVICE_EXPORTER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

namespace exporter_internal {
class DeviceCollector;
}  // namespace exporter_internal

struct DeviceMetricsOptions {
  // Also report the GPUs as the DCGM exporter names them (see above).
  // Default: false.
  bool dcgm_compatible = false;
  // The DCGM series' Hostname label. Default: empty, this machine's name.
  std::string hostname;
};

// The metrics of a fixed set of devices, without HTTP.
class DeviceMetrics {
 public:
  // Reads each GPU's name and UUID (and, DCGM-compatible, PCI address) once,
  // for the labels (a label that cannot be read is left out). The devices
  // must outlive this object.
  DeviceMetrics(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                const DeviceMetricsOptions& options = {});
  ~DeviceMetrics();
  DeviceMetrics(const DeviceMetrics&) = delete;
  DeviceMetrics& operator=(const DeviceMetrics&) = delete;

  // Reads every device once and returns the metrics in the Prometheus text
  // format, as GET /metrics of a DeviceExporter returns them. Never fails:
  // read errors are part of the metrics.
  std::string ScrapeText();

 private:
  friend class DeviceExporter;
  std::shared_ptr<exporter_internal::DeviceCollector> collector_;
};

struct DeviceExporterOptions {
  // "HOST:PORT" to listen on (HTTP; an IPv6 host in brackets); port 0 picks a
  // free port (see DeviceExporter::port()). Default: 127.0.0.1:9401
  // (loopback only; give 0.0.0.0:9401 to be scraped from other machines; the
  // DCGM exporter's port, 9400, is left to it).
  std::string listen_address = "127.0.0.1:9401";
  // Threads answering scrapes (reading the devices); connections are read
  // and written apart from them, so a slow client holds none. Default: 2.
  int num_threads = 2;
  // A connection must deliver a whole request (head and body) within this
  // of opening, or of its previous answer: one that never starts is closed,
  // one that started is answered 408 and closed, however it dribbles. An
  // answer must be read within it too. > 0. Default: 10 s.
  std::chrono::milliseconds request_timeout{10'000};
  // Open connections beyond this are answered 503 and closed without
  // reading a request. >= 1. Default: 256.
  int max_connections = 256;
};

// Serves a DeviceMetrics at GET /metrics until destroyed, on the project's
// HTTP transport (zeus/http/transport.h), with its own scrape statistics
// first (src/exporter/scrape_endpoint.h: prometheus-cpp's exposer_* series).
class DeviceExporter {
 public:
  // Starts serving. kInvalidArgument naming the address when it is not
  // HOST:PORT with PORT in [0, 65535], or naming the option when
  // num_threads, request_timeout or max_connections is out of range;
  // kUnavailable naming the address when it cannot be listened on (in use,
  // no such interface). `metrics` must outlive the exporter.
  static StatusOr<std::unique_ptr<DeviceExporter>> Start(DeviceMetrics* metrics,
                                                         const DeviceExporterOptions& options);
  // Stops serving; waits for scrapes in progress.
  ~DeviceExporter();
  DeviceExporter(const DeviceExporter&) = delete;
  DeviceExporter& operator=(const DeviceExporter&) = delete;

  // The port listened on (the chosen one when the options asked for 0).
  int port() const { return port_; }
  // "http://HOST:PORT/metrics".
  std::string MetricsUrl() const;

 private:
  struct Server;
  DeviceExporter(std::unique_ptr<Server> server, std::string host, int port);

  std::unique_ptr<Server> server_;
  std::string host_;
  int port_;
};

}  // namespace zeus

#endif  // ZEUS_EXPORTER_DEVICE_EXPORTER_H_
