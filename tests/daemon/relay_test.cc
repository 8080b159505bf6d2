// The device backends relay through the daemon when ZEUSD_SOCK_PATH is set:
// the NVML backend's setters (the real NvmlGpu code over the fake libnvml)
// and the RAPL energy reads, so a process without privilege changes limits
// (leased to it) and reads CPU energy.

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "zeus/daemon/token.h"
#include "zeus/device/cpu.h"
#include "zeus/device/devices.h"
#include "zeus/device/gpu.h"
#include "zeus/util/file.h"

#include "src/device/nvml/nvml_gpu.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

class RelayTest : public ::testing::Test {
 protected:
  // The client's environment: the same fake GPUs, and the daemon's socket.
  void ClientEnvironment(const std::string& cuda_visible_devices = "") {
    setenv("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL, 1);
    setenv("FAKE_NVML_GPUS", "4", 1);
    setenv("FAKE_NVML_STATE", daemon_.gpu_file().c_str(), 1);
    setenv("ZEUSD_SOCK_PATH", daemon_.socket().c_str(), 1);
    unsetenv("FAKE_NVML_LOG");
    unsetenv("ZEUS_DRY_RUN");
    if (cuda_visible_devices.empty()) {
      unsetenv("CUDA_VISIBLE_DEVICES");
    } else {
      setenv("CUDA_VISIBLE_DEVICES", cuda_visible_devices.c_str(), 1);
    }
  }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path()};
};

// The power-limit relay over each fake vendor: the process's visible-devices
// variable (CUDA_VISIBLE_DEVICES for NVML, HIP_VISIBLE_DEVICES for AMD SMI)
// renumbers its GPUs, and ZeusdGpu names the daemon's GPU by the backend's
// index.
class RelayVendorTest : public ::testing::TestWithParam<FakeGpuVendor> {
 protected:
  void SetUp() override { daemon_.set_vendor(GetParam()); }

  TempDir dir_;
  DaemonProcess daemon_{dir_.path()};
};

INSTANTIATE_TEST_SUITE_P(Vendors, RelayVendorTest, ::testing::ValuesIn(DaemonFakeGpuVendors()),
                         FakeGpuVendorName());

TEST_P(RelayVendorTest, VisibleGpuZeroIsTheDaemonsBackendIndex) {
  ASSERT_TRUE(daemon_.Start({"--group", std::to_string(getgid())}));
  const FakeGpuVendor vendor = GetParam();
  const std::string visible_env =
      vendor.name == "amdsmi" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  ClientProcess client([&](ClientProcess& self) -> int {
    for (const auto& [name, value] : vendor.Env()) setenv(name.c_str(), value.c_str(), 1);
    setenv(vendor.Knob("GPUS").c_str(), "4", 1);
    setenv(vendor.Knob("STATE").c_str(), daemon_.gpu_file().c_str(), 1);
    setenv("ZEUSD_SOCK_PATH", daemon_.socket().c_str(), 1);
    unsetenv(vendor.Knob("LOG").c_str());
    unsetenv("ZEUS_DRY_RUN");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("HIP_VISIBLE_DEVICES");
    setenv(visible_env.c_str(), "2", 1);
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok() || gpus->size() != 1) {
      self.Report("open: " + gpus.status().ToString());
      return 1;
    }
    self.Report((*gpus)[0]->SetPowerLimitMw(321'000).ToString());
    ClientProcess::HoldForever();
  });
  EXPECT_EQ(client.NextReport(), "ok");
  std::vector<FakeGpuSettings> gpus = daemon_.Gpus();
  EXPECT_EQ(gpus[2].power_limit_mw, 321'000u);
  EXPECT_EQ(gpus[0].power_limit_mw, 700'000u);
  client.Kill(SIGKILL);
  EXPECT_TRUE(
      WaitFor([&] { return daemon_.Gpus()[2].power_limit_mw == 700'000; }, milliseconds(1000)));
}

TEST_F(RelayTest, NvmlSettersGoThroughTheDaemonAndComeBackWhenTheProcessEnds) {
  ASSERT_TRUE(daemon_.Start({"--group", std::to_string(getgid())}));
  // CUDA_VISIBLE_DEVICES=2: the process's GPU 0 is the daemon's GPU 2.
  ClientProcess client([&](ClientProcess& self) -> int {
    ClientEnvironment("2");
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok() || gpus->size() != 1) {
      self.Report("open: " + gpus.status().ToString());
      return 1;
    }
    Gpu* gpu = (*gpus)[0].get();
    Status set = gpu->SetPowerLimitMw(333'000);
    Status persist = gpu->SetPersistenceMode(true);
    StatusOr<uint32_t> now = gpu->PowerLimitMw();
    Status bad = gpu->SetPowerLimitMw(5);
    Status clocks = gpu->SetGpuLockedClocksMhz(1000, 1200);
    if (!clocks.ok() || daemon_.Gpus()[2].gpu_clocks_max_mhz != 1200) {
      self.Report("clocks: " + clocks.ToString());
      return 1;
    }
    self.Report(set.ToString() + "|" + persist.ToString() + "|" +
                (now.ok() ? std::to_string(*now) : now.status().ToString()) + "|" + bad.ToString());
    ClientProcess::HoldForever();
  });
  const std::string report = client.NextReport();
  EXPECT_THAT(report, HasSubstr("ok|ok|333000|"));
  EXPECT_THAT(report, HasSubstr("power_limit_mw 5 is outside GPU 2's range [100000, 700000] mW"));
  EXPECT_EQ(daemon_.Gpus()[2].power_limit_mw, 333'000u);
  EXPECT_EQ(daemon_.Gpus()[2].persistence, 1);

  // Another process is refused with the holder's pid.
  ClientProcess second([&](ClientProcess& self) -> int {
    ClientEnvironment();
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok()) return 1;
    self.Report((*gpus)[2]->SetPowerLimitMw(200'000).ToString());
    return 0;
  });
  const std::string refused = second.NextReport();
  EXPECT_THAT(refused, HasSubstr("failed_precondition"));
  EXPECT_THAT(refused, HasSubstr("GPU 2 is held by pid " + std::to_string(client.pid())));
  second.Wait();

  client.Kill(SIGKILL);
  EXPECT_TRUE(WaitFor(
      [&] {
        FakeGpuSettings g = daemon_.Gpus()[2];
        return g.power_limit_mw == 700'000 && g.persistence == 0;
      },
      milliseconds(1000)));
}

TEST_F(RelayTest, RelaysSendZeusdTokenToADaemonThatRequiresTokens) {
  const std::string key_path = dir_.path() + "/signing.key";
  ZEUS_ASSERT_OK(WriteFileAtomically(key_path, "relay test key, 32 bytes or more"));
  ASSERT_EQ(chmod(key_path.c_str(), 0600), 0);
  ASSERT_TRUE(daemon_.Start({"--group", std::to_string(getgid()), "--signing-key-path", key_path}));
  StatusOr<std::string> control =
      IssueToken("relay test key, 32 bytes or more",
                 TokenClaims{"job", {"gpu-control", "gpu-read"}, std::nullopt});
  ZEUS_ASSERT_OK(control.status());
  auto set_limit = [&](const std::string& token) {
    ClientProcess client([&](ClientProcess& self) -> int {
      ClientEnvironment();
      if (token.empty()) {
        unsetenv("ZEUSD_TOKEN");
      } else {
        setenv("ZEUSD_TOKEN", token.c_str(), 1);
      }
      StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
      if (!gpus.ok()) {
        self.Report("open: " + gpus.status().ToString());
        return 1;
      }
      self.Report((*gpus)[1]->SetPowerLimitMw(444'000).ToString());
      return 0;
    });
    const std::string report = client.NextReport();
    client.Wait();
    return report;
  };
  const std::string without = set_limit("");
  EXPECT_THAT(without, HasSubstr("permission_denied"));
  EXPECT_THAT(without, HasSubstr("HTTP 401"));
  EXPECT_THAT(without, HasSubstr("set ZEUSD_TOKEN"));
  EXPECT_EQ(daemon_.Gpus()[1].power_limit_mw, 700'000u);
  EXPECT_EQ(set_limit(*control), "ok");
}

TEST(PciBusIdTest, NvmlAddressesAreNormalisedAsLspciPrintsThem) {
  setenv("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL, 1);
  setenv("FAKE_NVML_GPUS", "2", 1);
  unsetenv("FAKE_NVML_STATE");
  unsetenv("ZEUSD_SOCK_PATH");
  unsetenv("CUDA_VISIBLE_DEVICES");
  StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  // The fake reports NVML's "00000000:1B:00.0" and "00000000:3B:00.0".
  EXPECT_EQ((*gpus)[0]->PciBusId().value_or("?"), "0000:1b:00.0");
  EXPECT_EQ((*gpus)[1]->PciBusId().value_or("?"), "0000:3b:00.0");
  nvmlPciInfo_t pci{};
  std::snprintf(pci.bus_id_legacy, sizeof(pci.bus_id_legacy), "0001:AF:1F.3");
  pci.domain = 0x10001;
  pci.bus = 0xaf;
  pci.device = 0x1f;
  EXPECT_EQ(nvml::FormatPciBusId(pci), "10001:af:1f.3");
  pci.domain = 0;
  pci.bus_id_legacy[0] = '\0';  // No string: function 0.
  EXPECT_EQ(nvml::FormatPciBusId(pci), "0000:af:1f.0");
}

TEST_F(RelayTest, DryRunCallsNeitherTheDaemonNorTheDeviceAndReadsStillGoToNvml) {
  ASSERT_TRUE(daemon_.Start({"--group", std::to_string(getgid())}));
  ClientProcess client([&](ClientProcess& self) -> int {
    ClientEnvironment("1");
    setenv("ZEUS_DRY_RUN", "1", 1);
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok() || gpus->size() != 1) return 1;
    Gpu* gpu = (*gpus)[0].get();
    Status set = gpu->SetPowerLimitMw(250'000);
    Status persist = gpu->SetPersistenceMode(true);
    Status clocks = gpu->SetGpuLockedClocksMhz(900, 1200);
    Status outside = gpu->SetPowerLimitMw(5);
    // Reads pass through both decorators to NVML.
    self.Report(set.ToString() + "|" + persist.ToString() + "|" + clocks.ToString() + "|" +
                gpu->PciBusId().value_or("?") + "|" + std::to_string(gpu->index()) + "|" +
                outside.ToString());
    return 0;
  });
  const std::string report = client.NextReport();
  EXPECT_THAT(report, HasSubstr("ok|ok|ok|0000:3b:00.0|0|"));
  EXPECT_THAT(report,
              HasSubstr("GPU 0 (NVML index 1): power limit 5 mW: outside the allowed range"));
  client.Wait();
  EXPECT_EQ(Http(daemon_.socket(), "GET", "/leases").body, "{\"leases\":[]}");
  EXPECT_EQ(daemon_.Gpus()[1].power_limit_mw, 700'000u);
  EXPECT_EQ(daemon_.Gpus()[1].gpu_clocks_max_mhz, 0u);
  EXPECT_THAT(ReadFileToString(daemon_.gpu_log()).value_or(""), Not(HasSubstr("set_")));
}

TEST_F(RelayTest, RelayErrorsNameTheReason) {
  // Without --group, only root may change.
  ASSERT_TRUE(daemon_.Start());
  if (geteuid() != 0) {
    ClientProcess client([&](ClientProcess& self) -> int {
      ClientEnvironment();
      StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
      if (!gpus.ok()) return 1;
      self.Report((*gpus)[0]->SetPowerLimitMw(200'000).ToString());
      return 0;
    });
    EXPECT_THAT(client.NextReport(), HasSubstr("permission_denied"));
    return;
  }
  // A daemon that is not running: the error says what to do.
  ClientProcess client([&](ClientProcess& self) -> int {
    ClientEnvironment();
    setenv("ZEUSD_SOCK_PATH", (dir_.path() + "/nobody-here.sock").c_str(), 1);
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok()) return 1;
    self.Report((*gpus)[0]->SetPowerLimitMw(200'000).ToString());
    return 0;
  });
  const std::string report = client.NextReport();
  EXPECT_THAT(report, HasSubstr("unavailable"));
  EXPECT_THAT(report, HasSubstr("is `zeus daemon` running?"));
  EXPECT_THAT(report, HasSubstr("nobody-here.sock: cannot connect: No such file or directory"));
  client.Wait();
  // A socket file left by a daemon that is gone: refused, with the same hint.
  const std::string stale = dir_.path() + "/stale.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(stale.size(), sizeof(addr.sun_path));
  stale.copy(addr.sun_path, stale.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  ClientProcess refused([&](ClientProcess& self) -> int {
    ClientEnvironment();
    setenv("ZEUSD_SOCK_PATH", stale.c_str(), 1);
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus();
    if (!gpus.ok()) return 1;
    self.Report((*gpus)[0]->SetPowerLimitMw(200'000).ToString());
    return 0;
  });
  const std::string refused_report = refused.NextReport();
  EXPECT_THAT(refused_report, HasSubstr("via unix socket " + stale + ": connection refused"));
  EXPECT_THAT(refused_report, HasSubstr("is `zeus daemon` running?"));
  refused.Wait();
}

TEST_F(RelayTest, RaplEnergyIsReadThroughTheDaemon) {
  const std::string root = dir_.path() + "/powercap";
  const std::string package = root + "/intel-rapl:0";
  const std::string dram = package + "/intel-rapl:0:1";
  for (const std::string& d : {root, package, dram}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  auto zone = [](const std::string& path, const std::string& name, uint64_t energy_uj) {
    ZEUS_ASSERT_OK(WriteFileAtomically(path + "/name", name + "\n"));
    ZEUS_ASSERT_OK(WriteFileAtomically(path + "/max_energy_range_uj", "1000000000\n"));
    ZEUS_ASSERT_OK(WriteFileAtomically(path + "/energy_uj", std::to_string(energy_uj) + "\n"));
  };
  zone(package, "package-0", 5000);
  zone(dram, "dram", 700);
  daemon_.set_powercap_root(root);
  ASSERT_TRUE(daemon_.Start());
  auto read_through_daemon = [&]() {
    ClientProcess client([&](ClientProcess& self) -> int {
      ClientEnvironment();
      StatusOr<std::vector<std::unique_ptr<Cpu>>> cpus = OpenCpus("/nonexistent");
      if (!cpus.ok() || cpus->size() != 1 || !(*cpus)[0]->HasDram()) {
        self.Report("open: " + cpus.status().ToString());
        return 1;
      }
      StatusOr<uint64_t> pkg = (*cpus)[0]->PackageEnergyUj();
      StatusOr<uint64_t> mem = (*cpus)[0]->DramEnergyUj();
      self.Report(pkg.ok() && mem.ok() ? std::to_string(*pkg) + " " + std::to_string(*mem)
                                       : pkg.status().ToString() + mem.status().ToString());
      return 0;
    });
    std::string report = client.NextReport();
    client.Wait();
    return report;
  };
  const std::string first = read_through_daemon();
  uint64_t pkg0 = 0, mem0 = 0;
  ASSERT_EQ(std::sscanf(first.c_str(), "%lu %lu", &pkg0, &mem0), 2) << first;
  zone(package, "package-0", 5000 + 1234);
  zone(dram, "dram", 700 + 56);
  const std::string second = read_through_daemon();
  uint64_t pkg1 = 0, mem1 = 0;
  ASSERT_EQ(std::sscanf(second.c_str(), "%lu %lu", &pkg1, &mem1), 2) << second;
  EXPECT_EQ(pkg1 - pkg0, 1234u);
  EXPECT_EQ(mem1 - mem0, 56u);
  // /discover lists the CPU with its DRAM zone, as the original client reads it.
  const std::string discover = Http(daemon_.socket(), "GET", "/discover").body;
  EXPECT_THAT(discover, HasSubstr("\"cpus\":[{\"dram_available\":true,\"id\":0}]"));
  EXPECT_THAT(discover, HasSubstr("\"cpu_ids\":[0]"));
}

}  // namespace
}  // namespace zeus::testing
