// Debian's real Prometheus server (package `prometheus`) for tests: started
// on 127.0.0.1 at a free port with a generated configuration that scrapes the
// given targets every few hundred ms, storage in a temporary directory;
// PromQL queries go through its HTTP API (/api/v1/query); stopped and
// cleaned up on destruction.
//
//   PrometheusServerOptions options;
//   options.targets.push_back({"zeus_exporter", "127.0.0.1:" + port});
//   options.targets.push_back({"zeus_serve", "127.0.0.1:" + serve_port});  // more
//   ZEUS_ASSERT_OK_AND_ASSIGN(auto prometheus, PrometheusServer::Start(options));
//   ZEUS_ASSERT_OK(prometheus->WaitForTargetsUp(std::chrono::seconds(20)));
//   ZEUS_ASSERT_OK_AND_ASSIGN(double w, prometheus->QueryValue("zeus_gpu_power_watts{gpu=\"0\"}"));
//
// A test skips itself when the binary is absent: ZEUS_SKIP_WITHOUT_PROMETHEUS().
//
// Thread-safety: one thread per object.

#ifndef ZEUS_TESTS_TESTING_PROMETHEUS_SERVER_H_
#define ZEUS_TESTS_TESTING_PROMETHEUS_SERVER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zeus/status.h"

#include "tests/testing/child_process.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {

// One scrape target: a job of its own, so queries can tell targets apart by
// the `job` label.
struct ScrapeTarget {
  // The job_name (and `job` label), e.g. "zeus_exporter". Unique.
  std::string job;
  // "HOST:PORT" of the target.
  std::string address;
  // Default: /metrics.
  std::string metrics_path = "/metrics";
};

struct PrometheusServerOptions {
  std::vector<ScrapeTarget> targets;
  // Scrape interval (and timeout). Default: 200 ms.
  std::chrono::milliseconds scrape_interval{200};
  // How long Start waits for /-/ready. Default: 30 s.
  std::chrono::milliseconds start_timeout{30'000};
};

// One sample of an instant vector.
struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

class PrometheusServer {
 public:
  // The prometheus binary: $ZEUS_PROMETHEUS when set, else `prometheus` on
  // PATH (Debian: /usr/bin/prometheus); empty when there is none.
  static std::string FindBinary();

  // Starts Prometheus and waits until it is ready. kNotFound when the binary
  // is absent; kUnavailable with the tail of its log when it exits or does
  // not become ready in time.
  static StatusOr<std::unique_ptr<PrometheusServer>> Start(const PrometheusServerOptions& options);
  // Stops the server (SIGTERM, then SIGKILL) and removes its storage.
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  int port() const { return port_; }
  // Everything Prometheus logged so far (for failure messages).
  std::string Log() const;

  // Runs an instant PromQL query now. A vector or scalar result comes back
  // as samples (a scalar as one sample without labels). kInvalidArgument
  // with Prometheus's error for a bad query; kUnavailable when the server
  // does not answer.
  StatusOr<std::vector<PromSample>> Query(const std::string& promql);
  // Polls Query until it returns at least one sample; kUnavailable naming
  // the query (and the last error) after `timeout`.
  StatusOr<std::vector<PromSample>> WaitForQuery(const std::string& promql,
                                                 std::chrono::milliseconds timeout);
  // WaitForQuery, then the value of its only sample; kFailedPrecondition when
  // it returns several.
  StatusOr<double> QueryValue(const std::string& promql,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits until every target has been scraped successfully (up == 1);
  // kUnavailable naming the targets still down with their last scrape errors
  // (from /api/v1/targets).
  Status WaitForTargetsUp(std::chrono::milliseconds timeout);

 private:
  PrometheusServer(PrometheusServerOptions options, std::unique_ptr<TempDir> dir, int port,
                   std::unique_ptr<ChildProcess> process);
  StatusOr<std::string> Get(const std::string& path_and_query);

  PrometheusServerOptions options_;
  std::unique_ptr<TempDir> dir_;
  int port_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace zeus::testing

// Skips the current test, with the reason, when Prometheus is not installed.
#define ZEUS_SKIP_WITHOUT_PROMETHEUS()                                                \
  do {                                                                                \
    if (::zeus::testing::PrometheusServer::FindBinary().empty()) {                    \
      GTEST_SKIP() << "no prometheus binary (Debian package `prometheus`; or set "    \
                      "ZEUS_PROMETHEUS): the real-Prometheus scrape test cannot run"; \
    }                                                                                 \
  } while (false)

#endif  // ZEUS_TESTS_TESTING_PROMETHEUS_SERVER_H_
