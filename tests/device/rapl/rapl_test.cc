// The RAPL backend on temporary powercap trees.

#include "src/device/rapl/rapl.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/device/devices.h"
#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus::rapl {
namespace {

using ::testing::HasSubstr;

// Builds powercap zone directories under a temp root.
class PowercapTree {
 public:
  const std::string& root() const { return dir_.path(); }

  // Creates zone `rel` (e.g. "intel-rapl:0" or "intel-rapl:0/intel-rapl:0:1").
  std::string AddZone(const std::string& rel, const std::string& name, uint64_t energy_uj,
                      uint64_t max_range_uj) {
    std::string path = root() + "/" + rel;
    EXPECT_EQ(mkdir(path.c_str(), 0755), 0) << path;
    Write(path + "/name", name + "\n");
    Write(path + "/max_energy_range_uj", std::to_string(max_range_uj) + "\n");
    SetEnergy(path, energy_uj);
    return path;
  }

  // Atomically replaces the zone's energy_uj.
  static void SetEnergy(const std::string& zone_path, uint64_t energy_uj) {
    Write(zone_path + "/energy_uj", std::to_string(energy_uj) + "\n");
  }

  static void Write(const std::string& path, const std::string& contents) {
    ZEUS_ASSERT_OK(WriteFileAtomically(path, contents));
  }

 private:
  testing::TempDir dir_;
};

// Reads the real files, counts reads per path, and can refuse paths with
// kPermissionDenied (root reads everything, so EACCES must be injected).
class TestReader final : public SysfsReader {
 public:
  StatusOr<std::string> Read(const std::string& path) override {
    StatusOr<std::string> result = RealSysfsReader()->Read(path);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (denied_.count(path) > 0) result = PermissionDeniedError(path + ": Permission denied");
      ++reads_[path];
    }
    cv_.notify_all();
    return result;
  }

  void Deny(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    denied_[path] = true;
  }

  int64_t reads(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_[path];
  }

  // Waits until `path` has been read `count` times more than `since`.
  bool WaitForReads(const std::string& path, int64_t since, int64_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return reads_[path] >= since + count; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int64_t> reads_;
  std::map<std::string, bool> denied_;
};

TEST(WraparoundCounterTest, AccumulatesAndCorrectsOneWrapPerDecrease) {
  // The counter's own value, plus the range per wrap (the original's).
  WraparoundCounter counter(1000);
  EXPECT_EQ(counter.Update(900), 900u);
  EXPECT_EQ(counter.Update(950), 950u);
  EXPECT_EQ(counter.Update(100), 1100u);  // 950 -> 1000 -> 0 -> 100.
  EXPECT_EQ(counter.Update(100), 1100u);
  EXPECT_EQ(counter.Update(99), 2099u);  // A full wrap minus 1 uJ.
}

TEST(RaplTest, DiscoversPackagesWithDramAndSkipsOtherZones) {
  PowercapTree tree;
  tree.AddZone("intel-rapl:1", "package-1", 10, 1'000'000);
  tree.AddZone("intel-rapl:0", "package-0", 20, 1'000'000);
  tree.AddZone("intel-rapl:0/intel-rapl:0:0", "core", 30, 1'000'000);
  tree.AddZone("intel-rapl:0/intel-rapl:0:1", "dram", 40, 1'000'000);
  tree.AddZone("intel-rapl:2", "psys", 50, 1'000'000);
  tree.AddZone("intel-rapl-mmio:0", "package-0", 60, 1'000'000);

  ZEUS_ASSERT_OK_AND_ASSIGN(auto packages, FindRaplPackages(tree.root(), RealSysfsReader()));
  ASSERT_EQ(packages.size(), 2u);
  EXPECT_EQ(packages[0].socket, 0);
  EXPECT_EQ(packages[0].package.path, tree.root() + "/intel-rapl:0");
  ASSERT_TRUE(packages[0].dram.has_value());
  EXPECT_EQ(packages[0].dram->path, tree.root() + "/intel-rapl:0/intel-rapl:0:1");
  EXPECT_EQ(packages[1].socket, 1);
  EXPECT_FALSE(packages[1].dram.has_value());

  ZEUS_ASSERT_OK_AND_ASSIGN(auto cpus, OpenCpus(tree.root()));
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0]->index(), 0);
  EXPECT_TRUE(cpus[0]->HasDram());
  EXPECT_FALSE(cpus[1]->HasDram());
  EXPECT_EQ(cpus[1]->DramEnergyUj().status().code(), StatusCode::kNotSupported);
}

TEST(RaplTest, MissingOrEmptyRootHasNoCpus) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto none, OpenCpus("/nonexistent/powercap"));
  EXPECT_TRUE(none.empty());
  PowercapTree tree;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto empty, OpenCpus(tree.root()));
  EXPECT_TRUE(empty.empty());
}

// The original Zeus's Docker setup mounts the host's tree at
// /zeus_sys/class/powercap: read there when the own root has no package.
TEST(RaplTest, ReadsTheContainerMountWhenTheRootHasNoPackage) {
  PowercapTree own, mounted;
  own.AddZone("intel-rapl:2", "psys", 50, 1'000'000);  // No package zone.
  mounted.AddZone("intel-rapl:0", "package-0", 10, 1'000'000);
  mounted.AddZone("intel-rapl:1", "package-1", 20, 1'000'000);
  EXPECT_EQ(ChoosePowercapRoot(own.root(), mounted.root(), RealSysfsReader()), mounted.root());
  EXPECT_EQ(ChoosePowercapRoot("/nonexistent/powercap", mounted.root(), RealSysfsReader()),
            mounted.root());
  // Never tried when empty; the own root wins when it has a package.
  EXPECT_EQ(ChoosePowercapRoot(own.root(), "", RealSysfsReader()), own.root());
  EXPECT_EQ(ChoosePowercapRoot(mounted.root(), own.root(), RealSysfsReader()), mounted.root());
  // Neither has one: the own root (which has no CPU).
  EXPECT_EQ(ChoosePowercapRoot(own.root(), "/nonexistent/zeus_sys", RealSysfsReader()), own.root());

  RaplOptions options;
  options.powercap_root = own.root();
  options.container_powercap_root = mounted.root();
  ZEUS_ASSERT_OK_AND_ASSIGN(auto cpus, OpenRaplCpus(options));
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[1]->index(), 1);
  // OpenCpus looks there only for the default root.
  EXPECT_STREQ(kContainerPowercapRoot, "/zeus_sys/class/powercap");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto none, OpenCpus(own.root()));
  EXPECT_TRUE(none.empty());
}

// The counter's value (as the original reports it), wraps corrected.
TEST(RaplTest, EnergyIsTheCounterWithItsWrapsCorrected) {
  PowercapTree tree;
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 9'000, 10'000);
  std::string dram = tree.AddZone("intel-rapl:0/intel-rapl:0:2", "dram", 100, 5'000);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto cpus, OpenCpus(tree.root()));
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_EQ(cpus[0]->PackageEnergyUj().value(), 9'000u);
  EXPECT_EQ(cpus[0]->DramEnergyUj().value(), 100u);
  PowercapTree::SetEnergy(pkg, 9'500);
  PowercapTree::SetEnergy(dram, 4'000);
  EXPECT_EQ(cpus[0]->PackageEnergyUj().value(), 9'500u);
  EXPECT_EQ(cpus[0]->DramEnergyUj().value(), 4'000u);
  PowercapTree::SetEnergy(pkg, 300);   // Wrapped at 10'000.
  PowercapTree::SetEnergy(dram, 100);  // Wrapped at 5'000.
  EXPECT_EQ(cpus[0]->PackageEnergyUj().value(), 10'300u);
  EXPECT_EQ(cpus[0]->DramEnergyUj().value(), 5'100u);
}

TEST(RaplTest, TrackerThreadSeesWrapsBetweenCallerReads) {
  PowercapTree tree;
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 9'000, 10'000);
  const std::string energy = pkg + "/energy_uj";
  TestReader reader;
  RaplOptions options;
  options.powercap_root = tree.root();
  options.poll_period = std::chrono::milliseconds(1);
  options.reader = &reader;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto cpus, OpenRaplCpus(options));
  ASSERT_EQ(cpus.size(), 1u);
  // Two wraps the caller never reads in between; only the tracker sees them.
  for (uint64_t value : {5'000u, 2'000u, 7'000u}) {
    PowercapTree::SetEnergy(pkg, value);
    ASSERT_TRUE(reader.WaitForReads(energy, reader.reads(energy), 2));
  }
  // 9000, -> 5000 (+6000), -> 2000 (+7000), -> 7000 (+5000).
  EXPECT_EQ(cpus[0]->PackageEnergyUj().value(), 27'000u);
}

TEST(RaplTest, TrackerPeriodDerivesFromMaxPower) {
  PowercapTree tree;
  // 2 J range at 1000 W wraps in 2 ms: the tracker must read about every 1 ms.
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 0, 2'000'000);
  const std::string energy = pkg + "/energy_uj";
  TestReader reader;
  RaplOptions options;
  options.powercap_root = tree.root();
  options.reader = &reader;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto cpus, OpenRaplCpus(options));
  EXPECT_TRUE(reader.WaitForReads(energy, reader.reads(energy), 20));
}

TEST(RaplTest, RootOnlyEnergyIsPermissionDeniedWithExplanation) {
  // As root, chmod cannot make a file unreadable, so EACCES is injected
  // through the reader seam; ErrnoStatusTest covers the errno mapping.
  PowercapTree tree;
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 100, 10'000);
  TestReader reader;
  reader.Deny(pkg + "/energy_uj");
  RaplOptions options;
  options.powercap_root = tree.root();
  options.reader = &reader;
  auto cpus = OpenRaplCpus(options);
  ASSERT_FALSE(cpus.ok());
  EXPECT_EQ(cpus.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(cpus.status().message(), HasSubstr(pkg + "/energy_uj"));
  EXPECT_THAT(cpus.status().message(), HasSubstr("Linux 5.10"));
  EXPECT_THAT(cpus.status().message(), HasSubstr("CVE-2020-8694"));
  EXPECT_THAT(cpus.status().message(), HasSubstr("chmod"));
}

TEST(RaplTest, MalformedCounterNamesTheFile) {
  PowercapTree tree;
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 100, 10'000);
  PowercapTree::Write(pkg + "/energy_uj", "twelve\n");
  auto cpus = OpenCpus(tree.root());
  EXPECT_EQ(cpus.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(cpus.status().message(), HasSubstr(pkg + "/energy_uj"));
  PowercapTree::Write(pkg + "/energy_uj", "5\n");
  PowercapTree::Write(pkg + "/max_energy_range_uj", "0\n");
  EXPECT_EQ(OpenCpus(tree.root()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ErrnoStatusTest, MapsErrnoToCodes) {
  EXPECT_EQ(ErrnoStatus("/x", EACCES).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoStatus("/x", EPERM).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoStatus("/x", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoStatus("/x", EIO).code(), StatusCode::kIoError);
  EXPECT_THAT(ErrnoStatus("/x/energy_uj", EACCES).message(), HasSubstr("/x/energy_uj"));
}

TEST(ErrnoStatusTest, RealReaderReportsMissingFilesAndDirectories) {
  testing::TempDir dir;
  EXPECT_EQ(RealSysfsReader()->Read(dir.File("missing")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RealSysfsReader()->Read(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(RealSysfsReader()->Read(dir.WriteFile("f", "42\n")).value(), "42\n");
}

// An operator's --powercap-root may hold anything: a FIFO (which would block
// open and read forever), /dev/zero (endless), a huge file. Each is refused
// at once, naming the file.
TEST(RaplTest, AttributesThatAreNotSmallRegularFilesAreRefusedWithoutWaiting) {
  PowercapTree tree;
  std::string pkg = tree.AddZone("intel-rapl:0", "package-0", 100, 10'000);
  ASSERT_EQ(unlink((pkg + "/energy_uj").c_str()), 0);
  ASSERT_EQ(mkfifo((pkg + "/energy_uj").c_str(), 0600), 0);
  auto fifo = OpenCpus(tree.root());
  EXPECT_EQ(fifo.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(fifo.status().message(), HasSubstr(pkg + "/energy_uj: not a regular file (a FIFO)"));

  ASSERT_EQ(unlink((pkg + "/energy_uj").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", (pkg + "/energy_uj").c_str()), 0);
  auto zero = OpenCpus(tree.root());
  EXPECT_EQ(zero.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(zero.status().message(), HasSubstr("a character device"));

  ASSERT_EQ(unlink((pkg + "/energy_uj").c_str()), 0);
  PowercapTree::Write(pkg + "/energy_uj", std::string(1 << 20, '7'));
  auto huge = OpenCpus(tree.root());
  EXPECT_EQ(huge.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(huge.status().message(), HasSubstr(pkg + "/energy_uj: more than 4096 bytes"));
}

}  // namespace
}  // namespace zeus::rapl
