// Throughput and latency of the batch-size server: 64 simulated recurring
// jobs, each a client thread with its own keep-alive connection, drive one
// server in this process (GET /jobs/batch_size, then POST /report per epoch
// until told to stop, then again). Counters: requests/s over all requests,
// and p50/p99 latency in ms of next-batch-size and of report.
//
//   server_bench                                   SQLite in a temp dir
//   ZEUS_BENCH_POSTGRES_URL=postgresql://... server_bench   adds PostgreSQL
//     (tests/server/postgres_cluster.sh start DIR writes such a URL to DIR/url)

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "zeus/device/clock.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_server.h"
#include "zeus/server/store.h"

#include "bench/server/job_driver.h"

namespace zeus {
namespace {

using bench::DriveJob;
using bench::JobBody;
using bench::JobLatencies;
using bench::Percentile;
using Clock = std::chrono::steady_clock;

constexpr int kJobs = 64;
constexpr double kRunSeconds = 4.0;

// state.range(0): offered load in requests/s over all jobs; 0 = every job
// sends its next request as soon as the previous one is answered.
void RunServerBenchmark(benchmark::State& state, const std::string& url,
                        const std::string& policy) {
  const double offered_per_s = static_cast<double>(state.range(0));
  const Clock::duration interval = offered_per_s > 0
                                       ? std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kJobs / offered_per_s))
                                       : Clock::duration::zero();
  StatusOr<std::unique_ptr<Store>> store = OpenStore(url);
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }
  BatchSizeService service(store->get(), RealClock());
  HttpServerOptions options;
  options.threads = kJobs + 8;
  HttpServer server(&service, options);
  Status started = server.Start();
  if (!started.ok()) {
    state.SkipWithError(started.ToString().c_str());
    return;
  }
  for (int i = 0; i < kJobs; ++i) {
    BatchSizeJobSpec spec = *ParseJobSpec(JobBody("bench-" + std::to_string(i), policy));
    if (!service.RegisterJob(spec).ok()) {
      state.SkipWithError("registering a job failed");
      return;
    }
  }
  std::vector<JobLatencies> latencies(kJobs);
  double elapsed_s = 0.0;
  for (auto _ : state) {
    auto begin = Clock::now();
    auto deadline = begin + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(kRunSeconds));
    std::vector<std::thread> threads;
    for (int i = 0; i < kJobs; ++i) {
      threads.emplace_back(DriveJob, server.port(), "bench-" + std::to_string(i), interval,
                           interval * i / kJobs, deadline, &latencies[i]);
    }
    for (std::thread& t : threads) t.join();
    elapsed_s = std::chrono::duration<double>(Clock::now() - begin).count();
    state.SetIterationTime(elapsed_s);
  }
  server.Stop();
  std::vector<double> next_ms;
  std::vector<double> report_ms;
  int errors = 0;
  for (const JobLatencies& l : latencies) {
    next_ms.insert(next_ms.end(), l.next_ms.begin(), l.next_ms.end());
    report_ms.insert(report_ms.end(), l.report_ms.begin(), l.report_ms.end());
    errors += l.errors;
  }
  const double requests = static_cast<double>(next_ms.size() + report_ms.size());
  std::vector<double> all_ms = next_ms;
  all_ms.insert(all_ms.end(), report_ms.begin(), report_ms.end());
  state.counters["requests"] = requests;
  state.counters["req_per_s"] = requests / elapsed_s;
  state.counters["errors"] = errors;
  state.counters["all_p50_ms"] = Percentile(all_ms, 0.50);
  state.counters["all_p99_ms"] = Percentile(all_ms, 0.99);
  state.counters["next_p50_ms"] = Percentile(next_ms, 0.50);
  state.counters["next_p99_ms"] = Percentile(next_ms, 0.99);
  state.counters["report_p50_ms"] = Percentile(report_ms, 0.50);
  state.counters["report_p99_ms"] = Percentile(report_ms, 0.99);
}

void RunZeusJobs(benchmark::State& state, const std::string& url) {
  RunServerBenchmark(state, url, "zeus");
}

// frugal: every per-epoch report also writes the job's optimizer state (its
// learning-curve point).
void RunFrugalJobs(benchmark::State& state, const std::string& url) {
  RunServerBenchmark(state, url, "frugal");
}

void BM_Server64JobsSqlite(benchmark::State& state) {
  bench::OnTempSqlite(state, "zeus-bench-", RunZeusJobs);
}

void BM_Server64FrugalJobsSqlite(benchmark::State& state) {
  bench::OnTempSqlite(state, "zeus-bench-", RunFrugalJobs);
}

void BM_Server64JobsPostgres(benchmark::State& state) {
  bench::OnBenchPostgres(state, RunZeusJobs);
}

BENCHMARK(BM_Server64JobsSqlite)
    ->Arg(0)
    ->Arg(2000)
    ->Arg(2500)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_Server64FrugalJobsSqlite)
    ->Arg(0)
    ->Arg(2000)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_Server64JobsPostgres)
    ->Arg(0)
    ->Arg(2000)
    ->Arg(2500)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
