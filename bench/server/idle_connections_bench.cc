// The batch-size server at cluster scale (issue 11): `zeus serve` (the real
// binary, as a child process, so that its memory is its own) holds many idle
// keep-alive connections, each of which sent one request, while 64 active
// simulated jobs send a paced load over their own keep-alive connections.
// Counters: requests/s, p50/p99 latency in ms over all active requests, the
// idle connections still open at the end, and the server's resident memory
// (VmRSS after the run, VmHWM its peak) in MB, and the server's CPU time
// (user + system) per active request in microseconds.
//
//   idle_connections_bench                  SQLite in a temp dir
//   ZEUS_BENCH_POSTGRES_URL=postgresql://... idle_connections_bench   adds PostgreSQL
//     (tests/server/postgres_cluster.sh start DIR writes such a URL to DIR/url)
//   ZEUS_BENCH_SERVE_ARGS="--threads 64" ...   more flags for `zeus serve`
//   ZEUS_BENCH_ZEUS=path/to/zeus ...   another `zeus` binary than the one built
//     beside this benchmark (for a build tree copied to another machine)
//
// Each idle connection is a descriptor in this process and one in the server:
// RLIMIT_NOFILE must allow idle connections + a few hundred in both (the
// program and `zeus serve` raise their soft limit to the hard limit; 10,000
// idle connections need a hard limit of at least about 10,300).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench/server/job_driver.h"
#include "bench/server/serve_process.h"

namespace zeus {
namespace {

using bench::Clock;
using bench::DriveJob;
using bench::JobBody;
using bench::JobLatencies;
using bench::LoopbackUrl;
using bench::Percentile;
using bench::PostJson;
using bench::Server;

constexpr int kJobs = 64;
constexpr double kRunSeconds = 10.0;

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Opens `count` connections, sends GET /health on each and reads the answer,
// leaving them open (keep-alive). Returns the descriptors.
std::vector<int> OpenIdleConnections(int port, int count, std::string* error) {
  std::vector<int> fds;
  const std::string request = "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n";
  constexpr int kBatch = 256;
  for (int start = 0; start < count; start += kBatch) {
    std::vector<int> batch;
    for (int i = start; i < std::min(count, start + kBatch); ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) {
        *error = "socket() failed after " + std::to_string(fds.size() + batch.size()) +
                 " connections (raise RLIMIT_NOFILE)";
        return fds;
      }
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
          send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
              static_cast<ssize_t>(request.size())) {
        *error = "connection " + std::to_string(i) + " failed";
        close(fd);
        return fds;
      }
      batch.push_back(fd);
    }
    for (int fd : batch) {
      std::string answer;
      char buffer[1024];
      while (answer.find('}') == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0) break;
        ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        answer.append(buffer, static_cast<size_t>(n));
      }
      if (answer.rfind("HTTP/1.1 200", 0) != 0) *error = "an idle connection got: " + answer;
      fds.push_back(fd);
    }
  }
  return fds;
}

// Idle connections the server has not closed (no EOF or error pending).
int StillOpen(const std::vector<int>& fds) {
  int open = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) ++open;
  }
  return open;
}

// state.range(0): idle connections; state.range(1): offered load in
// requests/s over the 64 active jobs.
void RunIdleBenchmark(benchmark::State& state, const std::string& url) {
  RaiseOpenFileLimit();
  const int idle_count = static_cast<int>(state.range(0));
  const double offered_per_s = static_cast<double>(state.range(1));
  Server server(url);
  if (!server.error().empty()) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  HttpClient admin;
  for (int i = 0; i < kJobs; ++i) {
    StatusOr<HttpClientResponse> reply = PostJson(admin, LoopbackUrl(server.port()) + "/jobs",
                                                  JobBody("bench-" + std::to_string(i)).dump());
    if (!reply.ok() || (reply->status != 201 && reply->status != 200)) {
      state.SkipWithError("registering a job failed");
      return;
    }
  }
  const double rss_before_mb = server.MemoryMb("VmRSS");
  std::string error;
  std::vector<int> idle = OpenIdleConnections(server.port(), idle_count, &error);
  if (!error.empty()) {
    for (int fd : idle) close(fd);
    state.SkipWithError(error.c_str());
    return;
  }
  const double rss_idle_mb = server.MemoryMb("VmRSS");
  const Clock::duration interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(kJobs / offered_per_s));
  std::vector<JobLatencies> latencies(kJobs);
  double elapsed_s = 0.0;
  const double cpu_before_s = server.CpuSeconds();
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
  const double server_cpu_s = server.CpuSeconds() - cpu_before_s;
  std::vector<double> all_ms;
  int errors = 0;
  for (const JobLatencies& l : latencies) {
    all_ms.insert(all_ms.end(), l.next_ms.begin(), l.next_ms.end());
    all_ms.insert(all_ms.end(), l.report_ms.begin(), l.report_ms.end());
    errors += l.errors;
  }
  state.counters["idle_open_at_end"] = StillOpen(idle);
  state.counters["req_per_s"] = static_cast<double>(all_ms.size()) / elapsed_s;
  state.counters["errors"] = errors;
  state.counters["server_cpu_us_per_req"] =
      all_ms.empty() ? 0.0 : server_cpu_s * 1e6 / static_cast<double>(all_ms.size());
  state.counters["p50_ms"] = Percentile(all_ms, 0.50);
  state.counters["p99_ms"] = Percentile(all_ms, 0.99);
  state.counters["rss_start_mb"] = rss_before_mb;
  state.counters["rss_idle_mb"] = rss_idle_mb;
  state.counters["rss_end_mb"] = server.MemoryMb("VmRSS");
  state.counters["rss_peak_mb"] = server.MemoryMb("VmHWM");
  for (int fd : idle) close(fd);
}

void BM_IdleConnectionsSqlite(benchmark::State& state) {
  bench::OnTempSqlite(state, "zeus-bench-idle-", RunIdleBenchmark);
}

void BM_IdleConnectionsPostgres(benchmark::State& state) {
  bench::OnBenchPostgres(state, RunIdleBenchmark);
}

BENCHMARK(BM_IdleConnectionsSqlite)
    ->Args({0, 2000})
    ->Args({10000, 2000})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_IdleConnectionsPostgres)
    ->Args({0, 2000})
    ->Args({10000, 2000})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace zeus

BENCHMARK_MAIN();
