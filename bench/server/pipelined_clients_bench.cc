// Issue 23 item 3: 40 keep-alive clients pipeline requests for the largest
// answers the server gives (GET /jobs/arms of a job with the most batch
// sizes allowed, a page of GET /jobs and of the dashboard's job list) and
// never read the answers, for 10 s; then they leave. `zeus serve` runs as a
// child process (its memory is its own). Once took the server from 0.23 to
// 3.0 GB, kept after the clients left, with /health at 2.4 s.
//
// Counters: the server's resident memory in MB before the burst
// (rss_before_mb), its peak (rss_peak_mb, VmHWM) and 3 s after the clients
// closed (rss_after_mb); /health latency in ms measured every 100 ms during
// the burst from a separate connection (health_p50_ms, health_p99_ms,
// health_max_ms, health_failures); requests the clients managed to send
// (requests_sent); whether a registration of 100,000 batch sizes was refused
// (oversize_refused: 1).
//
//   pipelined_clients_bench                   SQLite in a temp dir
//   ZEUS_BENCH_SERVE_ARGS="--threads 64" ...  more flags for `zeus serve`

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bench/server/job_driver.h"
#include "bench/server/serve_process.h"

namespace zeus {
namespace {

using bench::Clock;
using bench::LoopbackUrl;
using bench::Percentile;
using bench::PostJson;
using bench::Server;
using nlohmann::json;

constexpr int kClients = 40;
constexpr double kBurstSeconds = 10.0;
// Jobs registered: more than one page of the job lists (100 by default).
constexpr int kJobs = 150;
// The most batch sizes a job may have (zeus/protocol/limits.h).
constexpr int kBatchSizes = 1024;

json WideJob(const std::string& job_id, int batch_sizes) {
  json body = bench::JobBody(job_id);
  body["job_id_prefix"] = job_id.substr(0, job_id.find('-'));
  std::vector<int> sizes;
  for (int b = 1; b <= batch_sizes; ++b) sizes.push_back(b);
  body["batch_sizes"] = sizes;
  body["default_batch_size"] = 1;
  return body;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// Sends pipelined requests on one connection, never reading, until
// `deadline`; reconnects when the server closes it. Counts requests sent.
void PipelineWithoutReading(int port, int client, Clock::time_point deadline,
                            std::atomic<long>* sent) {
  const std::string targets[] = {"/jobs/arms?job_id=wide-" + std::to_string(client % kJobs),
                                 "/jobs", "/dashboard/api/jobs"};
  std::string requests;
  for (int i = 0; i < 30; ++i) {
    requests += "GET " + targets[i % 3] + " HTTP/1.1\r\nHost: bench\r\n\r\n";
  }
  int fd = -1;
  size_t offset = 0;
  while (Clock::now() < deadline) {
    if (fd < 0) {
      fd = Connect(port);
      offset = 0;
      if (fd < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
    }
    const ssize_t n =
        send(fd, requests.data() + offset, requests.size() - offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      offset += static_cast<size_t>(n);
      if (offset == requests.size()) {
        *sent += 30;
        offset = 0;
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    close(fd);  // Closed by the server (it cuts off a client that does not read).
    fd = -1;
  }
  if (fd >= 0) close(fd);
}

void RunPipelinedBenchmark(benchmark::State& state, const std::string& url) {
  Server server(url);
  if (!server.error().empty()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  HttpClientOptions admin_options;
  admin_options.timeout_s = 60;
  HttpClient admin(admin_options);
  const std::string jobs_url = LoopbackUrl(server.port()) + "/jobs";
  StatusOr<HttpClientResponse> oversize =
      PostJson(admin, jobs_url, WideJob("huge-1", 100'000).dump());
  const bool oversize_refused = oversize.ok() && oversize->status == 422;
  for (int i = 0; i < kJobs; ++i) {
    StatusOr<HttpClientResponse> reply =
        PostJson(admin, jobs_url, WideJob("wide-" + std::to_string(i), kBatchSizes).dump());
    if (!reply.ok() || (reply->status != 201 && reply->status != 200)) {
      state.SkipWithError("registering a job failed");
      return;
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double rss_before_mb = server.MemoryMb("VmRSS");
  std::vector<double> health_ms;
  int health_failures = 0;
  std::atomic<long> sent{0};
  for (auto _ : state) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kBurstSeconds));
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back(PipelineWithoutReading, server.port(), i, deadline, &sent);
    }
    HttpClientOptions health_options;
    health_options.timeout_s = 30;
    health_options.keep_alive = false;  // As before: a connection per probe.
    HttpClient health(health_options);
    const std::string health_url = LoopbackUrl(server.port()) + "/health";
    while (Clock::now() < deadline) {
      const auto begin = Clock::now();
      StatusOr<HttpClientResponse> reply = health.Get(health_url);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      if (!reply.ok() || reply->status != 200) ++health_failures;
      health_ms.push_back(ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (std::thread& t : clients) t.join();
    state.SetIterationTime(kBurstSeconds);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::vector<double> sorted = health_ms;
  state.counters["rss_before_mb"] = rss_before_mb;
  state.counters["rss_peak_mb"] = server.MemoryMb("VmHWM");
  state.counters["rss_after_mb"] = server.MemoryMb("VmRSS");
  state.counters["health_p50_ms"] = Percentile(sorted, 0.50);
  state.counters["health_p99_ms"] = Percentile(sorted, 0.99);
  state.counters["health_max_ms"] = Percentile(sorted, 1.0);
  state.counters["health_failures"] = health_failures;
  state.counters["requests_sent"] = static_cast<double>(sent.load());
  state.counters["oversize_refused"] = oversize_refused ? 1 : 0;
}

void BM_PipelinedClientsSqlite(benchmark::State& state) {
  bench::OnTempSqlite(state, "zeus-bench-pipelined-", RunPipelinedBenchmark);
}

BENCHMARK(BM_PipelinedClientsSqlite)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
