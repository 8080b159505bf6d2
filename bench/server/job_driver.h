// One simulated recurring job driving the batch-size server over HTTP, for
// the server benchmarks: GET /jobs/batch_size, then POST /report per epoch
// until told to stop, again and again, on one keep-alive connection, paced
// at a fixed interval with latency counted from the scheduled send time (no
// coordinated omission).

#ifndef ZEUS_BENCH_SERVER_JOB_DRIVER_H_
#define ZEUS_BENCH_SERVER_JOB_DRIVER_H_

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "zeus/http/client.h"

namespace zeus::bench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// `policy`: the job's batch-size policy ("zeus", "frugal" or "swarm"; frugal
// and swarm also store each per-epoch report's learning-curve point).
inline json JobBody(const std::string& job_id, const std::string& policy = "zeus") {
  return json{{"job_id", job_id},
              {"policy", policy},
              {"job_id_prefix", "bench"},
              {"batch_sizes", {16, 32, 64, 128, 256}},
              {"default_batch_size", 64},
              {"max_epochs", 8},
              {"mab_seed", 1},
              {"max_power", 300.0},
              {"number_of_gpus", 1},
              {"gpu_model", "A40"}};
}

// "http://127.0.0.1:<port>".
inline std::string LoopbackUrl(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// POST `body` as application/json to `url`.
inline StatusOr<HttpClientResponse> PostJson(HttpClient& client, const std::string& url,
                                             const std::string& body) {
  return client.Send({"POST", url, {{"Content-Type", "application/json"}}, body});
}

inline double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0.0;
  size_t index = static_cast<size_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + index, values.end());
  return values[index];
}

struct JobLatencies {
  std::vector<double> next_ms;
  std::vector<double> report_ms;
  int errors = 0;
};

// Paces one job's requests at `interval` (zero: back to back). Latency is
// measured from the scheduled send time, so a slow server is not hidden by
// sending later (no coordinated omission).
class Pacer {
 public:
  // Jobs are not synchronised: each starts at its own `phase` of the interval.
  Pacer(Clock::duration interval, Clock::duration phase)
      : interval_(interval), next_(Clock::now() + phase) {}
  Clock::time_point Wait() {
    if (interval_ == Clock::duration::zero()) return Clock::now();
    std::this_thread::sleep_until(next_);
    Clock::time_point scheduled = next_;
    next_ += interval_;
    return scheduled;
  }

 private:
  Clock::duration interval_;
  Clock::time_point next_;
};

// One simulated job: recurrences until the deadline. Batch size b converges
// after b / 32 + 1 epochs; larger batches cost more energy per epoch.
inline void DriveJob(int port, const std::string& job_id, Clock::duration interval,
                     Clock::duration phase, Clock::time_point deadline, JobLatencies* out) {
  // Kept-alive connection; HttpClient sets TCP_NODELAY.
  HttpClient client;
  const std::string base = LoopbackUrl(port);
  (void)client.Get(base + "/health");  // Connect before the measurement.
  Pacer pacer(interval, phase);
  const std::string next_url = base + "/jobs/batch_size?job_id=" + job_id;
  const std::string report_url = base + "/report";
  while (Clock::now() < deadline) {
    auto start = pacer.Wait();
    StatusOr<HttpClientResponse> trial = client.Get(next_url);
    out->next_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!trial.ok() || trial->status != 200) {
      ++out->errors;
      continue;
    }
    json report = json::parse(trial->body);
    const int batch_size = report["batch_size"];
    const int converge_epoch = batch_size / 32 + 1;
    for (int epoch = 1; Clock::now() < deadline; ++epoch) {
      report["time"] = epoch * 10.0;
      report["energy"] = epoch * 10.0 * (100.0 + batch_size);
      report["metric"] = epoch >= converge_epoch ? 0.9 : 0.1;
      report["current_epoch"] = epoch;
      start = pacer.Wait();
      StatusOr<HttpClientResponse> answer = PostJson(client, report_url, report.dump());
      out->report_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      if (!answer.ok() || answer->status != 200) {
        ++out->errors;
        break;
      }
      if (json::parse(answer->body)["stop_train"] == true) break;
    }
  }
}

// Runs `run(state, url)` on a fresh SQLite database in a temporary
// directory named after `prefix`, removed afterwards.
template <typename Run>
void OnTempSqlite(benchmark::State& state, const std::string& prefix, Run run) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (prefix + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  run(state, "sqlite:" + (dir / "bench.db").string());
  std::filesystem::remove_all(dir);
}

// Runs `run(state, url)` on the database $ZEUS_BENCH_POSTGRES_URL names; the
// benchmark is skipped, saying so, when it is unset.
template <typename Run>
void OnBenchPostgres(benchmark::State& state, Run run) {
  const char* url = std::getenv("ZEUS_BENCH_POSTGRES_URL");
  if (url == nullptr) {
    state.SkipWithError("set ZEUS_BENCH_POSTGRES_URL to a PostgreSQL database to run this");
    return;
  }
  run(state, url);
}

}  // namespace zeus::bench

#endif  // ZEUS_BENCH_SERVER_JOB_DRIVER_H_
