// DownloadTraces and FetchUrl against a loopback HTTP server, and
// ResolveTraceDir with DownloadTraces plugged in.

#include "zeus/fetch/trace_download.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "zeus/fetch/http_fetch.h"
#include "zeus/sim/trace.h"
#include "zeus/sim/trace_source.h"
#include "zeus/util/file.h"

#include "tests/testing/raw_socket.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

std::string BundledTraces() { return zeus::testing::DataDir() + "/traces/zeus-nsdi23"; }

// Serves a directory (and optionally corrupts one file) on a free loopback
// port: GET /trace/<name> answers the file (404 when there is none), GET
// /moved/<name> redirects (302) to /trace/<name>. One request per connection
// (every answer says Connection: close), served in turn by one thread.
class LoopbackTraceServer {
 public:
  LoopbackTraceServer(std::string dir, std::string corrupt = "")
      : dir_(std::move(dir)), corrupt_(std::move(corrupt)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackTraceServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/trace"; }
  std::string moved_url(const std::string& name) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/moved/" + name;
  }
  int requests() const { return requests_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd ready{listen_fd_, POLLIN, 0};
      if (poll(&ready, 1, 20) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::string head;
      char buffer[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd readable{fd, POLLIN, 0};
        if (poll(&readable, 1, 5000) <= 0) break;
        const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        head.append(buffer, static_cast<size_t>(n));
        if (std::isupper(static_cast<unsigned char>(head[0])) == 0) break;  // Not HTTP (TLS).
      }
      testing::SendAll(fd, Answer(head));
      close(fd);
    }
  }

  // The whole answer to the request whose head is `head`.
  std::string Answer(const std::string& head) {
    const std::string get = "GET ";
    const size_t target_end = head.find(' ', get.size());
    const std::string target = head.rfind(get, 0) == 0 && target_end != std::string::npos
                                   ? head.substr(get.size(), target_end - get.size())
                                   : "";
    const std::string trace = "/trace/", moved = "/moved/";
    if (target.rfind(trace, 0) == 0 && IsFileName(target.substr(trace.size()))) {
      ++requests_;
      const std::string name = target.substr(trace.size());
      StatusOr<std::string> body = ReadFileToString(dir_ + "/" + name);
      if (!body.ok()) return Reply("404 Not Found", "", "");
      std::string data = *body;
      if (name == corrupt_) data[data.size() / 2] ^= 1;
      return Reply("200 OK", "Content-Type: text/csv\r\n", data);
    }
    if (target.rfind(moved, 0) == 0 && IsFileName(target.substr(moved.size()))) {
      return Reply("302 Found", "Location: /trace/" + target.substr(moved.size()) + "\r\n", "");
    }
    return Reply("404 Not Found", "", "");
  }

  static bool IsFileName(const std::string& name) {
    if (name.empty()) return false;
    for (unsigned char c : name) {
      if (std::isalnum(c) == 0 && c != '_' && c != '.' && c != '-') return false;
    }
    return true;
  }

  static std::string Reply(const std::string& status, const std::string& fields,
                           const std::string& body) {
    return "HTTP/1.1 " + status + "\r\n" + fields +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  }

  std::string dir_;
  std::string corrupt_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::atomic<int> requests_{0};
};

TEST(TraceDownloadTest, BundledJobsAndChecksumsMatchTheBundledTraces) {
  ASSERT_TRUE(IsCompleteTraceDir(BundledTraces())) << BundledTraces();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string jobs, ReadFileToString(BundledTraces() + "/jobs.csv"));
  EXPECT_EQ(BundledJobsCsv(), jobs);
  for (const TraceFile& file : PublicTraceFiles()) {
    ZEUS_ASSERT_OK_AND_ASSIGN(std::string data,
                              ReadFileToString(BundledTraces() + "/" + file.name));
    EXPECT_EQ(Sha256Hex(data), file.sha256) << file.name;
  }
}

TEST(TraceDownloadTest, Sha256OfKnownInput) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TraceDownloadTest, DownloadsVerifiesAndCachesFromLoopbackServer) {
  ASSERT_TRUE(IsCompleteTraceDir(BundledTraces())) << BundledTraces();
  LoopbackTraceServer server(BundledTraces());
  testing::TempDir cache;
  const std::string dir = cache.path() + "/nested/traces";
  uint64_t last_received = 0;
  ZEUS_ASSERT_OK(DownloadTraces(
      server.base_url(), dir,
      [&](uint64_t received, uint64_t, const std::string&) { last_received = received; }));
  EXPECT_GT(last_received, 0u);
  EXPECT_EQ(server.requests(), 3);
  EXPECT_TRUE(IsCompleteTraceDir(dir));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads, LoadWorkloads(dir, "a40"));
  EXPECT_EQ(workloads.size(), 6u);
  // A second call finds verified files and fetches nothing.
  ZEUS_ASSERT_OK(DownloadTraces(server.base_url(), dir));
  EXPECT_EQ(server.requests(), 3);

  // Resolution with an empty cache downloads into the cache.
  testing::TempDir cache2;
  TraceSourceOptions options;
  options.cache_dir = cache2.path() + "/traces";
  options.base_url = server.base_url();
  options.download = DownloadTraces;
  options.allow_download = true;
  unsetenv("ZEUS_TRACE_DIR");
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string resolved, ResolveTraceDir(options));
  EXPECT_EQ(resolved, options.cache_dir);
  EXPECT_TRUE(IsCompleteTraceDir(resolved));
}

TEST(TraceDownloadTest, ChecksumMismatchWritesNothing) {
  ASSERT_TRUE(IsCompleteTraceDir(BundledTraces())) << BundledTraces();
  LoopbackTraceServer server(BundledTraces(), "summary_power_v100.csv");
  testing::TempDir cache;
  const Status status = DownloadTraces(server.base_url(), cache.path());
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("summary_power_v100.csv: checksum mismatch"), std::string::npos)
      << status;
  struct stat st;
  EXPECT_NE(stat(cache.File("summary_power_v100.csv").c_str(), &st), 0);
  EXPECT_FALSE(IsCompleteTraceDir(cache.path()));
}

// A hostile or wrong server answering a huge file: the transfer stops at
// 1 MiB (never held whole in memory), nothing is written.
TEST(TraceDownloadTest, ABodyFarBeyondThePinnedFilesSizeIsRefusedAsItArrives) {
  testing::TempDir served;
  const std::string huge(uint64_t{3} << 20, 'x');
  for (const TraceFile& file : PublicTraceFiles()) {
    ZEUS_ASSERT_OK(WriteFileAtomically(served.File(file.name), huge));
  }
  LoopbackTraceServer server(served.path());
  testing::TempDir cache;
  uint64_t most_received = 0;
  const Status status = DownloadTraces(server.base_url(), cache.path(),
                                       [&](uint64_t received, uint64_t, const std::string&) {
                                         most_received = std::max(most_received, received);
                                       });
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("larger than the limit of 1048576 bytes"), std::string::npos)
      << status;
  EXPECT_LE(most_received, uint64_t{1} << 20);
  EXPECT_FALSE(IsCompleteTraceDir(cache.path()));
}

// A server that drips its answer, a byte well within the stall limit each
// time, meets the transfer's total deadline.
TEST(TraceDownloadTest, ADrippingServerMeetsTheTotalDeadline) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    testing::SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
    while (!stop && testing::SendAll(fd, " ")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    close(fd);
  });
  FetchOptions options;
  options.read_timeout_s = 30;
  options.total_timeout_s = 1;
  StatusOr<std::string> body =
      FetchUrl("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/f", options);
  stop = true;
  drip.join();
  close(listener);
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable) << body.status();
}

TEST(TraceDownloadTest, UnreachableServerIsUnavailableWithAHint) {
  // Bind a free port, then close it: nothing listens there.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  const int port = ntohs(addr.sin_port);
  close(fd);
  testing::TempDir cache;
  TraceSourceOptions options;
  options.cache_dir = cache.path();
  options.base_url = "http://127.0.0.1:" + std::to_string(port) + "/trace";
  options.download = DownloadTraces;
  options.allow_download = true;
  unsetenv("ZEUS_TRACE_DIR");
  const Status status = ResolveTraceDir(options).status();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("--traces"), std::string::npos) << status;
}

TEST(TraceDownloadTest, FetchUrlNamesBadUrlsAndHttpErrors) {
  for (const char* bad : {"raw.githubusercontent.com/x", "ftp://host/x", "http://"}) {
    StatusOr<std::string> body = FetchUrl(bad);
    EXPECT_EQ(body.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(body.status().message().find(bad), std::string::npos) << body.status();
  }
  LoopbackTraceServer server(BundledTraces());
  StatusOr<std::string> missing = FetchUrl(server.base_url() + "/no_such_file.csv");
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos) << missing.status();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string jobs, FetchUrl(server.base_url() + "/jobs.csv"));
  EXPECT_EQ(jobs, BundledJobsCsv());
  // The client speaks TLS: https:// is a real TLS attempt (failing here,
  // against a plain-HTTP server), not a bad URL.
  const std::string tls_url = "https://" + server.base_url().substr(7) + "/jobs.csv";
  StatusOr<std::string> tls = FetchUrl(tls_url);
  EXPECT_EQ(tls.status().code(), StatusCode::kUnavailable) << tls.status();
  EXPECT_NE(tls.status().message().find(tls_url), std::string::npos) << tls.status();
}

TEST(TraceDownloadTest, FetchUrlFollowsRedirectsAndBoundsTheBody) {
  LoopbackTraceServer server(BundledTraces());
  const std::string moved = server.moved_url("jobs.csv");
  uint64_t received = 0, total = 0;
  FetchOptions options;
  options.progress = [&](uint64_t r, uint64_t t) {
    received = r;
    total = t;
  };
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string jobs, FetchUrl(moved, options));
  EXPECT_EQ(jobs, BundledJobsCsv());
  EXPECT_EQ(received, jobs.size());
  EXPECT_EQ(total, jobs.size());
  options.max_redirects = 0;
  StatusOr<std::string> unfollowed = FetchUrl(moved, options);
  EXPECT_EQ(unfollowed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(unfollowed.status().message().find("HTTP 302"), std::string::npos)
      << unfollowed.status();
  options = FetchOptions();
  options.max_bytes = 10;
  StatusOr<std::string> big = FetchUrl(moved, options);
  EXPECT_EQ(big.status().code(), StatusCode::kIoError);
  EXPECT_NE(big.status().message().find("larger than the limit of 10 bytes"), std::string::npos)
      << big.status();
}

}  // namespace
}  // namespace zeus
