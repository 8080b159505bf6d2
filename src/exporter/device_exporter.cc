#include "zeus/exporter/device_exporter.h"

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/text_serializer.h>

#include "zeus/http/transport.h"
#include "zeus/util/strings.h"

#include "src/exporter/device_collector.h"
#include "src/exporter/scrape_endpoint.h"

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

namespace {

constexpr char kTextFormat[] = "text/plain; charset=utf-8";

HttpResponse Refusal(const DeviceExporterOptions& options, HttpRefusal refusal,
                     const std::string& detail) {
  switch (refusal) {
    case HttpRefusal::kTimeout:
      return HttpResponse(408,
                          "request not received within " +
                              std::to_string(options.request_timeout.count()) + " ms\n",
                          kTextFormat);
    case HttpRefusal::kBodyTooLarge:
      return HttpResponse(413, "request body too large\n", kTextFormat);
    case HttpRefusal::kHeadTooLarge:
      return HttpResponse(431, "request header fields too large\n", kTextFormat);
    case HttpRefusal::kTooManyConnections:
      return HttpResponse(
          503, "too many open connections (" + std::to_string(options.max_connections) + ")\n",
          kTextFormat);
    case HttpRefusal::kMalformed:
      break;
  }
  return HttpResponse(400, "bad request: " + detail + "\n", kTextFormat);
}

}  // namespace

struct DeviceExporter::Server {
  explicit Server(const prometheus::Collectable* devices) : endpoint(devices) {}
  exporter_internal::ScrapeEndpoint endpoint;
  // Declared last: stopped (its callbacks done) before the endpoint goes.
  std::unique_ptr<HttpTransport> transport;
};

DeviceExporter::DeviceExporter(std::unique_ptr<Server> server, std::string host, int port)
    : server_(std::move(server)), host_(std::move(host)), port_(port) {}

DeviceExporter::~DeviceExporter() {
  if (server_->transport) server_->transport->Stop();
}

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
  if (options.request_timeout.count() <= 0) {
    return InvalidArgumentError("exporter request timeout: expected > 0 ms, got " +
                                std::to_string(options.request_timeout.count()));
  }
  if (options.max_connections < 1) {
    return InvalidArgumentError("exporter connections: expected >= 1, got " +
                                std::to_string(options.max_connections));
  }
  HttpTransportOptions t;
  t.name = "zeus exporter";
  // The transport resolves the host without brackets; the URL keeps them.
  t.tcp_host = host.size() > 2 && host.front() == '[' && host.back() == ']'
                   ? host.substr(1, host.size() - 2)
                   : host;
  t.tcp_port = static_cast<int>(*port);
  // A scrape has no body.
  t.max_body_bytes = 16 * 1024;
  // One deadline from waiting for a request to its last byte.
  t.idle_timeout = options.request_timeout;
  t.read_timeout = options.request_timeout;
  t.read_deadline_includes_idle = true;
  t.answer_read_timeout = true;
  t.write_timeout = options.request_timeout;
  t.max_connections = options.max_connections;
  t.io_threads = 1;
  t.worker_threads = options.num_threads;
  t.stop_grace = options.request_timeout;
  auto server = std::make_unique<Server>(metrics->collector_.get());
  exporter_internal::ScrapeEndpoint* endpoint = &server->endpoint;
  server->transport = std::make_unique<HttpTransport>(
      t, [endpoint](const HttpRequest& request) { return endpoint->Answer(request); },
      [options](const HttpRequest&, HttpRefusal refusal, const std::string& detail) {
        return Refusal(options, refusal, detail);
      });
  Status started = server->transport->Start();
  if (!started.ok()) {
    return UnavailableError("cannot listen on " + address + ": " + started.message());
  }
  const int bound_port = server->transport->tcp_port();
  return std::unique_ptr<DeviceExporter>(new DeviceExporter(std::move(server), host, bound_port));
}

std::string DeviceExporter::MetricsUrl() const {
  return "http://" + host_ + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace zeus
