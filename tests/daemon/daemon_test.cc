// `zeus daemon` end to end: the built binary over the fake libnvml (GPU state
// shared through a file), clients in forked processes. Every test but the
// locked clocks' (DaemonVendorTest) runs over the fake libamd_smi too. Every
// limit a client changes comes back when it ends (SIGKILL, SIGTERM, exit) or
// its lease times out; a second client is refused while one holds a GPU; a
// daemon killed mid-change puts the originals back when restarted; only root
// and the control group may change; hostile requests get a 4xx and the daemon
// lives.

#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/daemon/daemon_harness.h"
#include "tests/testing/raw_socket.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr unsigned int kDefaultMw = 700'000;  // The fake's default limit.

std::string SetLimit(int gpu, unsigned int mw) {
  return "/gpu/set_power_limit?gpu_ids=" + std::to_string(gpu) +
         "&power_limit_mw=" + std::to_string(mw) + "&block=true";
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Readable by `nobody` (the authorisation tests' clients).
    chmod(dir_.path().c_str(), 0755);
  }

  bool AllDefault() {
    for (const FakeGpuSettings& g : daemon_.Gpus()) {
      if (g.power_limit_mw != kDefaultMw || g.persistence != 0 || g.gpu_clocks_max_mhz != 0 ||
          g.mem_clocks_max_mhz != 0) {
        return false;
      }
    }
    return true;
  }

  // Whether the fake GPUs have a persistence mode (NVIDIA; AMD GPUs have
  // none).
  bool HasPersistence() const { return daemon_.vendor().name == "nvml"; }

  // A client that sets `mw` on `gpu` (and persistence mode on, where the
  // GPUs have one), reports the two statuses, then holds until killed.
  std::unique_ptr<ClientProcess> HoldingClient(int gpu, unsigned int mw) {
    const std::string sock = daemon_.socket();
    const bool persistence = HasPersistence();
    auto client =
        std::make_unique<ClientProcess>([sock, gpu, mw, persistence](ClientProcess& self) -> int {
          HttpResult a = Http(sock, "POST", SetLimit(gpu, mw));
          HttpResult b{200, ""};
          if (persistence) {
            b = Http(sock, "POST",
                     "/gpu/set_persistence_mode?gpu_ids=" + std::to_string(gpu) +
                         "&enabled=true&block=true");
          }
          self.Report(std::to_string(a.status) + " " + std::to_string(b.status) + " " + a.body +
                      b.body);
          ClientProcess::HoldForever();
        });
    EXPECT_EQ(client->NextReport(), "200 200 ");
    return client;
  }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path()};
};

// The same daemon over each fake GPU vendor (NVML, AMD SMI).
class DaemonVendorTest : public DaemonTest, public ::testing::WithParamInterface<FakeGpuVendor> {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    daemon_.set_vendor(GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Vendors, DaemonVendorTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(DaemonVendorTest, ClientKilledBySigkillGetsItsLimitsPutBackWithinOneSecond) {
  ASSERT_TRUE(daemon_.Start());
  auto client = HoldingClient(1, 250'000);
  EXPECT_EQ(daemon_.Gpus()[1].power_limit_mw, 250'000u);
  EXPECT_EQ(daemon_.Gpus()[1].persistence, HasPersistence() ? 1 : 0);
  HttpResult leases = Http(daemon_.socket(), "GET", "/leases");
  EXPECT_THAT(leases.body, HasSubstr("\"pid\":" + std::to_string(client->pid())));
  EXPECT_THAT(leases.body, HasSubstr("\"original_power_limit_mw\":700000"));
  client->Kill(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
  EXPECT_TRUE(
      WaitFor([&] { return Http(daemon_.socket(), "GET", "/leases").body == "{\"leases\":[]}"; },
              milliseconds(1000)));
  EXPECT_EQ(ReadFileToString(daemon_.state_file()).value_or("?").find("\"pid\""),
            std::string::npos);
}

TEST_P(DaemonVendorTest, ClientEndingBySigtermOrExitGetsItsLimitsPutBack) {
  ASSERT_TRUE(daemon_.Start());
  auto client = HoldingClient(0, 300'000);
  EXPECT_EQ(daemon_.Gpus()[0].power_limit_mw, 300'000u);
  client->Kill(SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));

  const std::string sock = daemon_.socket();
  ClientProcess exiting([sock](ClientProcess& self) {
    self.Report(std::to_string(Http(sock, "POST", SetLimit(2, 400'000)).status));
    return 0;
  });
  EXPECT_EQ(exiting.NextReport(), "200");
  EXPECT_EQ(WEXITSTATUS(exiting.Wait()), 0);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
  // The change was made: the fake's log has it, then the original.
  const std::string log = ReadFileToString(daemon_.gpu_log()).value_or("");
  EXPECT_THAT(log, HasSubstr("set_power_limit 2 400000\nset_power_limit 2 700000\n"));
}

// NVML: each locked domain is reset (AMD: the next test).
TEST_F(DaemonTest, LockedClocksAreResetWhenTheClientEnds) {
  ASSERT_TRUE(daemon_.Start());
  const std::string sock = daemon_.socket();
  auto client = std::make_unique<ClientProcess>([sock](ClientProcess& self) -> int {
    HttpResult a = Http(
        sock, "POST", "/gpu/set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=900&max_clock_mhz=1500");
    HttpResult b = Http(sock, "POST", "/gpu/1/set_mem_locked_clocks",
                        "{\"min_clock_mhz\": 2619, \"max_clock_mhz\": 2619, \"block\": true}");
    self.Report(std::to_string(a.status) + " " + std::to_string(b.status) + " " + a.body + b.body);
    ClientProcess::HoldForever();
  });
  EXPECT_EQ(client->NextReport(), "200 200 ");
  FakeGpuSettings g = daemon_.Gpus()[1];
  EXPECT_EQ(g.gpu_clocks_min_mhz, 900u);
  EXPECT_EQ(g.gpu_clocks_max_mhz, 1500u);
  EXPECT_EQ(g.mem_clocks_max_mhz, 2619u);
  EXPECT_THAT(Http(sock, "GET", "/leases").body, HasSubstr("\"reset_gpu_locked_clocks\":true"));
  client->Kill(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
  EXPECT_THAT(ReadFileToString(daemon_.gpu_log()).value_or(""),
              HasSubstr("reset_gpu_locked_clocks 1\nreset_mem_locked_clocks 1\n"));
}

// AMD SMI cannot reset one clock domain: a client's reset of one domain is
// refused (400, as zeusd's), a reset of every domain and the end of a lease
// lock each domain to its whole range of levels instead (UnlockClocks).
TEST_P(DaemonVendorTest, AmdLocksAreLiftedToTheWholeRangeNotResetAlone) {
  if (GetParam().name != "amdsmi") GTEST_SKIP() << "AMD SMI only";
  ASSERT_TRUE(daemon_.Start());
  const std::string sock = daemon_.socket();
  auto client = std::make_unique<ClientProcess>([sock](ClientProcess& self) -> int {
    std::string statuses;
    for (const char* request :
         {"set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=1300&max_clock_mhz=1300",
          "reset_gpu_locked_clocks?gpu_ids=1",
          "set_mem_locked_clocks?gpu_ids=1&min_clock_mhz=900&max_clock_mhz=900",
          "reset_locked_clocks?gpu_ids=1",
          "set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=500&max_clock_mhz=1300"}) {
      statuses += std::to_string(Http(sock, "POST", std::string("/gpu/") + request).status) + " ";
    }
    self.Report(statuses);
    ClientProcess::HoldForever();
  });
  EXPECT_EQ(client->NextReport(), "200 400 200 200 200 ");
  client->Kill(SIGKILL);
  const std::string expected =
      "set_gpu_locked_clocks 1 1300 1300\nset_mem_locked_clocks 1 900 900\n"
      "set_gpu_locked_clocks 1 500 2100\nset_mem_locked_clocks 1 900 1300\n"   // Reset of all.
      "set_gpu_locked_clocks 1 500 1300\nset_gpu_locked_clocks 1 500 2100\n";  // Lease end.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFileToString(daemon_.gpu_log()).value_or("").find(expected) != std::string::npos;
      },
      milliseconds(1000)))
      << ReadFileToString(daemon_.gpu_log()).value_or("");
}

TEST_P(DaemonVendorTest, LeaseTimesOutWhileTheClientLives) {
  ASSERT_TRUE(daemon_.Start({"--lease-timeout-s", "0.3"}));
  auto client = HoldingClient(3, 200'000);
  EXPECT_EQ(daemon_.Gpus()[3].power_limit_mw, 200'000u);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
  EXPECT_EQ(kill(client->pid(), 0), 0) << "the client must still be alive";
  // Logged once the settings are back.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFileToString(daemon_.log()).value_or("").find("lease timed out") !=
               std::string::npos;
      },
      milliseconds(1000)));
}

TEST_P(DaemonVendorTest, SecondClientIsRefusedWhileTheFirstHoldsTheGpu) {
  ASSERT_TRUE(daemon_.Start());
  auto first = HoldingClient(0, 200'000);
  HttpResult refused = Http(daemon_.socket(), "POST", SetLimit(0, 500'000));
  EXPECT_EQ(refused.status, 409);
  EXPECT_THAT(refused.body, HasSubstr("GPU 0 is held by pid " + std::to_string(first->pid())));
  // Several GPUs, one held: nothing changes.
  refused = Http(daemon_.socket(), "POST",
                 "/gpu/set_power_limit?gpu_ids=1,0&power_limit_mw=500000&block=true");
  EXPECT_EQ(refused.status, 409);
  EXPECT_THAT(refused.body, HasSubstr("\"errors\""));
  EXPECT_EQ(daemon_.Gpus()[0].power_limit_mw, 200'000u);
  EXPECT_EQ(daemon_.Gpus()[1].power_limit_mw, kDefaultMw);
  first->Kill(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
}

// The daemon stops (SIGKILL) at `point` of a client's first change; started
// again, it puts the original back before it serves.
void KillDaemonAt(DaemonTest* test, DaemonProcess& daemon, const std::string& dir,
                  const std::string& point, unsigned int expected_while_paused_mw) {
  const std::string marker = dir + "/paused";
  ASSERT_TRUE(
      daemon.Start({}, {{"ZEUSD_TEST_PAUSE_AT", point}, {"ZEUSD_TEST_PAUSE_MARKER", marker}}));
  const std::string sock = daemon.socket();
  ClientProcess client([sock](ClientProcess&) -> int {
    Http(sock, "POST", SetLimit(2, 150'000));
    ClientProcess::HoldForever();
  });
  ASSERT_TRUE(WaitFor([&] { return access(marker.c_str(), F_OK) == 0; }, milliseconds(5000)));
  const std::string state = ReadFileToString(daemon.state_file()).value_or("");
  EXPECT_THAT(state, HasSubstr("\"original_power_limit_mw\": 700000"));
  EXPECT_EQ(daemon.Gpus()[2].power_limit_mw, expected_while_paused_mw);
  daemon.Kill(SIGKILL);
  client.Kill(SIGKILL);
  ASSERT_TRUE(daemon.Start());
  EXPECT_EQ(daemon.Gpus()[2].power_limit_mw, kDefaultMw);
  EXPECT_EQ(ReadFileToString(daemon.state_file()).value_or("").find("\"pid\""), std::string::npos);
  (void)test;
}

TEST_P(DaemonVendorTest, DaemonKilledBetweenRecordingAndChangingRestartsClean) {
  KillDaemonAt(this, daemon_, dir_.path(), "after_record", kDefaultMw);
}

TEST_P(DaemonVendorTest, DaemonKilledAfterChangingPutsTheOriginalBackWhenRestarted) {
  KillDaemonAt(this, daemon_, dir_.path(), "after_change", 150'000);
  EXPECT_THAT(ReadFileToString(daemon_.log()).value_or(""), HasSubstr("was left changed by pid"));
}

// The daemon sees every GPU in its backend's order whatever visible-devices
// variables it inherits: clients name GPUs by NVML / AMD SMI index (ZeusdGpu
// sends the index after CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES).
TEST_P(DaemonVendorTest, InheritedVisibleDevicesDoNotRenumberTheGpus) {
  ASSERT_TRUE(daemon_.Start({}, {{"CUDA_VISIBLE_DEVICES", "2,3"}, {"HIP_VISIBLE_DEVICES", "3"}}))
      << ReadFileToString(daemon_.log()).value_or("");
  const std::string sock = daemon_.socket();
  EXPECT_THAT(Http(sock, "GET", "/discover").body, HasSubstr("\"gpu_ids\":[0,1,2,3]"));
  ClientProcess client([sock](ClientProcess& self) -> int {
    self.Report(std::to_string(Http(sock, "POST", SetLimit(1, 300'000)).status));
    ClientProcess::HoldForever();
  });
  EXPECT_EQ(client.NextReport(), "200");
  std::vector<FakeGpuSettings> gpus = daemon_.Gpus();
  EXPECT_EQ(gpus[1].power_limit_mw, 300'000u);
  EXPECT_EQ(gpus[0].power_limit_mw, kDefaultMw);
  EXPECT_EQ(gpus[3].power_limit_mw, kDefaultMw);
  client.Kill(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
}

TEST_P(DaemonVendorTest, MalformedStateFileKeepsTheDaemonFromStarting) {
  ASSERT_TRUE(WriteFileAtomically(daemon_.state_file(), "{\"version\": 1, \"leases\": [{}]}").ok());
  EXPECT_FALSE(daemon_.Start());
  EXPECT_THAT(ReadFileToString(daemon_.log()).value_or(""),
              HasSubstr(daemon_.state_file() + ": leases[0].gpu: required"));
  // Nothing was forgotten: the file is as it was.
  EXPECT_EQ(ReadFileToString(daemon_.state_file()).value_or(""),
            "{\"version\": 1, \"leases\": [{}]}");
}

// A child that becomes `nobody`, with `groups` as its supplementary groups,
// and reports the status and body of one request.
std::string AsNobody(const std::string& sock, std::vector<gid_t> groups, const std::string& method,
                     const std::string& target) {
  ClientProcess client([&](ClientProcess& self) {
    if (setgroups(groups.size(), groups.data()) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      self.Report("cannot drop privileges");
      return 1;
    }
    HttpResult r = Http(sock, method, target);
    self.Report(std::to_string(r.status) + " " + r.body);
    return 0;
  });
  std::string report = client.NextReport();
  client.Wait();
  return report;
}

TEST_P(DaemonVendorTest, OnlyRootAndTheControlGroupMayChange) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop a child to nobody";
  constexpr gid_t kGroup = 4242;
  ASSERT_TRUE(daemon_.Start({"--group", std::to_string(kGroup)}));
  std::string refused = AsNobody(daemon_.socket(), {}, "POST", SetLimit(0, 300'000));
  EXPECT_THAT(refused, HasSubstr("403 "));
  EXPECT_THAT(refused, HasSubstr("may not change GPU settings: only root and members of group"));
  EXPECT_THAT(refused, HasSubstr("4242"));
  EXPECT_TRUE(AllDefault());
  // Reads are open by default.
  EXPECT_THAT(AsNobody(daemon_.socket(), {}, "GET", "/gpu/get_power_limit"), HasSubstr("200 "));
  // A member may; its change comes back when it exits.
  EXPECT_THAT(AsNobody(daemon_.socket(), {kGroup}, "POST", SetLimit(0, 300'000)),
              HasSubstr("200 "));
  EXPECT_TRUE(WaitFor([&] { return AllDefault(); }, milliseconds(1000)));
  EXPECT_THAT(ReadFileToString(daemon_.gpu_log()).value_or(""),
              HasSubstr("set_power_limit 0 300000\n"));
}

TEST_P(DaemonVendorTest, RestrictedReadsRefuseNonMembersAndTcp) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop a child to nobody";
  ASSERT_TRUE(daemon_.Start({"--restrict-reads", "--tcp", "127.0.0.1:0"}));
  std::string refused = AsNobody(daemon_.socket(), {}, "GET", "/gpu/get_power_limit");
  EXPECT_THAT(refused, HasSubstr("403 "));
  EXPECT_THAT(refused, HasSubstr("this daemon restricts reads"));
  EXPECT_THAT(AsNobody(daemon_.socket(), {}, "GET", "/discover"), HasSubstr("200 "));
}

// The TCP port of a daemon started with --tcp 127.0.0.1:0, from its
// "serving ... on SOCKET and HOST:PORT" line; 0 when none appears.
int TcpPortOf(DaemonProcess& daemon) {
  int port = 0;
  WaitFor(
      [&] {
        std::string out = ReadFileToString(daemon.log()).value_or("");
        size_t at = out.find("and 127.0.0.1:");
        if (at == std::string::npos) return false;
        port = std::atoi(out.c_str() + at + 14);
        return port > 0;
      },
      milliseconds(2000));
  return port;
}

TEST_P(DaemonVendorTest, TcpServesReadsButRefusesChanges) {
  ASSERT_TRUE(daemon_.Start({"--tcp", "127.0.0.1:0"}));
  const int port = TcpPortOf(daemon_);
  ASSERT_GT(port, 0);
  HttpResult read = Http("", "GET", "/gpu/get_power_limit_constraints?gpu_ids=1", "", port);
  EXPECT_EQ(read.status, 200);
  EXPECT_THAT(read.body, HasSubstr("\"min_power_limit_mw\":100000"));
  HttpResult refused = Http("", "POST", SetLimit(0, 300'000), "", port);
  EXPECT_EQ(refused.status, 403);
  EXPECT_THAT(refused.body, HasSubstr("changes are accepted only on the Unix socket"));
  EXPECT_THAT(refused.body, HasSubstr("--tcp-changes"));
}

// The original zeusd accepts changes over TCP; with --tcp-changes so do we,
// held by one lease of all TCP clients and put back when it is released or
// the daemon stops.
TEST_P(DaemonVendorTest, TcpChangesWhenTheOperatorEnablesThem) {
  ASSERT_TRUE(daemon_.Start({"--tcp", "127.0.0.1:0", "--tcp-changes"}));
  const int port = TcpPortOf(daemon_);
  ASSERT_GT(port, 0);
  HttpResult changed = Http("", "POST", SetLimit(0, 300'000), "", port);
  ASSERT_EQ(changed.status, 200) << changed.body;
  EXPECT_FALSE(AllDefault());
  // A Unix-socket client may not take the GPU the TCP clients hold.
  HttpResult held = Http(daemon_.socket(), "POST", SetLimit(0, 500'000));
  EXPECT_EQ(held.status, 409) << held.body;
  EXPECT_THAT(held.body, HasSubstr("GPU 0 is held by the TCP clients"));
  // Another TCP request (another connection) is the same holder.
  EXPECT_EQ(Http("", "POST", SetLimit(0, 400'000), "", port).status, 200);
  HttpResult released = Http("", "POST", "/lease/release", "", port);
  EXPECT_EQ(released.status, 200) << released.body;
  EXPECT_THAT(released.body, HasSubstr("\"released_gpus\":1"));
  EXPECT_TRUE(AllDefault());
  // Held again, then put back when the daemon stops.
  EXPECT_EQ(Http("", "POST", SetLimit(1, 300'000), "", port).status, 200);
  EXPECT_FALSE(AllDefault());
  ASSERT_EQ(kill(daemon_.pid(), SIGTERM), 0);
  const int status = daemon_.WaitForExit(milliseconds(5000));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_TRUE(AllDefault());
  EXPECT_THAT(ReadFileToString(daemon_.log()).value_or(""),
              HasSubstr("accepting GPU changes on 127.0.0.1 without authentication"));
}

TEST_P(DaemonVendorTest, HostileRequestsGetA4xxAndTheDaemonLives) {
  ASSERT_TRUE(daemon_.Start({"--request-timeout-s", "0.3", "--max-body-bytes", "1024"}));
  const std::string sock = daemon_.socket();
  struct Case {
    std::string method, target, body;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"POST", SetLimit(0, 50'000), "", 400, "outside GPU 0's range [100000, 700000] mW"},
      {"POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=abc", "", 400,
       "power_limit_mw \\\"abc\\\": expected an integer"},
      {"POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=-5", "", 400, "expected an integer"},
      {"POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=99999999999", "", 400,
       "expected an integer in [0, 4294967295]"},
      {"POST", "/gpu/set_power_limit?power_limit_mw=200000", "", 400, "missing parameter gpu_ids"},
      {"POST", SetLimit(7, 200'000), "", 400, "GPU index 7 does not exist (this daemon has 4"},
      {"POST", "/gpu/set_power_limit?gpu_ids=x&power_limit_mw=200000", "", 400, "gpu_ids"},
      {"POST", "/gpu/set_power_limit?gpu_ids=0&gpu_ids=1&power_limit_mw=1", "", 400, "given twice"},
      {"POST", "/gpu/set_persistence_mode?gpu_ids=0&enabled=maybe", "", 400,
       "enabled \\\"maybe\\\": expected true or false"},
      {"POST", "/gpu/0/set_power_limit", "{\"power_limit_mw\": \"high\"}", 400,
       "request body: field 'power_limit_mw'"},
      {"POST", "/gpu/0/set_power_limit", "{not json", 400, "not valid JSON"},
      {"POST", "/gpu/0/set_power_limit", std::string(2000, ' '), 413, "exceeds the limit of 1024"},
      {"GET", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=200000", "", 405, "not allowed"},
      {"GET", "/gpu/get_power?gpu_ids=%zz", "", 400, "bad %-escape"},
      {"GET", "/nowhere", "", 404, "no route /nowhere"},
      {"POST", "/gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=1500&max_clock_mhz=900", "", 400,
       "min_clock_mhz 1500 is above max_clock_mhz 900"},
      {"POST", "/gpu/set_mem_locked_clocks?gpu_ids=0&min_clock_mhz=1500", "", 400,
       "missing parameter max_clock_mhz"},
  };
  for (const Case& c : cases) {
    HttpResult r = Http(sock, c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr(c.message)) << c.method << " " << c.target;
  }
  EXPECT_TRUE(AllDefault());
  // Malformed request line, oversized headers, a slow sender.
  EXPECT_EQ(RawHttp(sock, "HELLO\r\n\r\n").status, 400);
  EXPECT_EQ(
      RawHttp(sock, "GET /time HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").status,
      431);
  HttpResult slow =
      RawHttp(sock, "POST /gpu/set_power_limit HTTP/1.1\r\nContent-Length: 10\r\n\r\nab");
  EXPECT_EQ(slow.status, 408);
  EXPECT_THAT(slow.body, HasSubstr("request not received within 300 ms"));
  EXPECT_EQ(Http(sock, "GET", "/time").status, 200);
  EXPECT_EQ(kill(daemon_.pid(), 0), 0);
}

TEST_P(DaemonVendorTest, HeadAndWrongMethodAnswersKeepTheConnectionFramed) {
  // HEAD on a GET route: 405 naming the allowed method in Allow, and no
  // body, so the next answer on the same connection starts where it should.
  ASSERT_TRUE(daemon_.Start());
  const int fd = ConnectUnix(daemon_.socket());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd,
                      "HEAD /time HTTP/1.1\r\nHost: zeusd\r\n\r\n"
                      "POST /time HTTP/1.1\r\nHost: zeusd\r\nContent-Length: 0\r\n\r\n"
                      "GET /time HTTP/1.1\r\nHost: zeusd\r\nConnection: close\r\n\r\n"));
  const std::string wire = ReadToClose(fd, 10);
  close(fd);
  const size_t post = wire.find("\r\n\r\nHTTP/1.1 405 Method Not Allowed\r\n");
  ASSERT_NE(post, std::string::npos) << wire;
  const std::string head_answer = wire.substr(0, post);
  EXPECT_THAT(head_answer, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(head_answer, HasSubstr("\r\nAllow: GET\r\n"));
  EXPECT_THAT(wire.substr(post), HasSubstr("\r\nAllow: GET\r\n"));
  EXPECT_THAT(wire.substr(post),
              HasSubstr("{\"error\":\"POST /time: method not allowed (use GET)\"}"
                        "HTTP/1.1 200 OK\r\n"));
  // A client that waits for 100 Continue before sending its body is told to.
  const int fd2 = ConnectUnix(daemon_.socket());
  ASSERT_GE(fd2, 0);
  ASSERT_TRUE(SendAll(fd2,
                      "POST /gpu/0/set_power_limit HTTP/1.1\r\nHost: zeusd\r\nConnection: "
                      "close\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                      "Content-Length: 2\r\n\r\n"));
  EXPECT_EQ(ReadOneResponse(fd2, 10).substr(0, 25), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(SendAll(fd2, "{}"));
  EXPECT_THAT(ReadToClose(fd2, 10), StartsWith("HTTP/1.1 400 "));
  close(fd2);
}

TEST_P(DaemonVendorTest, ReadsFollowTheZeusdApi) {
  ASSERT_TRUE(daemon_.Start());
  const std::string sock = daemon_.socket();
  HttpResult discover = Http(sock, "GET", "/discover");
  EXPECT_EQ(discover.status, 200);
  EXPECT_THAT(discover.body, HasSubstr("\"gpu_ids\":[0,1,2,3]"));
  EXPECT_THAT(Http(sock, "GET", "/gpu/get_power?gpu_ids=0,2").body,
              HasSubstr("\"power_mw\":{\"0\":150000,\"2\":150000}"));
  EXPECT_THAT(Http(sock, "GET", "/gpu/get_persistence_mode?gpu_ids=3").body,
              HasSubstr(HasPersistence() ? "{\"3\":{\"enabled\":false}}"
                                         : "GPU 3: AMD GPUs have no persistence mode"));
  EXPECT_THAT(Http(sock, "GET", "/gpu/get_cumulative_energy?gpu_ids=1").body,
              HasSubstr("{\"1\":{\"energy_mj\":"));
  EXPECT_THAT(Http(sock, "GET", "/time").body, HasSubstr("\"timestamp_ms\":"));
}

TEST_P(DaemonVendorTest, DiscoverDescribesEveryGpuAsTheOriginalClientRequires) {
  ASSERT_TRUE(daemon_.Start());
  HttpResult discover = Http(daemon_.socket(), "GET", "/discover");
  EXPECT_EQ(discover.status, 200);
  // In lspci -D form: the fake libnvml's NVML bus ids "00000000:1B:00.0",
  // "...:3B:...", and the fake libamd_smi's BDFs (buses 0xc1, 0xc2, ...).
  const bool nvml = HasPersistence();
  const std::string model = nvml ? "Fake H100 " : "Fake MI300X ";
  EXPECT_THAT(
      discover.body,
      HasSubstr("{\"cumulative_energy_available\":true,\"id\":0,\"name\":\"" + model +
                "0\",\"pci_address\":\"" + (nvml ? "0000:1b:00.0" : "0000:c1:00.0") + "\"}"));
  EXPECT_THAT(discover.body, HasSubstr("\"id\":3,\"name\":\"" + model + "3\",\"pci_address\":\"" +
                                       (nvml ? "0000:7b:00.0" : "0000:c4:00.0") + "\"}"));
  EXPECT_THAT(discover.body, HasSubstr("\"auth_required\":false"));
  EXPECT_THAT(discover.body,
              HasSubstr("\"enabled_api_groups\":[\"gpu-control\",\"gpu-read\",\"cpu-read\"]"));
  EXPECT_THAT(discover.body, HasSubstr("\"cpus\":[]"));
  EXPECT_THAT(discover.body, HasSubstr("\"dram_available\":[]"));
  EXPECT_THAT(Http(daemon_.socket(), "GET", "/time").body, HasSubstr("{\"timestamp_ms\":"));
}

TEST_P(DaemonVendorTest, DryRunLogsAndChangesNothing) {
  ASSERT_TRUE(daemon_.Start({"--dry-run"}));
  const std::string sock = daemon_.socket();
  ClientProcess client([sock](ClientProcess& self) {
    self.Report(std::to_string(Http(sock, "POST", SetLimit(1, 200'000)).status));
    return 0;
  });
  EXPECT_EQ(client.NextReport(), "200");
  client.Wait();
  EXPECT_TRUE(WaitFor([&] { return Http(sock, "GET", "/leases").body == "{\"leases\":[]}"; },
                      milliseconds(1000)));
  EXPECT_TRUE(AllDefault());
  EXPECT_EQ(ReadFileToString(daemon_.gpu_log()).value_or("").find("set_"), std::string::npos);
  EXPECT_FALSE(ReadFileToString(daemon_.state_file()).ok());
  EXPECT_THAT(ReadFileToString(daemon_.log()).value_or(""),
              HasSubstr("ZEUS_DRY_RUN: would set the power limit of GPU 1 to 200.0 W"));
}

TEST_P(DaemonVendorTest, HundredConcurrentClientsOnFourGpusNeverCrossRestorations) {
  ASSERT_TRUE(daemon_.Start());
  const std::string sock = daemon_.socket();
  constexpr int kClients = 100;
  std::vector<std::unique_ptr<ClientProcess>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<ClientProcess>([sock, i](ClientProcess&) {
      const int gpu = i % 4;
      const unsigned int mw = 200'000 + 1000 * static_cast<unsigned int>(i);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (true) {
        HttpResult r = Http(sock, "POST", SetLimit(gpu, mw));
        if (r.status == 200) break;
        if (r.status != 409 || std::chrono::steady_clock::now() > deadline) return 10;
        std::this_thread::sleep_for(milliseconds(2));
      }
      // While held, the GPU shows this client's limit and nobody else's.
      HttpResult read = Http(sock, "GET", "/gpu/get_power_limit?gpu_ids=" + std::to_string(gpu));
      if (read.body.find("\"power_limit_mw\":" + std::to_string(mw)) == std::string::npos)
        return 11;
      // A quarter die by SIGKILL (their own), the rest exit.
      if (i % 4 == 3) raise(SIGKILL);
      return 0;
    }));
  }
  for (int i = 0; i < kClients; ++i) {
    const int status = clients[static_cast<size_t>(i)]->Wait();
    if (i % 4 == 3) {
      EXPECT_TRUE(WIFSIGNALED(status)) << "client " << i;
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 0) << "client " << i;
    }
  }
  EXPECT_TRUE(WaitFor([&] { return Http(sock, "GET", "/leases").body == "{\"leases\":[]}"; },
                      milliseconds(2000)));
  EXPECT_TRUE(AllDefault());
  // Per GPU, the fake's log alternates one client's limit and the original.
  std::map<int, std::vector<unsigned int>> sets;
  std::istringstream log(ReadFileToString(daemon_.gpu_log()).value_or(""));
  std::string word;
  while (log >> word) {
    if (word != "set_power_limit") continue;
    int gpu = 0;
    unsigned int mw = 0;
    log >> gpu >> mw;
    sets[gpu].push_back(mw);
  }
  std::set<unsigned int> seen;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const std::vector<unsigned int>& s = sets[gpu];
    ASSERT_EQ(s.size(), 2u * kClients / 4) << "GPU " << gpu;
    for (size_t k = 0; k < s.size(); k += 2) {
      EXPECT_NE(s[k], kDefaultMw);
      EXPECT_EQ((s[k] - 200'000) / 1000 % 4, static_cast<unsigned int>(gpu)) << "crossed GPUs";
      EXPECT_EQ(s[k + 1], kDefaultMw) << "GPU " << gpu << " step " << k;
      EXPECT_TRUE(seen.insert(s[k]).second) << "limit " << s[k] << " set twice";
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kClients));
}

}  // namespace
}  // namespace zeus::testing
