#include "zeus/exporter/device_exporter.h"

#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include "zeus/util/strings.h"

#include "src/exporter/device_collector.h"

namespace zeus {

DeviceMetrics::DeviceMetrics(std::vector<Gpu*> gpus, std::vector<Cpu*> cpus,
                             const DeviceMetricsOptions& options)
    : collector_(std::make_shared<exporter_internal::DeviceCollector>(std::move(gpus),
                                                                      std::move(cpus), options)) {}

DeviceMetrics::~DeviceMetrics() = default;

std::string DeviceMetrics::ScrapeText() {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, collector_->Collect());
  return out.str();
}

struct DeviceExporter::Server {
  std::unique_ptr<prometheus::Exposer> exposer;
};

DeviceExporter::DeviceExporter(std::unique_ptr<Server> server, std::string host, int port)
    : server_(std::move(server)), host_(std::move(host)), port_(port) {}

DeviceExporter::~DeviceExporter() = default;

StatusOr<std::unique_ptr<DeviceExporter>> DeviceExporter::Start(
    DeviceMetrics* metrics, const DeviceExporterOptions& options) {
  const std::string& address = options.listen_address;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError("listen address '" + address + "': expected HOST:PORT");
  }
  const std::string host = address.substr(0, colon);
  StatusOr<uint64_t> port = ParseUint64(address.substr(colon + 1));
  if (!port.ok() || *port > 65535) {
    return InvalidArgumentError("listen address '" + address +
                                "': the port must be a whole number in [0, 65535]");
  }
  if (options.num_threads < 1) {
    return InvalidArgumentError("exporter threads: expected >= 1, got " +
                                std::to_string(options.num_threads));
  }
  auto server = std::make_unique<Server>();
  try {
    // civetweb closes every connection after its first answer unless
    // keep-alive is on, dropping the requests a client pipelined behind it
    // (1 of 100 answered). With it, pipelined requests are answered in
    // order; an idle connection is closed after 500 ms so that it cannot
    // hold one of the few threads, and a request must arrive within 10 s.
    std::vector<std::string> civetweb_options = {
        "listening_ports",    address, "num_threads",           std::to_string(options.num_threads),
        "enable_keep_alive",  "yes",   "keep_alive_timeout_ms", "500",
        "request_timeout_ms", "10000",
    };
    server->exposer = std::make_unique<prometheus::Exposer>(std::move(civetweb_options));
  } catch (const std::exception& e) {
    return UnavailableError("cannot listen on " + address + ": " + e.what());
  }
  const std::vector<int> ports = server->exposer->GetListeningPorts();
  if (ports.empty()) return UnavailableError("cannot listen on " + address + ": no port bound");
  server->exposer->RegisterCollectable(metrics->collector_);
  return std::unique_ptr<DeviceExporter>(new DeviceExporter(std::move(server), host, ports[0]));
}

std::string DeviceExporter::MetricsUrl() const {
  return "http://" + host_ + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace zeus
