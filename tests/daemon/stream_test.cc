// `zeus daemon`'s live power end to end: the Server-Sent Event streams
// (50 subscribers sharing one poller at one rate, a client leaving
// mid-stream, the connection limit, the daemon stopping under open streams),
// /cpu/get_power from a fake powercap tree, and the bearer tokens (missing,
// wrong key, expired, tampered, wrong scope, disabled group, whoami) beside
// the peer-credential rule. Each test runs over both fake GPU libraries
// (libnvml, libamd_smi): nothing here needs more than power and limits.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zeus/daemon/token.h"
#include "zeus/util/file.h"

#include "tests/daemon/daemon_harness.h"
#include "tests/testing/raw_socket.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

int64_t NowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A raw SSE reader on the daemon's Unix socket: sends the request, then
// collects what arrives until Close() or the daemon closes.
class StreamReader {
 public:
  StreamReader(const std::string& socket_path, const std::string& target,
               const std::string& extra_headers = "") {
    fd_ = ConnectUnix(socket_path);
    if (fd_ < 0) return;
    const std::string request = "GET " + target +
                                " HTTP/1.1\r\nHost: zeusd\r\nAccept: text/event-stream\r\n" +
                                extra_headers + "\r\n";
    // A refused connection may be answered and closed before the request
    // is sent: what the daemon wrote is read all the same.
    (void)send(fd_, request.data(), request.size(), MSG_NOSIGNAL);
    thread_ = std::thread([this] {
      char buffer[4096];
      while (true) {
        const ssize_t n = read(fd_, buffer, sizeof(buffer));
        if (n <= 0) break;
        std::lock_guard<std::mutex> lock(mu_);
        data_.append(buffer, static_cast<size_t>(n));
      }
      closed_by_daemon_ = !closing_;
      done_ = true;
    });
  }
  ~StreamReader() { Close(); }

  // Closes the connection from this side (a client leaving mid-stream).
  void Close() {
    if (fd_ < 0) return;
    closing_ = true;
    shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(fd_);
    fd_ = -1;
  }

  bool connected() const { return fd_ >= 0; }
  bool done() const { return done_; }
  bool closed_by_daemon() const { return closed_by_daemon_; }
  std::string data() const {
    std::lock_guard<std::mutex> lock(mu_);
    return data_;
  }
  // The JSON of every complete event so far.
  std::vector<json> Events() const {
    const std::string d = data();
    std::vector<json> events;
    size_t at = 0;
    while ((at = d.find("data: ", at)) != std::string::npos) {
      const size_t end = d.find("\n\n", at);
      if (end == std::string::npos) break;
      events.push_back(json::parse(d.substr(at + 6, end - at - 6), nullptr, false));
      at = end;
    }
    return events;
  }
  size_t EventCount() const { return Events().size(); }

 private:
  int fd_ = -1;
  std::thread thread_;
  mutable std::mutex mu_;
  std::string data_;
  std::atomic<bool> closing_{false}, done_{false}, closed_by_daemon_{false};
};

class StreamTest : public ::testing::TestWithParam<FakeGpuVendor> {
 protected:
  void SetUp() override { daemon_.set_vendor(GetParam()); }

  json Stats() { return json::parse(Http(daemon_.socket(), "GET", "/streams").body); }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path(), 2};
};

INSTANTIATE_TEST_SUITE_P(Vendors, StreamTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(StreamTest, FiftySubscribersShareOnePollerAndALeavingClientIsForgotten) {
  ASSERT_TRUE(daemon_.Start({"--gpu-power-poll-hz", "20"}));
  // Nobody subscribes: the poller does not read.
  json idle = Stats();
  EXPECT_EQ(idle["gpu"]["subscribers"], 0);
  EXPECT_EQ(idle["gpu"]["polls"], 0);
  EXPECT_EQ(idle["gpu"]["period_us"], 50'000);

  std::vector<std::unique_ptr<StreamReader>> readers;
  for (int i = 0; i < 50; ++i) {
    readers.push_back(std::make_unique<StreamReader>(
        daemon_.socket(), i % 2 ? "/gpu/stream_power?gpu_ids=1" : "/gpu/stream_power"));
    ASSERT_TRUE(readers.back()->connected());
  }
  ASSERT_TRUE(WaitFor([&] { return Stats()["gpu"]["subscribers"] == 50; }, milliseconds(5000)))
      << Stats().dump();
  // Every reader gets the header and zeusd v0.5's events: one per device per
  // sample, the device's id beside its power.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& r : readers)
          if (r->EventCount() < 4) return false;
        return true;
      },
      milliseconds(10000)));
  for (int i = 0; i < 50; ++i) {
    const std::string head = readers[i]->data();
    EXPECT_THAT(head, HasSubstr("HTTP/1.1 200 OK"));
    EXPECT_THAT(head, HasSubstr("Content-Type: text/event-stream"));
    const std::vector<json> events = readers[i]->Events();
    ASSERT_TRUE(events[0].is_object()) << head;
    for (size_t e = 0; e < 4; ++e) {
      EXPECT_TRUE(events[e]["timestamp_ms"].is_number_integer()) << events[e].dump();
      EXPECT_EQ(events[e]["power_mw"], 150'000) << events[e].dump();
      EXPECT_EQ(events[e].size(), 3u) << events[e].dump();
      // Filtered to GPU 1, or both GPUs in turn, one sample after another.
      EXPECT_EQ(events[e]["gpu_id"], i % 2 ? 1 : static_cast<int>(e % 2)) << events[e].dump();
    }
    if (i % 2 == 0) {
      EXPECT_EQ(events[0]["timestamp_ms"], events[1]["timestamp_ms"]);
    }
  }

  // One rate whatever the number of subscribers: polls over a window at
  // about 20 Hz (not 50 x 20), and each subscriber saw about every poll.
  const uint64_t polls0 = Stats()["gpu"]["polls"];
  std::vector<size_t> events0;
  for (auto& r : readers) events0.push_back(r->EventCount());
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(milliseconds(1500));
  // A client leaves mid-stream.
  readers[7]->Close();
  std::this_thread::sleep_for(milliseconds(500));
  const uint64_t polls1 = Stats()["gpu"]["polls"];
  const double window_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate_hz = static_cast<double>(polls1 - polls0) / window_s;
  EXPECT_LE(rate_hz, 21.0) << polls1 - polls0 << " polls in " << window_s << " s";
  EXPECT_GE(rate_hz, 8.0) << polls1 - polls0 << " polls in " << window_s << " s";
  for (int i = 0; i < 50; ++i) {
    if (i == 7) continue;
    // One event per GPU of the stream per poll.
    const size_t got = (readers[i]->EventCount() - events0[i]) / (i % 2 ? 1 : 2);
    // Each poll is an event; a reader may skip only under a full queue.
    EXPECT_GE(got + 3, static_cast<size_t>((polls1 - polls0) * 0.8)) << "reader " << i;
    EXPECT_LE(got, polls1 - polls0 + 3) << "reader " << i;
  }
  ASSERT_TRUE(WaitFor([&] { return Stats()["gpu"]["subscribers"] == 49; }, milliseconds(3000)))
      << Stats().dump();

  // Everyone leaves: nothing is left subscribed and the poller stops.
  for (auto& r : readers) r->Close();
  ASSERT_TRUE(WaitFor(
      [&] {
        json s = Stats();
        return s["gpu"]["subscribers"] == 0 && s["gpu"]["polling"] == false;
      },
      milliseconds(3000)))
      << Stats().dump();
  const uint64_t stopped = Stats()["gpu"]["polls"];
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(Stats()["gpu"]["polls"], stopped);
  // The connections were released too: the daemon serves as before.
  EXPECT_EQ(Http(daemon_.socket(), "GET", "/time").status, 200);
}

TEST_P(StreamTest, StreamsCountAgainstMaxConnectionsAndEndWhenTheDaemonStops) {
  ASSERT_TRUE(daemon_.Start({"--max-connections", "4"}));
  std::vector<std::unique_ptr<StreamReader>> readers;
  for (int i = 0; i < 3; ++i) {
    readers.push_back(std::make_unique<StreamReader>(daemon_.socket(), "/gpu/stream_power"));
  }
  ASSERT_TRUE(WaitFor([&] { return Stats()["gpu"]["subscribers"] == 3; }, milliseconds(5000)));
  std::this_thread::sleep_for(milliseconds(200));  // The last /streams connection closes.
  // 3 streams + this request: the fourth stream would be the fifth connection.
  readers.push_back(std::make_unique<StreamReader>(daemon_.socket(), "/gpu/stream_power"));
  ASSERT_TRUE(WaitFor([&] { return readers[3]->EventCount() > 0; }, milliseconds(5000)));
  StreamReader refused(daemon_.socket(), "/gpu/stream_power");
  ASSERT_TRUE(WaitFor([&] { return refused.done(); }, milliseconds(5000))) << refused.data();
  EXPECT_THAT(refused.data(), HasSubstr("503"));
  EXPECT_THAT(refused.data(), HasSubstr("too many open connections"));

  // SIGTERM: every stream gets its last chunk and is closed by the daemon,
  // which exits cleanly.
  ASSERT_EQ(kill(daemon_.pid(), SIGTERM), 0);
  const int status = daemon_.WaitForExit(milliseconds(5000));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (auto& r : readers) {
    ASSERT_TRUE(WaitFor([&] { return r->done(); }, milliseconds(3000)));
    EXPECT_TRUE(r->closed_by_daemon());
    const std::string d = r->data();
    ASSERT_GE(d.size(), 5u);
    EXPECT_EQ(d.substr(d.size() - 5), "0\r\n\r\n") << d.substr(d.size() - 60);
  }
}

TEST_P(StreamTest, CpuPowerFromRaplEnergyOverTime) {
  const std::string root = dir_.path() + "/powercap";
  const std::string package = root + "/intel-rapl:0";
  for (const std::string& d : {root, package}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/name", "package-0\n"));
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/max_energy_range_uj", "100000000000\n"));
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/energy_uj", "5000\n"));
  // The package draws 10 W: 10 uJ per us, written every 2 ms.
  std::atomic<bool> stop{false};
  std::thread meter([&] {
    const auto start = std::chrono::steady_clock::now();
    while (!stop) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      (void)WriteFileAtomically(package + "/energy_uj", std::to_string(5000 + 10 * us) + "\n");
      std::this_thread::sleep_for(milliseconds(2));
    }
  });
  daemon_.set_powercap_root(root);
  ASSERT_TRUE(daemon_.Start());
  // The meter thread lags on a busy machine, so one poll may see less or
  // more than its period's energy: the values are read until one is near
  // 10 W (the waits are bounds, not targets).
  const auto near_10_w = [](const json& power) {
    const double cpu_mw = power["cpu_mw"];
    return cpu_mw > 5'000 && cpu_mw < 15'000;
  };
  std::string last;
  int last_status = 0;
  EXPECT_TRUE(WaitFor(
      [&] {
        HttpResult one = Http(daemon_.socket(), "GET", "/cpu/get_power?cpu_ids=0");
        last = one.body;
        last_status = one.status;
        if (one.status != 200) return true;  // Reported below.
        json body = json::parse(one.body);
        EXPECT_TRUE(body["timestamp_ms"].is_number_integer()) << one.body;
        EXPECT_TRUE(body["power_mw"]["0"]["dram_mw"].is_null()) << one.body;
        return near_10_w(body["power_mw"]["0"]);
      },
      milliseconds(60'000)))
      << last;
  ASSERT_EQ(last_status, 200) << last;
  EXPECT_EQ(Http(daemon_.socket(), "GET", "/cpu/get_power?cpu_ids=3").status, 400);

  StreamReader reader(daemon_.socket(), "/cpu/stream_power?cpu_ids=0");
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const json& e : reader.Events()) {
          if (near_10_w(e)) return true;
        }
        return false;
      },
      milliseconds(60'000)));
  ASSERT_GE(reader.EventCount(), 1u);
  for (const json& e : reader.Events()) {
    // zeusd v0.5's CPU event: the id, package and DRAM power (null: no DRAM).
    EXPECT_EQ(e.size(), 4u) << e.dump();
    EXPECT_EQ(e["cpu_id"], 0) << e.dump();
    EXPECT_TRUE(e["dram_mw"].is_null()) << e.dump();
    EXPECT_TRUE(e["timestamp_ms"].is_number_integer()) << e.dump();
    EXPECT_GE(e["cpu_mw"].get<double>(), 0.0) << e.dump();
  }
  EXPECT_EQ(Stats()["cpu"]["period_us"], 100'000);
  reader.Close();
  stop = true;
  meter.join();
}

// Tokens. The daemon's key is a file's bytes; tokens come from the CLI
// (`zeus daemon token issue`) or, for the expired and odd ones, from the
// library.
class TokenTest : public ::testing::TestWithParam<FakeGpuVendor> {
 protected:
  void SetUp() override {
    daemon_.set_vendor(GetParam());
    key_path_ = dir_.path() + "/signing.key";
    ZEUS_ASSERT_OK(WriteFileAtomically(key_path_, key_));
    ASSERT_EQ(chmod(key_path_.c_str(), 0600), 0);
    // The test runner's primary group may change settings (peer rule).
    ASSERT_TRUE(daemon_.Start({"--signing-key-path", key_path_, "--enable", "gpu-read,gpu-control",
                               "--group", std::to_string(getgid())}));
  }

  // `zeus daemon token issue ...` run as a command; its stdout.
  std::string Cli(const std::string& args, int* exit_status = nullptr) {
    const std::string command = std::string(ZEUS_BINARY) + " daemon token issue " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[512];
    while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
    const int status = pipe != nullptr ? pclose(pipe) : -1;
    if (exit_status != nullptr) *exit_status = status;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  HttpResult Get(const std::string& target, const std::string& token) {
    return Exchange("GET", target, token);
  }

  HttpResult Exchange(const std::string& method, const std::string& target,
                      const std::string& token) {
    std::string raw = method + " " + target + " HTTP/1.1\r\nHost: zeusd\r\nConnection: close\r\n";
    if (!token.empty()) raw += "Authorization: Bearer " + token + "\r\n";
    return RawHttp(daemon_.socket(), raw + "Content-Length: 0\r\n\r\n");
  }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path(), 2};
  const std::string key_ = "a shared secret of this test, 32+ bytes\n";
  std::string key_path_;
};

INSTANTIATE_TEST_SUITE_P(Vendors, TokenTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(TokenTest, DiscoverAndTimeAreOpenAndSayWhatIsRequired) {
  HttpResult discover = Get("/discover", "");
  ASSERT_EQ(discover.status, 200);
  json d = json::parse(discover.body);
  EXPECT_EQ(d["auth_required"], true);
  EXPECT_EQ(d["enabled_api_groups"], json({"gpu-read", "gpu-control"}));
  EXPECT_EQ(Get("/time", "").status, 200);
  EXPECT_EQ(Get("/time", "garbage").status, 200);
}

TEST_P(TokenTest, MissingWrongKeyExpiredOrTamperedTokensAre401) {
  HttpResult none = Get("/gpu/get_power", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_THAT(none.body, HasSubstr("Authorization: Bearer"));
  const std::string good = *IssueToken(key_, TokenClaims{"alice", {"gpu-read"}, NowS() + 3600});
  EXPECT_EQ(Get("/gpu/get_power", good).status, 200);

  const std::string wrong_key =
      *IssueToken("another key", TokenClaims{"alice", {"gpu-read"}, NowS() + 3600});
  HttpResult wrong = Get("/gpu/get_power", wrong_key);
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(wrong.body, HasSubstr("invalid token"));

  const std::string expired = *IssueToken(key_, TokenClaims{"alice", {"gpu-read"}, NowS() - 5});
  HttpResult old = Get("/gpu/get_power", expired);
  EXPECT_EQ(old.status, 401);
  EXPECT_THAT(old.body, HasSubstr("expired"));

  // The payload changed (scopes widened) under the old signature.
  const std::string admin =
      *IssueToken("x", TokenClaims{"alice", {"gpu-read", "gpu-control"}, NowS() + 3600});
  const size_t d1 = good.find('.'), d2 = good.rfind('.');
  const size_t a1 = admin.find('.'), a2 = admin.rfind('.');
  const std::string tampered = good.substr(0, d1) + admin.substr(a1, a2 - a1) + good.substr(d2);
  EXPECT_EQ(Get("/gpu/get_power", tampered).status, 401);
  // "alg": "none" with no signature.
  const std::string unsigned_token =
      "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + good.substr(d1 + 1, d2 - d1 - 1) + ".";
  EXPECT_EQ(Get("/gpu/get_power", unsigned_token).status, 401);
  EXPECT_EQ(Get("/gpu/get_power", "not.a.token").status, 401);
  // Streams too.
  EXPECT_EQ(Get("/gpu/stream_power", "").status, 401);
}

TEST_P(TokenTest, ScopesAndDisabledGroups) {
  int status = 0;
  const std::string reader =
      Cli("--signing-key-path " + key_path_ + " --sub alice --scopes gpu-read --expires-in 3600",
          &status);
  ASSERT_EQ(status, 0) << reader;
  const std::string cpu_only =
      Cli("--signing-key-path " + key_path_ + " --user bob --scope cpu-read --expires never");
  const std::string controller = Cli("--signing-key-path " + key_path_ +
                                     " --sub carol --scopes gpu-read,gpu-control --expires 1h");
  // Missing scope: 403 naming it.
  HttpResult lacks = Get("/gpu/get_power", cpu_only);
  EXPECT_EQ(lacks.status, 403);
  EXPECT_THAT(lacks.body, HasSubstr("lacks required scope 'gpu-read'"));
  EXPECT_EQ(
      Exchange("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true", reader)
          .status,
      403);
  // Both rules: the token's scope and the peer credentials (this process is
  // in --group), so the change is made.
  EXPECT_EQ(Exchange("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true",
                     controller)
                .status,
            200);
  EXPECT_EQ(daemon_.Gpus()[0].power_limit_mw, 300'000u);
  // The disabled group is 404 whatever the token (and without one).
  HttpResult disabled = Get("/cpu/get_power", cpu_only);
  EXPECT_EQ(disabled.status, 404);
  EXPECT_THAT(disabled.body, HasSubstr("API group 'cpu-read' is not enabled"));
  EXPECT_EQ(Get("/cpu/stream_power", "").status, 404);

  // whoami.
  HttpResult who = Get("/auth/whoami", reader);
  ASSERT_EQ(who.status, 200) << who.body;
  json w = json::parse(who.body);
  EXPECT_EQ(w["sub"], "alice");
  EXPECT_EQ(w["scopes"], json({"gpu-read"}));
  EXPECT_NEAR(w["exp"].get<double>(), static_cast<double>(NowS() + 3600), 30);
  json never = json::parse(Get("/auth/whoami", cpu_only).body);
  EXPECT_EQ(never["sub"], "bob");
  EXPECT_FALSE(never.contains("exp"));
  EXPECT_EQ(Get("/auth/whoami", "").status, 401);

  // The CLI refuses what it cannot sign.
  int bad = 0;
  EXPECT_THAT(
      Cli("--signing-key-path " + key_path_ + " --sub x --scopes gpu-write --expires 1h", &bad),
      HasSubstr("unknown API group \"gpu-write\""));
  EXPECT_NE(bad, 0);
  EXPECT_THAT(
      Cli("--signing-key-path " + key_path_ + " --sub x --scopes gpu-read --expires 5y", &bad),
      HasSubstr("--expires \"5y\""));
  EXPECT_NE(bad, 0);
}

class TokenWithoutAuthTest : public ::testing::TestWithParam<FakeGpuVendor> {};

INSTANTIATE_TEST_SUITE_P(Vendors, TokenWithoutAuthTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(TokenWithoutAuthTest, WhoamiIs404AndDiscoverSaysNoAuth) {
  TempDir dir;
  DaemonProcess daemon(dir.path(), 1);
  daemon.set_vendor(GetParam());
  ASSERT_TRUE(daemon.Start());
  EXPECT_EQ(Http(daemon.socket(), "GET", "/auth/whoami").status, 404);
  json d = json::parse(Http(daemon.socket(), "GET", "/discover").body);
  EXPECT_EQ(d["auth_required"], false);
  EXPECT_EQ(d["enabled_api_groups"], json({"gpu-control", "gpu-read", "cpu-read"}));
}

}  // namespace
}  // namespace zeus::testing
