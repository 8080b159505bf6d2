// Runs the built `zeus monitor` binary against a fake powercap tree (this
// machine may have no GPU and no readable RAPL; NVML is pointed at a path
// that does not exist so GPU machines behave the same).

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using zeus::testing::TempDir;

class MonitorCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    rapl_ = dir_.path() + "/powercap";
    std::string zone = rapl_ + "/intel-rapl:0";
    ASSERT_EQ(std::system(("mkdir -p '" + zone + "/intel-rapl:0:0'").c_str()), 0);
    dir_.WriteFile("powercap/intel-rapl:0/name", "package-0\n");
    dir_.WriteFile("powercap/intel-rapl:0/energy_uj", "1000000\n");
    dir_.WriteFile("powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/name", "dram\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/energy_uj", "500\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/max_energy_range_uj", "262143328850\n");
  }

  // Runs `zeus monitor <args>` through the shell; returns its exit code and
  // leaves stdout/stderr in out_/err_.
  int Run(const std::string& args) {
    std::string cmd = std::string(ZEUS_BINARY) + " monitor " + args + " >" + dir_.File("out") +
                      " 2>" + dir_.File("err");
    int status = std::system(cmd.c_str());
    out_ = ReadFileToString(dir_.File("out")).value_or("");
    err_ = ReadFileToString(dir_.File("err")).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Starts `zeus monitor <args...>` directly (no shell) with stdout to
  // dir_/out.
  pid_t Start(std::vector<std::string> args) {
    args.insert(args.begin(), {ZEUS_BINARY, "monitor"});
    std::string out_path = dir_.File("out");
    pid_t pid = fork();
    if (pid == 0) {
      if (freopen(out_path.c_str(), "w", stdout) == nullptr) _exit(99);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(98);
    }
    return pid;
  }

  // Waits up to 20 s for `pid`; returns its exit code (-1 on timeout/signal).
  static int WaitExit(pid_t pid) {
    for (int i = 0; i < 2000; ++i) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }

  TempDir dir_;
  std::string rapl_;
  std::string out_;
  std::string err_;
};

TEST_F(MonitorCommandTest, NothingToMeasureSaysSoAndFails) {
  TempDir empty;
  EXPECT_EQ(Run("--powercap-root " + empty.path() + " -- true"), 1);
  EXPECT_NE(err_.find("zeus monitor: nothing to measure: no GPU ("), std::string::npos) << err_;
  EXPECT_NE(err_.find("no readable RAPL zone (no RAPL zone under " + empty.path() + ")"),
            std::string::npos)
      << err_;
  EXPECT_EQ(out_, "");
}

TEST_F(MonitorCommandTest, KeepsTheExitCodeAndReportsEnergyAsJson) {
  std::string script = "echo 3000000 > " + rapl_ + "/intel-rapl:0/energy_uj; exit 3";
  EXPECT_EQ(Run("--json --powercap-root " + rapl_ + " -- sh -c '" + script + "'"), 3) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["command"][0], "sh");
  EXPECT_EQ(j["cpus"][0]["package_energy_j"], 2.0);
  EXPECT_EQ(j["cpus"][0]["dram_energy_j"], 0.0);
  EXPECT_GT(j["time_s"].get<double>(), 0.0);
}

TEST_F(MonitorCommandTest, ChildKilledBySignalGives128PlusSignal) {
  EXPECT_EQ(Run("--powercap-root " + rapl_ + " -- sh -c 'kill -TERM $$'"), 128 + SIGTERM);
  EXPECT_NE(out_.find("Exit code:  143"), std::string::npos) << out_;
  EXPECT_EQ(Run("--powercap-root " + rapl_ + " -- /nonexistent/command"), 127);
  EXPECT_NE(err_.find("cannot run '/nonexistent/command'"), std::string::npos) << err_;
}

TEST_F(MonitorCommandTest, BadDeviceListsAreClearErrors) {
  EXPECT_EQ(Run("--cpus 5 --powercap-root " + rapl_ + " -- true"), 1);
  EXPECT_NE(err_.find("--cpus: no CPU 5 (this machine has 1)"), std::string::npos) << err_;
  EXPECT_EQ(Run("--cpus x --powercap-root " + rapl_ + " -- true"), 1);
  EXPECT_NE(err_.find("--cpus: expected a comma-separated list of indices, got 'x'"),
            std::string::npos)
      << err_;
  EXPECT_EQ(Run("--gpus 0 --powercap-root " + rapl_ + " -- true"), 1);
  EXPECT_NE(err_.find("--gpus 0: "), std::string::npos) << err_;
  // Measuring a device twice would double its energy: refused.
  EXPECT_EQ(Run("--cpus 0,0 --powercap-root " + rapl_ + " -- true"), 1);
  EXPECT_NE(err_.find("--cpus: CPU 0 is listed twice"), std::string::npos) << err_;
}

TEST_F(MonitorCommandTest, ForwardsSigtermToTheChildAndKeepsItsStatus) {
  pid_t pid = Start({"--interval", "0.02", "--powercap-root", rapl_, "--", "sleep", "30"});
  // The first interval line proves the handlers are installed and the child runs.
  for (int i = 0; i < 2000 && ReadFileToString(dir_.File("out")).value_or("").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 128 + SIGTERM);
  std::string out = ReadFileToString(dir_.File("out")).value_or("");
  EXPECT_NE(out.find("]  CPU0 "), std::string::npos) << out;
  EXPECT_NE(out.find("Exit code:  143"), std::string::npos) << out;
}

TEST_F(MonitorCommandTest, WithoutACommandMeasuresUntilInterrupted) {
  pid_t pid = Start({"--json", "--interval", "0.02", "--powercap-root", rapl_});
  for (int i = 0; i < 2000 && ReadFileToString(dir_.File("out")).value_or("").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGINT);
  EXPECT_EQ(WaitExit(pid), 0);
  std::string out = ReadFileToString(dir_.File("out")).value_or("");
  // Interval lines (one JSON object each), then the final document.
  size_t final_start = out.find("{\n");
  ASSERT_NE(final_start, std::string::npos) << out;
  nlohmann::json first_interval = nlohmann::json::parse(out.substr(0, out.find('\n')));
  EXPECT_TRUE(first_interval.contains("elapsed_s"));
  nlohmann::json j = nlohmann::json::parse(out.substr(final_start));
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["command"].empty());
  EXPECT_EQ(j["cpus"].size(), 1u);
}

#ifdef FAKE_NVML_FULL
// The real NVML loader against the fake libnvml the device tests build: two
// GPUs whose counter grows 1 J per read, 150 W instant power.
class MonitorCommandNvmlTest : public MonitorCommandTest {
 protected:
  void SetUp() override {
    MonitorCommandTest::SetUp();
    setenv("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL, 1);
    empty_ = std::make_unique<TempDir>();
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_ENERGY_RC");
    unsetenv("FAKE_NVML_LOST_AFTER_READS");
  }
  std::unique_ptr<TempDir> empty_;
};

TEST_F(MonitorCommandNvmlTest, ReportsEachGpusCounterDifference) {
  EXPECT_EQ(Run("--json --powercap-root " + empty_->path() + " -- true"), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  ASSERT_EQ(j["gpus"].size(), 2u);
  // One read at Begin, one at End: one 1 J step.
  EXPECT_EQ(j["gpus"][0]["energy_j"], 1.0);
  EXPECT_EQ(j["gpus"][1]["energy_j"], 1.0);
  EXPECT_EQ(j["gpus"][0]["source"], "counter");
  EXPECT_EQ(j["total_gpu_energy_j"], 2.0);
}

TEST_F(MonitorCommandNvmlTest, EnergyNotSupportedFallsBackToPowerIntegration) {
  setenv("FAKE_NVML_ENERGY_RC", "3", 1);  // NVML_ERROR_NOT_SUPPORTED.
  EXPECT_EQ(Run("--json --gpus 1 --powercap-root " + empty_->path() + " -- sleep 0.2"), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["index"], 1);
  EXPECT_EQ(j["gpus"][0]["source"], "power_integration");
  EXPECT_NEAR(j["gpus"][0]["energy_j"].get<double>(), 150.0 * j["time_s"].get<double>(), 1e-6);
  EXPECT_NE(err_.find("GPU 0 has no energy counter"), std::string::npos) << err_;
}

TEST_F(MonitorCommandNvmlTest, GpuLostMidRunIsAnErrorNamingTheGpu) {
  setenv("FAKE_NVML_LOST_AFTER_READS", "4", 1);  // Create and Begin read twice each.
  EXPECT_EQ(Run("--powercap-root " + empty_->path() + " -- true"), 1);
  EXPECT_NE(err_.find("zeus monitor: energy monitor: window 'zeus monitor' end: GPU 0: "),
            std::string::npos)
      << err_;
  EXPECT_NE(err_.find("GPU_IS_LOST"), std::string::npos) << err_;
  EXPECT_EQ(out_, "");
}
#endif  // FAKE_NVML_FULL

}  // namespace
}  // namespace zeus
