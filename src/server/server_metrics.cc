#include "src/server/server_metrics.h"

#include <set>
#include <sstream>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace zeus::server_internal {

namespace {

// Seconds: sub-millisecond answers up to the read timeout.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0};
  return kBuckets;
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  requests_ = &prometheus::BuildCounter()
                   .Name("zeus_http_requests_total")
                   .Help("HTTP requests answered, by route, method and status")
                   .Register(r);
  latency_ = &prometheus::BuildHistogram()
                  .Name("zeus_http_request_duration_seconds")
                  .Help(
                      "Time from the end of a request's headers to its answer, by route and "
                      "method")
                  .Register(r);
  store_errors_ = &prometheus::BuildCounter()
                       .Name("zeus_store_errors_total")
                       .Help(
                           "Store failures: requests answered 5xx from the store (by route) "
                           "and failed scrapes (operation=\"metrics\")")
                       .Register(r);
  store_up_ = &prometheus::BuildGauge()
                   .Name("zeus_store_up")
                   .Help("1 when the last scrape could read the store, 0 when it failed")
                   .Register(r)
                   .Add({});
  jobs_ = &prometheus::BuildGauge()
               .Name("zeus_jobs")
               .Help("Registered jobs (as of the last scrape that read the store)")
               .Register(r)
               .Add({});
  trials_ = &prometheus::BuildGauge()
                 .Name("zeus_trials")
                 .Help("Trials of every job by state (dispatched, succeeded, failed)")
                 .Register(r);
  job_batch_size_ = &prometheus::BuildGauge()
                         .Name("zeus_job_batch_size")
                         .Help("Batch size of the job's latest trial")
                         .Register(r);
  job_best_batch_size_ = &prometheus::BuildGauge()
                              .Name("zeus_job_best_batch_size")
                              .Help("The bandit's current best batch size of the job")
                              .Register(r);
  job_best_cost_ = &prometheus::BuildGauge()
                        .Name("zeus_job_best_cost")
                        .Help(
                            "Lowest cost of the job's finished trials (eta x energy in J + "
                            "(1 - eta) x max power in W x time in s)")
                        .Register(r);
  for (const char* state : {"dispatched", "succeeded", "failed"}) {
    trials_->Add({{"state", state}});
  }
  // Known before the first scrape.
  store_errors_->Add({{"operation", "metrics"}});
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::ObserveRequest(const std::string& route, const std::string& method, int status,
                                   double latency_s) {
  requests_->Add({{"route", route}, {"method", method}, {"status", std::to_string(status)}})
      .Increment();
  if (latency_s >= 0) {
    latency_->Add({{"route", route}, {"method", method}}, LatencyBuckets()).Observe(latency_s);
  }
}

void ServerMetrics::CountStoreError(const std::string& operation) {
  store_errors_->Add({{"operation", operation}}).Increment();
}

std::string ServerMetrics::Scrape(BatchSizeService* service) {
  std::lock_guard<std::mutex> lock(scrape_mutex_);
  StatusOr<std::vector<JobSummary>> summary = service->Summary();
  if (!summary.ok()) {
    store_up_->Set(0);
    CountStoreError("metrics");
  } else {
    store_up_->Set(1);
    jobs_->Set(static_cast<double>(summary->size()));
    double dispatched = 0, succeeded = 0, failed = 0;
    std::map<std::string, JobSummary> now;
    for (JobSummary& job : *summary) {
      dispatched += static_cast<double>(job.dispatched_trials);
      succeeded += static_cast<double>(job.succeeded_trials);
      failed += static_cast<double>(job.failed_trials);
      const prometheus::Labels labels{{"job_id", job.job_id}};
      if (job.current_batch_size) {
        job_batch_size_->Add(labels).Set(static_cast<double>(*job.current_batch_size));
      }
      job_best_batch_size_->Add(labels).Set(static_cast<double>(job.best_batch_size));
      if (job.min_cost) job_best_cost_->Add(labels).Set(*job.min_cost);
      std::string id = job.job_id;
      now.emplace(std::move(id), std::move(job));
    }
    trials_->Add({{"state", "dispatched"}}).Set(dispatched);
    trials_->Add({{"state", "succeeded"}}).Set(succeeded);
    trials_->Add({{"state", "failed"}}).Set(failed);
    // Deleted jobs leave no stale series behind.
    for (const auto& [job_id, job] : last_jobs_) {
      if (now.count(job_id) != 0) continue;
      const prometheus::Labels labels{{"job_id", job_id}};
      for (auto* family : {job_batch_size_, job_best_batch_size_, job_best_cost_}) {
        if (family->Has(labels)) family->Remove(&family->Add(labels));
      }
    }
    last_jobs_ = std::move(now);
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace zeus::server_internal
