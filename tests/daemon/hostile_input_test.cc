// `zeus daemon` against a careless or hostile operator and readers (issue
// 39): --tcp without a host listens on loopback only and takes bracketed
// IPv6; every signal that ends the daemon puts the leases back first; poll
// rates are bounded and /cpu/get_power answers a burst from the latest poll;
// the signing key is a private regular file of 32+ bytes; a token's lifetime
// is positive; neither TCP readers nor local ones can take the connections
// of those who may change settings. The built binary over the fake libnvml; clients in forked
// processes.

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
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

class DaemonHostileInputTest : public ::testing::Test {
 protected:
  // Starts the daemon with `args`; true when it serves.
  bool Start(const std::vector<std::string>& args) { return daemon_.Start(args); }

  std::string Log() const { return ReadFileToString(daemon_.log()).value_or(""); }

  // Waits for the daemon's "serving ..." line (printed once it serves, maybe
  // after its first answer); the log then.
  std::string ServingLine() const {
    WaitFor([&] { return Log().find("serving") != std::string::npos; }, milliseconds(60'000));
    return Log();
  }

  // `zeus <args>` run as a command: its exit status; its output in *out.
  int Zeus(const std::string& args, std::string* out) {
    const std::string path = dir_.File("zeus.out");
    const int status =
        std::system((std::string(ZEUS_BINARY) + " " + args + " >" + path + " 2>&1").c_str());
    *out = ReadFileToString(path).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // A private key file of `bytes` bytes with `mode`.
  std::string Key(size_t bytes, mode_t mode) {
    const std::string path = dir_.File("signing.key");
    EXPECT_TRUE(WriteFileAtomically(path, std::string(bytes, 'k')).ok());
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path()};
};

TEST_F(DaemonHostileInputTest, TcpWithoutAHostListensOnLoopbackOnly) {
  ASSERT_TRUE(Start({"--tcp", ":0"})) << Log();
  EXPECT_THAT(ServingLine(), HasSubstr(" and 127.0.0.1:")) << Log();
  EXPECT_EQ(daemon_.Kill(SIGTERM), 0);
}

TEST_F(DaemonHostileInputTest, TcpTakesABracketedIpv6AddressAndRefusesABareOne) {
  ASSERT_TRUE(Start({"--tcp", "[::1]:0"})) << Log();
  EXPECT_THAT(ServingLine(), HasSubstr(" and [::1]:")) << Log();
  EXPECT_EQ(daemon_.Kill(SIGTERM), 0);
  std::string out;
  EXPECT_EQ(Zeus("daemon --socket " + dir_.File("s2") + " --state-file " + dir_.File("st2") +
                     " --tcp ::1:0",
                 &out),
            1);
  EXPECT_THAT(out, HasSubstr("--tcp \"::1:0\": an IPv6 address needs brackets: [::1]:0"));
  EXPECT_EQ(Zeus("daemon --socket " + dir_.File("s3") + " --state-file " + dir_.File("st3") +
                     " --tcp 127.0.0.1:70000",
                 &out),
            1);
  EXPECT_THAT(out, HasSubstr("--tcp \"127.0.0.1:70000\": port must be in [0, 65535]"));
}

// A closed terminal (SIGHUP), a stray SIGUSR1: whatever ends the daemon puts
// the leased limit back before it exits.
TEST_F(DaemonHostileInputTest, EverySignalThatEndsTheDaemonPutsTheLeasesBack) {
  for (int signal : {SIGHUP, SIGUSR1, SIGQUIT}) {
    ASSERT_TRUE(Start({"--group", std::to_string(getgid())})) << Log();
    const std::string sock = daemon_.socket();
    ClientProcess client([sock](ClientProcess& self) -> int {
      self.Report(std::to_string(
          Http(sock, "POST", "/gpu/set_power_limit?gpu_ids=1&power_limit_mw=250000&block=true")
              .status));
      ClientProcess::HoldForever();
    });
    ASSERT_EQ(client.NextReport(), "200");
    ASSERT_EQ(daemon_.Gpus()[1].power_limit_mw, 250'000u);
    const int status = daemon_.Kill(signal);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "signal " << signal << ": wait status " << status << "\n"
        << Log();
    EXPECT_EQ(daemon_.Gpus()[1].power_limit_mw, 700'000u) << "signal " << signal;
    client.Kill(SIGKILL);
  }
}

TEST_F(DaemonHostileInputTest, PollRatesOutsideOneToAThousandHzAreRefused) {
  for (const char* hz : {"0.01", "1e-14", "0", "-5", "1001", "nan"}) {
    for (const char* flag : {"--cpu-power-poll-hz", "--gpu-power-poll-hz"}) {
      std::string out;
      EXPECT_EQ(Zeus(std::string("daemon --socket ") + dir_.File("s") + " --state-file " +
                         dir_.File("st") + " " + flag + " " + hz,
                     &out),
                2)
          << flag << " " << hz << ": " << out;
      EXPECT_THAT(
          out, HasSubstr(std::string(flag) + ": expected a number in [1, 1000], got '" + hz + "'"));
    }
  }
}

// The first /cpu/get_power of a burst waits for one poll; the others answer
// at once from that poll (the same timestamp), instead of each parking an
// I/O thread until the next one.
TEST_F(DaemonHostileInputTest, CpuPowerBurstIsAnsweredFromTheLatestPoll) {
  const std::string root = dir_.File("powercap");
  const std::string package = root + "/intel-rapl:0";
  for (const std::string& d : {root, package}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/name", "package-0\n"));
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/max_energy_range_uj", "100000000000\n"));
  ZEUS_ASSERT_OK(WriteFileAtomically(package + "/energy_uj", "5000\n"));
  daemon_.set_powercap_root(root);
  ASSERT_TRUE(Start({"--cpu-power-poll-hz", "1"})) << Log();
  std::set<int64_t> timestamps;
  constexpr int kReads = 20;
  for (int i = 0; i < kReads; ++i) {
    HttpResult r = Http(daemon_.socket(), "GET", "/cpu/get_power?cpu_ids=0");
    ASSERT_EQ(r.status, 200) << r.body;
    timestamps.insert(nlohmann::json::parse(r.body)["timestamp_ms"].get<int64_t>());
  }
  // One poll a second: 20 reads in a row share polls (each new poll before
  // the fix: 20 distinct timestamps).
  EXPECT_LT(timestamps.size(), static_cast<size_t>(kReads));
}

// Readers on TCP fill the TCP listener's budget only: a change on the Unix
// socket still gets through.
TEST_F(DaemonHostileInputTest, TcpStreamsCannotTakeTheUnixSocketsConnections) {
  ASSERT_TRUE(Start(
      {"--tcp", "127.0.0.1:0", "--max-connections", "3", "--group", std::to_string(getgid())}))
      << Log();
  const std::string log = ServingLine();
  const size_t at = log.find(" and 127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << log;
  const int port = std::atoi(log.c_str() + at + std::string(" and 127.0.0.1:").size());
  // Three streams, each answered (its head read) before the next connects;
  // the fourth TCP connection is one too many for TCP.
  std::vector<int> streams;
  for (int i = 0; i < 4; ++i) {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /gpu/stream_power HTTP/1.1\r\nHost: zeusd\r\n\r\n"));
    streams.push_back(fd);
    std::string head;
    char buffer[512];
    while (head.find("\r\n\r\n") == std::string::npos) {
      pollfd readable{fd, POLLIN, 0};
      ASSERT_GT(poll(&readable, 1, 30'000), 0) << "no answer on connection " << i;
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      ASSERT_GT(n, 0) << "connection " << i << " closed: " << head;
      head.append(buffer, static_cast<size_t>(n));
    }
    EXPECT_THAT(head, HasSubstr(i < 3 ? "HTTP/1.1 200" : "HTTP/1.1 503")) << i;
  }
  const std::string sock = daemon_.socket();
  ClientProcess client([sock](ClientProcess& self) -> int {
    self.Report(std::to_string(
        Http(sock, "POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true")
            .status));
    return 0;
  });
  EXPECT_EQ(client.NextReport(), "200");
  for (int fd : streams) close(fd);
}

// The status code of the answer head on `fd` ("200", "503"), or what went
// wrong.
std::string HeadStatus(int fd) {
  std::string head;
  char buffer[512];
  while (head.find("\r\n\r\n") == std::string::npos) {
    pollfd readable{fd, POLLIN, 0};
    if (poll(&readable, 1, 60'000) <= 0) return "no answer";
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return "closed after: " + head;
    head.append(buffer, static_cast<size_t>(n));
  }
  return head.size() > 12 ? head.substr(9, 3) : head;
}

// Opens `n` power streams on the Unix socket at `sock`, each answered before
// the next connects; their answers' status codes, space-separated.
std::string OpenStreams(const std::string& sock, int n, std::vector<int>* fds) {
  std::string statuses;
  for (int i = 0; i < n; ++i) {
    const int fd = ConnectUnix(sock);
    if (fd < 0) return statuses + "cannot connect";
    fds->push_back(fd);
    // A connection beyond the budget is answered 503 and closed without its
    // request being read, so the send may fail: its answer is read anyway.
    const bool sent = SendAll(fd, "GET /gpu/stream_power HTTP/1.1\r\nHost: zeusd\r\n\r\n");
    const std::string status = HeadStatus(fd);
    if (!sent && status != "503") return statuses + (i ? " " : "") + "cannot send";
    statuses += (i ? " " : "") + status;
  }
  return statuses;
}

// Issue 39 item 20: readers on the Unix socket (any local user) could fill
// its connections, and root's change got 503. Those who may change settings
// have a budget of their own there, and are limited by it like anyone.
TEST_F(DaemonHostileInputTest, LocalReadersCannotTakeTheConnectionsOfThoseWhoMayChange) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop a child to nobody";
  // The socket reachable by `nobody`.
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_TRUE(Start({"--max-connections", "3"})) << Log();
  const std::string sock = daemon_.socket();
  ClientProcess readers([sock](ClientProcess& self) -> int {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      self.Report("cannot drop privileges");
      return 1;
    }
    std::vector<int> fds;
    self.Report(OpenStreams(sock, 4, &fds));
    ClientProcess::HoldForever();
  });
  EXPECT_EQ(readers.NextReport(), "200 200 200 503");

  // Root's change is answered while the readers hold all of theirs.
  ClientProcess changer([sock](ClientProcess& self) -> int {
    self.Report(std::to_string(
        Http(sock, "POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true")
            .status));
    return 0;
  });
  EXPECT_EQ(changer.NextReport(), "200");
  changer.Wait();
  // Root is not exempt: its own budget is 3 connections too (counted once
  // the daemon has seen the changer's connection close).
  std::string statuses;
  EXPECT_TRUE(WaitFor(
      [&] {
        std::vector<int> fds;
        statuses = OpenStreams(sock, 4, &fds);
        for (int fd : fds) close(fd);
        return statuses == "200 200 200 503";
      },
      milliseconds(60'000)))
      << statuses;
  readers.Kill(SIGKILL);
}

TEST_F(DaemonHostileInputTest, SigningKeysThatOthersCanReadOrThatAreShortAreRefused) {
  struct Case {
    size_t bytes;
    mode_t mode;
    std::string expected;
  };
  const std::string path = dir_.File("signing.key");
  for (const Case& c :
       {Case{32, 0644, "is readable or writable by group or others (mode 0644)"},
        Case{32, 0660, "(mode 0660)"}, Case{1, 0600, "holds 1 bytes; a key needs at least 32"},
        Case{31, 0400, "holds 31 bytes"}}) {
    Key(c.bytes, c.mode);
    std::string out;
    EXPECT_EQ(Zeus("daemon --socket " + dir_.File("s") + " --state-file " + dir_.File("st") +
                       " --signing-key-path " + path,
                   &out),
              1)
        << out;
    EXPECT_THAT(out, HasSubstr("signing key " + path)) << out;
    EXPECT_THAT(out, HasSubstr(c.expected)) << out;
    EXPECT_EQ(
        Zeus("daemon token issue --signing-key-path " + path + " --sub a --scopes gpu-read", &out),
        1);
    EXPECT_THAT(out, HasSubstr(c.expected)) << out;
  }
  Key(32, 0600);
  std::string out;
  EXPECT_EQ(
      Zeus("daemon token issue --signing-key-path " + path + " --sub a --scopes gpu-read", &out), 0)
      << out;
}

TEST_F(DaemonHostileInputTest, SigningKeyPathsThatAreNotRegularFilesAreRefusedAtOnce) {
  const std::string fifo = dir_.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "a FIFO"}, {dir_.path(), "a directory"}, {"/dev/zero", "a character device"}}) {
    std::string out;
    EXPECT_EQ(
        Zeus("daemon token issue --signing-key-path " + path + " --sub a --scopes gpu-read", &out),
        1);
    EXPECT_THAT(out, HasSubstr("signing key " + path + " is not a regular file (" + kind + ")"));
  }
}

TEST_F(DaemonHostileInputTest, ATokenLifetimeOfZeroIsRefusedInEveryUnit) {
  const std::string key = Key(32, 0600);
  for (const char* lifetime : {"0", "0s", "0m", "0d", "-1", "soon"}) {
    std::string out;
    EXPECT_EQ(Zeus("daemon token issue --signing-key-path " + key +
                       " --sub a --scopes gpu-read --expires-in " + lifetime,
                   &out),
              1)
        << lifetime << ": " << out;
    EXPECT_THAT(out, HasSubstr("expected a positive duration")) << out;
  }
  std::string out;
  EXPECT_EQ(Zeus("daemon token issue --signing-key-path " + key +
                     " --sub a --scopes gpu-read --expires-in never",
                 &out),
            0);
}

}  // namespace
}  // namespace zeus::testing
