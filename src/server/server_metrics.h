// The batch-size server's Prometheus metrics (prometheus-cpp registry, text
// exposition format 0.0.4):
//   zeus_http_requests_total{route,method,status}      counter
//   zeus_http_request_duration_seconds{route,method}   histogram, from the
//       end of the request's headers to its answer being ready
//   zeus_store_up                                      1 when the last scrape
//       read the store, 0 when it failed
//   zeus_store_errors_total{operation}                 store failures: requests
//       answered 503/500 from the store (operation = route), failed scrapes
//       (operation = "metrics")
//   zeus_jobs                                          registered jobs
//   zeus_trials{state}                                 trials by state
//       (dispatched, succeeded, failed)
//   zeus_job_batch_size{job_id}                        batch size of the job's
//       latest trial
//   zeus_job_best_batch_size{job_id}                   the bandit's best
//   zeus_job_best_cost{job_id}                         lowest cost (J-weighted
//       cost of the Zeus paper); absent before the first finished trial
// The store-derived gauges are refreshed at each scrape; while the store is
// down they keep their last values and zeus_store_up says 0.
//
// Thread-safety: every method may be called concurrently.

#ifndef ZEUS_SRC_SERVER_SERVER_METRICS_H_
#define ZEUS_SRC_SERVER_SERVER_METRICS_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "zeus/server/batch_size_service.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace zeus::server_internal {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Counts one answered request. `route` is the matched route's path, or
  // "unmatched" (so that arbitrary paths cannot grow the label set).
  void ObserveRequest(const std::string& route, const std::string& method, int status,
                      double latency_s);
  void CountStoreError(const std::string& operation);
  // Refreshes the store gauges from `service` (a store failure sets
  // zeus_store_up to 0 and counts an error; never fails) and returns every
  // metric in the text format.
  std::string Scrape(BatchSizeService* service);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Counter>* store_errors_;
  prometheus::Gauge* store_up_;
  prometheus::Gauge* jobs_;
  prometheus::Family<prometheus::Gauge>* trials_;
  prometheus::Family<prometheus::Gauge>* job_batch_size_;
  prometheus::Family<prometheus::Gauge>* job_best_batch_size_;
  prometheus::Family<prometheus::Gauge>* job_best_cost_;
  // Serialises scrapes (they add and remove per-job gauges).
  std::mutex scrape_mutex_;
  std::map<std::string, JobSummary> last_jobs_;
};

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_SERVER_METRICS_H_
