#include "src/exporter/scrape_endpoint.h"

#include <zlib.h>

#include <chrono>
#include <sstream>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "zeus/util/strings.h"

namespace zeus::exporter_internal {
namespace {

constexpr char kMetricsPath[] = "/metrics";
constexpr char kTextFormat[] = "text/plain; charset=utf-8";

}  // namespace

ScrapeEndpoint::ScrapeEndpoint(const prometheus::Collectable* devices) : devices_(devices) {
  transferred_bytes_ = &prometheus::BuildCounter()
                            .Name("exposer_transferred_bytes_total")
                            .Help("Transferred bytes to metrics services")
                            .Register(own_)
                            .Add({});
  scrapes_ = &prometheus::BuildCounter()
                  .Name("exposer_scrapes_total")
                  .Help("Number of times metrics were scraped")
                  .Register(own_)
                  .Add({});
  latencies_us_ =
      &prometheus::BuildSummary()
           .Name("exposer_request_latencies")
           .Help("Latencies of serving scrape requests, in microseconds")
           .Register(own_)
           .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}});
}

HttpResponse ScrapeEndpoint::Answer(const HttpRequest& request) {
  if (request.path != kMetricsPath) return HttpResponse(404, "Not Found\n", kTextFormat);
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse refused(405, "Method Not Allowed: /metrics answers GET and HEAD\n", kTextFormat);
    refused.headers.emplace_back("Allow", "GET, HEAD");
    return refused;
  }
  const auto started = std::chrono::steady_clock::now();
  std::vector<prometheus::MetricFamily> families = own_.Collect();
  std::vector<prometheus::MetricFamily> devices = devices_->Collect();
  families.insert(families.end(), std::make_move_iterator(devices.begin()),
                  std::make_move_iterator(devices.end()));
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  HttpResponse response(200, text.str(), kTextFormat);
  if (AcceptsGzip(request.Header("Accept-Encoding"))) {
    // Sent as it is when compression fails.
    StatusOr<std::string> compressed = GzipCompress(response.body);
    if (compressed.ok()) {
      response.body = *std::move(compressed);
      response.headers.emplace_back("Content-Encoding", "gzip");
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - started;
  latencies_us_->Observe(
      static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
  transferred_bytes_->Increment(static_cast<double>(response.body.size()));
  scrapes_->Increment();
  return response;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  for (const std::string& item : Split(accept_encoding, ',')) {
    std::vector<std::string> parts = Split(item, ';');
    if (!EqualsIgnoreCase(Trim(parts[0]), "gzip")) continue;
    bool refused = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view param = Trim(parts[i]);
      if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
      StatusOr<double> q = ParseDouble(Trim(param.substr(2)));
      refused = q.ok() && *q == 0.0;
    }
    return !refused;
  }
  return false;
}

StatusOr<std::string> GzipCompress(std::string_view text) {
  z_stream stream{};
  // 15 window bits plus 16: a gzip header and trailer around the deflate data.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return InternalError("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return InternalError("gzip: deflate returned " + std::to_string(rc));
  return out;
}

}  // namespace zeus::exporter_internal
