// In-process tests of the daemon's pieces: the state file (durable, strict
// on load, never written through a planted symlink), the single-instance
// lock and socket claim, and query parsing.

#include <fcntl.h>
#include <jwt.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "zeus/daemon/token.h"
#include "zeus/device/fake.h"
#include "zeus/http/peer.h"
#include "zeus/util/file.h"

#include "src/daemon/lease_table.h"
#include "src/daemon/power_stream.h"
#include "src/daemon/routes.h"
#include "src/daemon/single_instance.h"
#include "src/daemon/state_file.h"
#include "src/device/zeusd/zeusd_api.h"
#include "tests/testing/temp_dir.h"

namespace zeus::daemon {
namespace {

using ::testing::HasSubstr;
using zeus::testing::TempDir;

TEST(StateFileTest, RoundTripsEveryFieldAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.File("state.json");
  LeaseRecord a;
  a.gpu = 3;
  a.pid = 1234;
  a.uid = 1000;
  a.start_time = 987654321;
  a.original_power_limit_mw = 300'000;
  LeaseRecord b;
  b.gpu = 0;
  b.pid = 77;
  b.original_persistence_mode = false;
  b.reset_gpu_locked_clocks = true;
  b.reset_mem_locked_clocks = true;
  ZEUS_ASSERT_OK(SaveLeaseRecords(path, {a, b}));
  struct stat st {};
  EXPECT_NE(stat((path + ".tmp").c_str(), &st), 0);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<LeaseRecord> loaded, LoadLeaseRecords(path));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].gpu, 3);
  EXPECT_EQ(loaded[0].pid, 1234);
  EXPECT_EQ(loaded[0].uid, 1000u);
  EXPECT_EQ(loaded[0].start_time, 987654321u);
  EXPECT_EQ(loaded[0].original_power_limit_mw, 300'000u);
  EXPECT_FALSE(loaded[0].original_persistence_mode.has_value());
  EXPECT_FALSE(loaded[0].reset_gpu_locked_clocks);
  EXPECT_EQ(loaded[1].original_persistence_mode, false);
  EXPECT_FALSE(loaded[1].original_power_limit_mw.has_value());
  EXPECT_TRUE(loaded[1].reset_gpu_locked_clocks);
  EXPECT_TRUE(loaded[1].reset_mem_locked_clocks);
  // The file is private to the daemon.
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // An empty list replaces it.
  ZEUS_ASSERT_OK(SaveLeaseRecords(path, {}));
  ZEUS_ASSERT_OK_AND_ASSIGN(loaded, LoadLeaseRecords(path));
  EXPECT_TRUE(loaded.empty());
}

TEST(StateFileTest, MissingFileIsEmptyAndMalformedOnesAreRefusedByName) {
  TempDir dir;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<LeaseRecord> none,
                            LoadLeaseRecords(dir.File("absent.json")));
  EXPECT_TRUE(none.empty());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"{\"version\": 2, \"leases\": []}", "version"},
      {"{\"version\": 1}", "leases"},
      {"{\"version\": 1, \"leases\": [{\"gpu\": -1, \"pid\": 1, \"uid\": 0}]}", "gpu"},
      {"{\"version\": 1, \"leases\": [{\"gpu\": 0, \"pid\": 1, \"uid\": 0, "
       "\"original_power_limit_mw\": \"x\"}]}",
       "original_power_limit_mw"},
      {"{\"version\": 1, \"leases\": [], \"extra\": 1}", "extra"},
  };
  for (const auto& [text, field] : cases) {
    const std::string path = dir.WriteFile("bad.json", text);
    StatusOr<std::vector<LeaseRecord>> loaded = LoadLeaseRecords(path);
    ASSERT_FALSE(loaded.ok()) << text;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(loaded.status().message(), HasSubstr(path)) << text;
    EXPECT_THAT(loaded.status().message(), HasSubstr(field)) << text;
  }
}

TEST(StateFileTest, UnwritableDirectoryIsAnIoErrorNamingThePath) {
  Status s = SaveLeaseRecords("/nonexistent-dir/state.json", {});
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/state.json.tmp"));
}

TEST(StateFileTest, SymlinkPlantedAtTheTemporaryFileIsNeverFollowed) {
  TempDir dir;
  const std::string path = dir.File("state.json");
  const std::string victim = dir.WriteFile("victim", "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  LeaseRecord a;
  a.gpu = 1;
  a.pid = 42;
  a.original_power_limit_mw = 250'000;
  ZEUS_ASSERT_OK(SaveLeaseRecords(path, {a}));
  EXPECT_EQ(ReadFileToString(victim).value_or(""), "precious\n");
  struct stat st {};
  EXPECT_NE(lstat((path + ".tmp").c_str(), &st), 0) << "the planted link is removed";
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<LeaseRecord> loaded, LoadLeaseRecords(path));
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].original_power_limit_mw, 250'000u);
}

TEST(StateFileTest, DirectoryWritableByOthersIsRefusedByName) {
  TempDir dir;
  const std::string open_dir = dir.File("open");
  ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  Status s = SaveLeaseRecords(open_dir + "/state.json", {});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(open_dir + ": the state file's directory is writable by "
                                                "others (mode 0777)"));
  EXPECT_THAT(s.message(), HasSubstr("chmod go-w " + open_dir));
  EXPECT_FALSE(ReadFileToString(open_dir + "/state.json").ok());
  ASSERT_EQ(chmod(open_dir.c_str(), 0770), 0);
  EXPECT_THAT(CheckStateDirectory(open_dir + "/state.json").message(),
              HasSubstr("writable by its group (mode 0770)"));
  ASSERT_EQ(chmod(open_dir.c_str(), 0700), 0);
  ZEUS_EXPECT_OK(CheckStateDirectory(open_dir + "/state.json"));
}

TEST(StateFileLockTest, SecondLockIsRefusedNamingTheHolderUntilTheFirstIsReleased) {
  TempDir dir;
  const std::string path = dir.File("state.json");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(StateFileLock first, LockStateFile(path));
    EXPECT_EQ(first.path(), path + ".lock");
    StatusOr<StateFileLock> second = LockStateFile(path);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(second.status().message(),
                HasSubstr("another zeus daemon (pid " + std::to_string(getpid()) +
                          ") holds the state file " + path));
  }
  ZEUS_EXPECT_OK(LockStateFile(path).status());
  // A symlink planted at the lock file is not followed.
  const std::string other = dir.File("other.json");
  ASSERT_EQ(symlink(dir.WriteFile("target", "x").c_str(), (other + ".lock").c_str()), 0);
  StatusOr<StateFileLock> linked = LockStateFile(other);
  EXPECT_EQ(linked.status().code(), StatusCode::kIoError);
  EXPECT_THAT(linked.status().message(), HasSubstr("symlink"));
  EXPECT_EQ(ReadFileToString(dir.File("target")).value_or(""), "x");
}

TEST(ClaimSocketPathTest, RemovesOnlyASocketNobodyAnswersOn) {
  TempDir dir;
  const std::string path = dir.File("zeusd.sock");
  ZEUS_EXPECT_OK(ClaimSocketPath(path));  // Nothing there.
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  Status live = ClaimSocketPath(path);
  EXPECT_EQ(live.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(live.message(), HasSubstr("another daemon (pid " + std::to_string(getpid()) +
                                        ") answers on " + path));
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "a live socket is never removed";
  close(listener);  // Now stale: connect() is refused.
  ZEUS_EXPECT_OK(ClaimSocketPath(path));
  EXPECT_NE(lstat(path.c_str(), &st), 0);
  // Not a socket: left alone.
  dir.WriteFile("zeusd.sock", "not a socket");
  EXPECT_THAT(ClaimSocketPath(path).message(), HasSubstr("exists and is not a socket"));
}

TEST(ZeusdApiTest, RelayTargetsAreTheWireTheyAlwaysWere) {
  EXPECT_EQ(zeusd::SetPowerLimitTarget(2, 250'000),
            "/gpu/set_power_limit?gpu_ids=2&power_limit_mw=250000&block=true");
  EXPECT_EQ(zeusd::SetPersistenceModeTarget(0, true),
            "/gpu/set_persistence_mode?gpu_ids=0&enabled=true&block=true");
  EXPECT_EQ(zeusd::LockedClocksTarget(1, false, true, 900, 1500),
            "/gpu/set_gpu_locked_clocks?gpu_ids=1&block=true&min_clock_mhz=900&max_clock_mhz=1500");
  EXPECT_EQ(zeusd::LockedClocksTarget(3, true, false, 0, 0),
            "/gpu/reset_mem_locked_clocks?gpu_ids=3&block=true");
  EXPECT_EQ(zeusd::CpuEnergyTarget(1, true),
            "/cpu/get_cumulative_energy?cpu_ids=1&cpu=false&dram=true");
  // The daemon reads back what the relays send.
  ZEUS_ASSERT_OK_AND_ASSIGN(auto params, ParseQuery("gpu_ids=2&power_limit_mw=250000&block=true"));
  EXPECT_EQ(params[zeusd::kPowerLimitMw], "250000");
}

TEST(ParseQueryTest, DecodesEscapesAndRefusesDuplicatesAndBadEscapes) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto params, ParseQuery("gpu_ids=0%2C1&block=true&x=a+b&&empty="));
  EXPECT_EQ(params["gpu_ids"], "0,1");
  EXPECT_EQ(params["block"], "true");
  EXPECT_EQ(params["x"], "a b");
  EXPECT_EQ(params["empty"], "");
  EXPECT_EQ(params.size(), 4u);
  EXPECT_THAT(ParseQuery("a=1&a=2").status().message(), HasSubstr("a given twice"));
  EXPECT_THAT(ParseQuery("a=%4").status().message(), HasSubstr("bad %-escape"));
  EXPECT_THAT(ParseQuery("a=%g0").status().message(), HasSubstr("bad %-escape"));
}

// Polls `done` until it holds or `timeout` passes; returns it.
template <class F>
bool Eventually(F done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A sampler that counts its polls.
class CountingSampler : public PowerSampler {
 public:
  explicit CountingSampler(std::atomic<int>* samples) : samples_(samples) {}
  StatusOr<nlohmann::json> Sample() override {
    const int n = ++*samples_;
    return nlohmann::json{{"timestamp_ms", n}, {"power_mw", {{"0", n}, {"1", 2 * n}}}};
  }

 private:
  std::atomic<int>* samples_;
};

TEST(PowerHubTest, PollsOnlyWhileSubscribedAndBoundsASlowReadersQueue) {
  std::atomic<int> samples{0};
  PowerHub hub("test", std::make_unique<CountingSampler>(&samples), std::chrono::milliseconds(2),
               /*queue_capacity=*/4);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(samples.load(), 0);  // Nobody listens: no reads.
  {
    std::unique_ptr<Subscription> slow = hub.Subscribe({"1"});
    std::atomic<int> wakes{0};
    slow->SetWake([&] { ++wakes; });
    // The reader never takes events while dozens of polls happen.
    ASSERT_TRUE(Eventually([&] { return samples.load() >= 30; }, std::chrono::milliseconds(5000)));
    EXPECT_EQ(hub.Stats().subscribers, 1);
    EXPECT_TRUE(hub.Stats().polling);
    const std::string events = slow->TakeEvents();
    // At most 4 events queued (the newest), filtered to GPU "1".
    size_t count = 0;
    for (size_t at = events.find("data: "); at != std::string::npos;
         at = events.find("data: ", at + 1)) {
      ++count;
    }
    EXPECT_GE(count, 1u);
    EXPECT_LE(count, 4u);
    EXPECT_GE(slow->skipped(), 20u);
    // zeusd v0.5's shape, filtered to device 1: {"power_mw":2n,"test_id":1,
    // "timestamp_ms":n} (the keys in order).
    EXPECT_THAT(events, ::testing::Not(HasSubstr("\"test_id\":0")));
    EXPECT_THAT(
        events,
        ::testing::MatchesRegex(
            "(data: \\{\"power_mw\":[0-9]+,\"test_id\":1,\"timestamp_ms\":[0-9]+\\}\n\n)+"));
    EXPECT_GE(wakes.load(), 1);
  }
  // Unsubscribed: the poller stops.
  ASSERT_TRUE(Eventually([&] { return !hub.Stats().polling; }, std::chrono::milliseconds(2000)));
  EXPECT_EQ(hub.Stats().subscribers, 0);
  const int stopped = samples.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(samples.load(), stopped);
  // A one-shot read polls once more; Shutdown ends a live subscription.
  StatusOr<PowerSnapshot> next = hub.NextSnapshot(std::chrono::milliseconds(2000));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_GT((*next)->at("timestamp_ms").get<int>(), stopped);
  std::unique_ptr<Subscription> live = hub.Subscribe({});
  EXPECT_FALSE(live->Ended());
  hub.Shutdown();
  EXPECT_TRUE(live->Ended());
  EXPECT_TRUE(hub.Subscribe({})->Ended());
  EXPECT_FALSE(hub.NextSnapshot(std::chrono::milliseconds(10)).ok());
}

TEST(TokenUnitTest, RoundTripAndRefusals) {
  const int64_t now = 1'800'000'000;
  StatusOr<std::string> token = IssueToken("k", TokenClaims{"alice", {"gpu-read"}, now + 10});
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  StatusOr<TokenClaims> claims = VerifyToken("k", *token, now);
  ASSERT_TRUE(claims.ok()) << claims.status().ToString();
  EXPECT_EQ(claims->sub, "alice");
  EXPECT_EQ(claims->scopes, std::vector<std::string>{"gpu-read"});
  EXPECT_EQ(claims->exp, now + 10);
  EXPECT_THAT(VerifyToken("k", *token, now + 10).status().message(), HasSubstr("expired"));
  EXPECT_THAT(VerifyToken("other", *token, now).status().message(), HasSubstr("invalid token"));
  EXPECT_FALSE(IssueToken("k", TokenClaims{"alice", {"gpu-write"}, std::nullopt}).ok());
  EXPECT_FALSE(IssueToken("k", TokenClaims{"", {"gpu-read"}, std::nullopt}).ok());
  StatusOr<TokenClaims> forever =
      VerifyToken("k", *IssueToken("k", TokenClaims{"bob", {}, std::nullopt}), now);
  ASSERT_TRUE(forever.ok());
  EXPECT_FALSE(forever->exp.has_value());
}

// A token signed with `key` whose claims are `claims` as they are (libjwt,
// as the daemon checks them).
std::string SignedToken(const std::string& key, const std::string& claims) {
  jwt_t* jwt = nullptr;
  EXPECT_EQ(jwt_new(&jwt), 0);
  EXPECT_EQ(jwt_add_grants_json(jwt, claims.c_str()), 0);
  EXPECT_EQ(jwt_set_alg(jwt, JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(key.data()),
                        static_cast<int>(key.size())),
            0);
  char* text = jwt_encode_str(jwt);
  std::string token = text == nullptr ? "" : text;
  std::free(text);
  jwt_free(jwt);
  return token;
}

TEST(TokenUnitTest, NotBeforeIsHonouredAndTimeClaimsMustBeWholeSecondsInRange) {
  const int64_t now = 1'800'000'000;
  const std::string base = R"("sub": "alice", "scopes": ["gpu-read"])";
  auto verify = [&](const std::string& extra) {
    return VerifyToken("k", SignedToken("k", "{" + base + extra + "}"), now);
  };
  EXPECT_TRUE(verify(R"(, "nbf": 1800000000)").ok());
  EXPECT_TRUE(verify(R"(, "exp": 1800000001.0)").ok());
  StatusOr<TokenClaims> early = verify(R"(, "nbf": 1800000001)");
  EXPECT_EQ(early.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(early.status().message(),
              HasSubstr("token is not valid yet (nbf 1800000001, now 1800000000)"));
  for (const char* bad :
       {R"(, "exp": 1e300)", R"(, "exp": 1800000000.5)", R"(, "exp": -5)", R"(, "exp": 1e19)",
        R"(, "exp": "soon")", R"(, "nbf": 1e300)", R"(, "nbf": 0.5)"}) {
    StatusOr<TokenClaims> claims = verify(bad);
    EXPECT_EQ(claims.status().code(), StatusCode::kPermissionDenied) << bad;
    EXPECT_THAT(claims.status().message(), HasSubstr("is not a whole number of seconds")) << bad;
  }
}

// The watcher polls a copy of the pidfds taken under the lock. A release
// meanwhile closes its client's pidfd, whose number then names something
// else (here /dev/null, which polls readable), and the client may take a new
// lease at once: that lease stays held while the client lives.
TEST(LeaseTableTest, ALeaseTakenAgainWhileTheWatcherPollsAStaleCopyIsKept) {
  FakeClock clock;
  FakeGpu gpu(&clock, FakeGpuOptions{});
  TempDir dir;
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false, copied = false, go = false;
  LeaseTableOptions options;
  options.state_file = dir.path() + "/state.json";
  options.before_watch_poll = [&](size_t pidfds) {
    std::unique_lock<std::mutex> lock(mu);
    if (!armed || pidfds == 0) return;
    armed = false;
    copied = true;
    cv.notify_all();
    cv.wait(lock, [&] { return go; });
  };
  LeaseTable table({&gpu}, options);
  ASSERT_TRUE(table.Recover().ok());
  table.Start();
  Peer self;
  self.local = true;
  self.pid = getpid();
  self.uid = getuid();
  ZEUS_ASSERT_OK_AND_ASSIGN(self.start_time, ProcessStartTime(getpid()));
  const uint32_t limit_mw = *gpu.PowerLimitMw();
  Change change;
  change.value = limit_mw - 1000;
  for (const Status& status : table.Apply(self, {0}, change)) ASSERT_TRUE(status.ok()) << status;
  {
    std::unique_lock<std::mutex> lock(mu);
    armed = true;
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return copied; }));
  }
  // The watcher holds a copy with the lease's pidfd; release and lease again.
  EXPECT_EQ(table.Release(self), 1);
  const int reuses_the_number = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (const Status& status : table.Apply(self, {0}, change)) ASSERT_TRUE(status.ok()) << status;
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // Three watcher rounds.
  EXPECT_EQ(table.Records().size(), 1u) << "a live client's lease was put back as if it ended";
  EXPECT_EQ(*gpu.PowerLimitMw(), limit_mw - 1000);
  table.Shutdown();
  close(reuses_the_number);
  EXPECT_EQ(*gpu.PowerLimitMw(), limit_mw);
}

}  // namespace
}  // namespace zeus::daemon
