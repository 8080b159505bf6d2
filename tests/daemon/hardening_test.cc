// One daemon per socket and per state file (issue 23, item 1), the state
// file's directory and temporary file (item 6), and changes refused from a
// peer whose process has exited (item 7). The built `zeus daemon` over each
// fake GPU library (libnvml, libamd_smi; power limits only, which both have);
// clients in forked processes.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
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
using ::testing::Not;

constexpr unsigned int kDefaultMw = 700'000;  // Both fakes' default limit.

std::string SetLimit(int gpu, unsigned int mw) {
  return "/gpu/set_power_limit?gpu_ids=" + std::to_string(gpu) +
         "&power_limit_mw=" + std::to_string(mw) + "&block=true";
}

class DaemonHardeningTest : public ::testing::TestWithParam<FakeGpuVendor> {
 protected:
  void SetUp() override {
    chmod(dir_.path().c_str(), 0755);
    a_.set_vendor(GetParam());
  }

  // Another daemon on `dir_` over the same fake GPU library as `a_`.
  std::unique_ptr<DaemonProcess> OtherDaemon() {
    auto daemon = std::make_unique<DaemonProcess>(dir_.path());
    daemon->set_vendor(GetParam());
    return daemon;
  }

  // A client that sets `mw` on `gpu`, reports the status, then holds.
  std::unique_ptr<ClientProcess> HoldingClient(int gpu, unsigned int mw) {
    const std::string sock = a_.socket();
    auto client = std::make_unique<ClientProcess>([sock, gpu, mw](ClientProcess& self) -> int {
      HttpResult r = Http(sock, "POST", SetLimit(gpu, mw));
      self.Report(std::to_string(r.status) + " " + r.body);
      ClientProcess::HoldForever();
    });
    EXPECT_EQ(client->NextReport(), "200 ");
    return client;
  }

  // Starts `b` and expects it to refuse: it ends non-zero on its own, with
  // `message` in the shared log, and daemon A still serves its leases.
  void ExpectRefused(DaemonProcess& b, const std::string& message) {
    ASSERT_TRUE(b.Start({"--group", std::to_string(getgid())}, {}, /*wait=*/false));
    const int status = b.WaitForExit(milliseconds(5000));
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0)
        << "the second daemon kept running or did not fail (wait status " << status << ")";
    EXPECT_THAT(ReadFileToString(a_.log()).value_or(""), HasSubstr(message));
  }

  std::string Leases() { return Http(a_.socket(), "GET", "/leases").body; }

  TempDir dir_;
  DaemonProcess a_{dir_.path()};
};

INSTANTIATE_TEST_SUITE_P(Vendors, DaemonHardeningTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(DaemonHardeningTest, SecondDaemonOnTheSameSocketOrStateFileIsRefusedAndNothingIsLost) {
  const std::string group = std::to_string(getgid());
  ASSERT_TRUE(a_.Start({"--group", group}));
  const std::string a_pid = std::to_string(a_.pid());
  auto holder2 = HoldingClient(2, 250'000);
  ASSERT_THAT(Leases(), HasSubstr("\"original_power_limit_mw\":700000"));

  // Same socket and state file: the lock refuses it, naming A.
  auto same = OtherDaemon();
  ExpectRefused(*same,
                "another zeus daemon (pid " + a_pid + ") holds the state file " + a_.state_file());
  // Same socket, its own state file: A answers on the socket.
  auto same_socket = OtherDaemon();
  same_socket->set_state_file(dir_.File("other-state.json"));
  ExpectRefused(*same_socket, "another daemon (pid " + a_pid + ") answers on " + a_.socket());
  // Its own socket, the same state file: the lock again.
  auto same_state = OtherDaemon();
  same_state->set_socket(dir_.File("other.sock"));
  ExpectRefused(*same_state, "another zeus daemon (pid " + a_pid + ")");

  // A is untouched: its socket answers, GPU 2 is still the client's, and the
  // original is still recorded, in memory and on disk.
  EXPECT_EQ(kill(a_.pid(), 0), 0);
  EXPECT_EQ(a_.Gpus()[2].power_limit_mw, 250'000u);
  EXPECT_THAT(Leases(), HasSubstr("\"pid\":" + std::to_string(holder2->pid())));
  EXPECT_THAT(ReadFileToString(a_.state_file()).value_or(""),
              HasSubstr("\"original_power_limit_mw\": 700000"));
  EXPECT_THAT(ReadFileToString(a_.gpu_log()).value_or(""),
              Not(HasSubstr("set_power_limit 2 700000")));

  // The rest of the sequence: another client sets GPU 1 (through the
  // one daemon there is), the first client ends, the daemon is SIGKILLed and
  // started again.
  auto holder1 = HoldingClient(1, 300'000);
  holder2->Kill(SIGKILL);
  EXPECT_TRUE(
      WaitFor([&] { return a_.Gpus()[2].power_limit_mw == kDefaultMw; }, milliseconds(1000)));
  EXPECT_EQ(a_.Gpus()[1].power_limit_mw, 300'000u);
  EXPECT_THAT(ReadFileToString(a_.state_file()).value_or(""),
              HasSubstr("\"original_power_limit_mw\": 700000"));
  a_.Kill(SIGKILL);
  holder1->Kill(SIGKILL);
  // The dead daemon's socket is stale (nobody answers): replaced on restart.
  ASSERT_TRUE(a_.Start({"--group", group}));
  for (int gpu = 0; gpu < 4; ++gpu) {
    EXPECT_EQ(a_.Gpus()[static_cast<size_t>(gpu)].power_limit_mw, kDefaultMw) << "GPU " << gpu;
  }
  EXPECT_EQ(ReadFileToString(a_.state_file()).value_or("").find("\"pid\""), std::string::npos);
}

TEST_P(DaemonHardeningTest, StateDirectoryWritableByOthersKeepsTheDaemonFromStarting) {
  const std::string state_dir = dir_.File("open-state");
  ASSERT_EQ(mkdir(state_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(state_dir.c_str(), 0777), 0);
  a_.set_state_file(state_dir + "/state.json");
  ASSERT_TRUE(a_.Start({}, {}, /*wait=*/false));
  const int status = a_.WaitForExit(milliseconds(5000));
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0)
      << "the daemon kept running or did not fail (wait status " << status << ")";
  EXPECT_THAT(ReadFileToString(a_.log()).value_or(""),
              HasSubstr(state_dir + ": the state file's directory is writable by others (mode "
                                    "0777)"));
  EXPECT_FALSE(ReadFileToString(state_dir + "/state.json").ok());
}

TEST_P(DaemonHardeningTest, DryRunNeedsNoStateDirectoryButStillTakesTheLockWhereOneCanBe) {
  a_.set_state_file(dir_.File("missing/state.json"));
  ASSERT_TRUE(a_.Start({"--dry-run"}));
  EXPECT_THAT(ReadFileToString(a_.log()).value_or(""), HasSubstr("has no directory; not locking"));
  a_.Kill(SIGTERM);
  // With the directory there, a dry run holds the lock as any daemon does:
  // a real daemon on the same state file is refused.
  auto dry = OtherDaemon();
  dry->set_socket(dir_.File("dry.sock"));
  ASSERT_TRUE(dry->Start({"--dry-run"}));
  auto real = OtherDaemon();
  ASSERT_TRUE(real->Start({}, {}, /*wait=*/false));
  const int status = real->WaitForExit(milliseconds(5000));
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
  EXPECT_THAT(ReadFileToString(a_.log()).value_or(""),
              HasSubstr("another zeus daemon (pid " + std::to_string(dry->pid()) + ")"));
}

TEST_P(DaemonHardeningTest, NumbersAreDigitsOnlyAndParametersAreGivenOnce) {
  ASSERT_TRUE(a_.Start({"--group", std::to_string(getgid())}));
  const std::string sock = a_.socket();
  const std::string set = "/gpu/set_power_limit?gpu_ids=1&power_limit_mw=";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {set + "%2B200000", "power_limit_mw \\\"+200000\\\": expected an integer"},
      {set + "%20200000", "power_limit_mw \\\" 200000\\\": expected an integer"},
      {set + "+200000", "power_limit_mw \\\" 200000\\\": expected an integer"},
      {set + "200000%20", "expected an integer"},
      {set + "0x30d40", "expected an integer"},
      {"/gpu/set_power_limit?gpu_ids=%2B1&power_limit_mw=200000", "gpu_ids \\\"+1\\\""},
      {"/gpu/set_power_limit?gpu_ids=%201&power_limit_mw=200000", "gpu_ids \\\" 1\\\""},
      {"/gpu/set_power_limit?gpu_ids=1&power_limit_mw=200000&power_limit_mw=300000",
       "query: parameter power_limit_mw given twice"},
      {"/gpu/set_power_limit?gpu_ids=1&gpu_ids=1&power_limit_mw=200000",
       "query: parameter gpu_ids given twice"},
  };
  for (const auto& [target, message] : cases) {
    HttpResult r = Http(sock, "POST", target);
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr(message)) << target;
  }
  EXPECT_EQ(a_.Gpus()[1].power_limit_mw, kDefaultMw);
  EXPECT_THAT(ReadFileToString(a_.gpu_log()).value_or(""), Not(HasSubstr("set_power_limit")));
}

TEST_P(DaemonHardeningTest, SymlinkPlantedAtTheStateFilesTemporaryIsNeverWrittenThrough) {
  const std::string victim = dir_.WriteFile("victim", "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), (a_.state_file() + ".tmp").c_str()), 0);
  ASSERT_TRUE(a_.Start({"--group", std::to_string(getgid())}));
  auto holder = HoldingClient(0, 300'000);
  EXPECT_EQ(ReadFileToString(victim).value_or(""), "precious\n");
  EXPECT_THAT(ReadFileToString(a_.state_file()).value_or(""),
              HasSubstr("\"original_power_limit_mw\": 700000"));
  struct stat st {};
  ASSERT_EQ(lstat(a_.state_file().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_THAT(ReadFileToString(a_.log()).value_or(""),
              HasSubstr("removing a leftover symlink (not following it)"));
}

// One response on a connection shared by a parent and its child, as
// "STATUS BODY"; "" when the connection ends first.
std::string ReadResponse(int fd) {
  const std::string answer = ReadOneResponse(fd, 60);
  const size_t end = answer.find("\r\n\r\n");
  if (end == std::string::npos) return "";
  return answer.substr(9, 3) + " " + answer.substr(end + 4);
}

TEST_P(DaemonHardeningTest, ChangeSentByAChildOnItsExitedParentsConnectionIsRefused) {
  ASSERT_TRUE(a_.Start({"--group", std::to_string(getgid())}));
  const std::string sock = a_.socket();
  // The parent connects (one request, so the daemon has accepted it while
  // the parent lives), forks, and exits; its child then asks for a change on
  // the inherited connection.
  ClientProcess parent([sock](ClientProcess& self) -> int {
    const int fd = ConnectUnix(sock);
    SendAll(fd, "GET /time HTTP/1.1\r\nHost: zeusd\r\n\r\n");
    if (ReadResponse(fd).compare(0, 3, "200") != 0) return 2;
    const pid_t parent_pid = getpid();
    if (fork() == 0) {
      while (getppid() == parent_pid) usleep(1000);  // Until the parent has exited.
      SendAll(fd, "POST " + SetLimit(1, 200'000) +
                      " HTTP/1.1\r\nHost: zeusd\r\nContent-Length: 0\r\n\r\n");
      self.Report(ReadResponse(fd));
      _exit(0);
    }
    return 0;
  });
  EXPECT_EQ(WEXITSTATUS(parent.Wait()), 0);
  const std::string answer = parent.NextReport();
  EXPECT_THAT(answer, HasSubstr("403 "));
  EXPECT_THAT(answer, HasSubstr(", which opened this connection, has exited"));
  EXPECT_EQ(a_.Gpus()[1].power_limit_mw, kDefaultMw);
  EXPECT_THAT(ReadFileToString(a_.gpu_log()).value_or(""), Not(HasSubstr("set_power_limit")));
  EXPECT_EQ(Leases(), "{\"leases\":[]}");
  // A live client on its own connection is served as before.
  auto holder = HoldingClient(1, 200'000);
  EXPECT_EQ(a_.Gpus()[1].power_limit_mw, 200'000u);
}

}  // namespace
}  // namespace zeus::testing
