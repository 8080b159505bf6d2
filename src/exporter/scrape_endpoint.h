// The HTTP answers of `zeus exporter`, independent of the transport that
// carries them: GET (and HEAD) /metrics returns the exporter's own scrape
// statistics followed by the devices' metrics, in the Prometheus text format
// 0.0.4 ("text/plain; charset=utf-8"), gzip-compressed when the request's
// Accept-Encoding accepts gzip. The statistics are those prometheus-cpp's
// pull exposer reports, under its names, so the exposition is what it was:
//   exposer_transferred_bytes_total  counter, body bytes sent (compressed)
//   exposer_scrapes_total            counter, answered scrapes
//   exposer_request_latencies        summary, time to produce an answer, in
//                                    microseconds (quantiles 0.5, 0.9, 0.99)
// A scrape's answer shows the statistics of the scrapes before it. Another
// method on /metrics is 405 (Allow: GET, HEAD); any other path is 404.
//
// Thread-safety: Answer() may run on several threads at once.

#ifndef ZEUS_SRC_EXPORTER_SCRAPE_ENDPOINT_H_
#define ZEUS_SRC_EXPORTER_SCRAPE_ENDPOINT_H_

#include <memory>
#include <string>
#include <string_view>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>

#include "zeus/http/message.h"
#include "zeus/status.h"

namespace zeus::exporter_internal {

class ScrapeEndpoint {
 public:
  // `devices` is collected at every scrape; it must outlive this object.
  explicit ScrapeEndpoint(const prometheus::Collectable* devices);

  HttpResponse Answer(const HttpRequest& request);

 private:
  const prometheus::Collectable* devices_;
  prometheus::Registry own_;
  prometheus::Counter* transferred_bytes_;
  prometheus::Counter* scrapes_;
  prometheus::Summary* latencies_us_;
};

// True when an Accept-Encoding value lists the "gzip" coding
// (case-insensitive) with a q other than 0.
bool AcceptsGzip(std::string_view accept_encoding);

// `text` as one gzip member (RFC 1952); kInternal when zlib fails.
StatusOr<std::string> GzipCompress(std::string_view text);

}  // namespace zeus::exporter_internal

#endif  // ZEUS_SRC_EXPORTER_SCRAPE_ENDPOINT_H_
