// Runs the built `zeus monitor` binary against a fake powercap tree (this
// machine may have no GPU and no readable RAPL; NVML is pointed at a path
// that does not exist so GPU machines behave the same).

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

#include "tests/device/fake_gpu_vendor.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using zeus::testing::TempDir;

class MonitorCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("ZEUS_AMDSMI_LIBRARY", "/nonexistent/libamd_smi.so", 1);
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

  // Runs `zeus monitor <args>` through the shell with stdout to
  // `stdout_path` (default: a file); returns its exit code and leaves
  // stdout/stderr in out_/err_.
  int Run(const std::string& args, const std::string& stdout_path = "") {
    const std::string out_file = stdout_path.empty() ? dir_.File("out") : stdout_path;
    std::string cmd =
        std::string(ZEUS_BINARY) + " monitor " + args + " >" + out_file + " 2>" + dir_.File("err");
    int status = std::system(cmd.c_str());
    out_ = stdout_path.empty() ? ReadFileToString(out_file).value_or("") : "";
    err_ = ReadFileToString(dir_.File("err")).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Starts `zeus monitor <args...>` directly (no shell) with stdout to
  // dir_/out and stderr to dir_/err.
  pid_t Start(std::vector<std::string> args) {
    args.insert(args.begin(), {ZEUS_BINARY, "monitor"});
    std::string out_path = dir_.File("out");
    std::string err_path = dir_.File("err");
    pid_t pid = fork();
    if (pid == 0) {
      if (freopen(out_path.c_str(), "w", stdout) == nullptr) _exit(99);
      if (freopen(err_path.c_str(), "w", stderr) == nullptr) _exit(99);
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

TEST_F(MonitorCommandTest, NothingToMeasureStillRunsTheCommandAndKeepsItsStatus) {
  TempDir empty;
  EXPECT_EQ(Run("--powercap-root " + empty.path() + " -- sh -c 'echo from-child; exit 4'"), 4);
  EXPECT_NE(err_.find("zeus monitor: warning: nothing to measure: no GPU ("), std::string::npos)
      << err_;
  EXPECT_NE(err_.find("no readable RAPL zone (no RAPL zone under " + empty.path() + ")"),
            std::string::npos)
      << err_;
  EXPECT_NE(err_.find("running the command anyway"), std::string::npos) << err_;
  EXPECT_EQ(out_.rfind("from-child\n", 0), 0u) << out_;
  EXPECT_NE(out_.find("Exit code:  4"), std::string::npos) << out_;
  // The JSON report says so: wall time, no devices.
  EXPECT_EQ(Run("--json --powercap-root " + empty.path() + " -- true"), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_TRUE(j["gpus"].empty());
  EXPECT_TRUE(j["cpus"].empty());
  EXPECT_GT(j["time_s"].get<double>(), 0.0);
  // Without a command there is nothing to do: zeus monitor's own failure.
  EXPECT_EQ(Run("--powercap-root " + empty.path()), 125);
  EXPECT_NE(err_.find("zeus monitor: nothing to measure"), std::string::npos) << err_;
}

TEST_F(MonitorCommandTest, HelpDocumentsExitCodesAndStreams) {
  EXPECT_EQ(Run("--help"), 0);
  EXPECT_NE(out_.find("125: zeus monitor\nitself failed"), std::string::npos) << out_;
  EXPECT_NE(out_.find("With --json and CMD but no -o,\nstdout carries only the JSON"),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("JSON Lines"), std::string::npos) << out_;
}

TEST_F(MonitorCommandTest, JsonReportStaysParseableWhileTheCommandPrints) {
  const std::string cmd = " -- sh -c 'echo child-stdout; echo child-stderr >&2; exit 5'";
  // stdout carries only the report; the command's stdout goes to stderr.
  EXPECT_EQ(Run("--json --powercap-root " + rapl_ + cmd), 5) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  EXPECT_EQ(j["exit_code"], 5);
  EXPECT_NE(err_.find("child-stdout\n"), std::string::npos) << err_;
  EXPECT_NE(err_.find("child-stderr\n"), std::string::npos) << err_;
  // With -o the report goes to the file and the command keeps its stdout.
  const std::string report = dir_.File("report.json");
  EXPECT_EQ(Run("--json -o " + report + " --powercap-root " + rapl_ + cmd), 5) << err_;
  EXPECT_EQ(out_, "child-stdout\n");
  j = nlohmann::json::parse(ReadFileToString(report).value_or(""));
  EXPECT_EQ(j["cpus"].size(), 1u);
}

TEST_F(MonitorCommandTest, IntervalJsonIsJsonLines) {
  const std::string report = dir_.File("report.jsonl");
  EXPECT_EQ(
      Run("--json --interval 0.02 -o " + report + " --powercap-root " + rapl_ + " -- sleep 0.3"), 0)
      << err_;
  std::vector<nlohmann::json> lines;
  for (const std::string& line : Split(ReadFileToString(report).value_or(""), '\n')) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  ASSERT_GE(lines.size(), 3u);
  for (size_t i = 0; i + 1 < lines.size(); ++i) EXPECT_TRUE(lines[i].contains("elapsed_s"));
  EXPECT_EQ(lines.back()["command"][0], "sleep");
  EXPECT_EQ(lines.back()["exit_code"], 0);
}

TEST_F(MonitorCommandTest, OwnWriteFailuresExit125UnlessTheCommandFailed) {
  EXPECT_EQ(Run("--json --powercap-root " + rapl_ + " -- true", "/dev/full"), 125);
  EXPECT_NE(err_.find("zeus monitor: cannot write the output to stdout: No space left on device"),
            std::string::npos)
      << err_;
  EXPECT_EQ(Run("--powercap-root " + rapl_ + " -- sh -c 'exit 3'", "/dev/full"), 3);
  EXPECT_NE(err_.find("cannot write"), std::string::npos) << err_;
  EXPECT_EQ(Run("-o /dev/full --powercap-root " + rapl_ + " -- true"), 125);
  EXPECT_NE(err_.find("cannot write --output '/dev/full'"), std::string::npos) << err_;
}

TEST_F(MonitorCommandTest, CsvNeverReadsMoreThanTheHeaderNorBlocks) {
  // /dev/full and a FIFO nobody reads: a clear failure before the command
  // runs, not 24 GB of memory or a hang.
  EXPECT_EQ(Run("--csv /dev/full --powercap-root " + rapl_ + " -- touch " + dir_.File("ran")), 125);
  EXPECT_NE(err_.find("'/dev/full'"), std::string::npos) << err_;
  EXPECT_FALSE(ReadFileToString(dir_.File("ran")).ok());
  const std::string fifo = dir_.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(Run("--csv " + fifo + " --powercap-root " + rapl_ + " -- true"), 125);
  EXPECT_NE(err_.find("'" + fifo + "'"), std::string::npos) << err_;
  // A log with the right header is appended to; start times are Unix time.
  const std::string csv = dir_.WriteFile("log.csv", "start_time,window_name,elapsed_time\n");
  const double before_s = static_cast<double>(std::time(nullptr));
  EXPECT_EQ(Run("--csv " + csv + " --powercap-root " + rapl_ + " -- true"), 0) << err_;
  std::vector<std::string> lines = Split(ReadFileToString(csv).value_or(""), '\n');
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "start_time,window_name,elapsed_time");
  StatusOr<double> start_s = ParseDouble(Split(lines[1], ',')[0]);
  ASSERT_TRUE(start_s.ok()) << lines[1];
  EXPECT_GE(*start_s, before_s - 1.0);
  EXPECT_LE(*start_s, before_s + 60.0);
  EXPECT_EQ(Split(lines[1], ',')[1], "zeus monitor");
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
  const std::string not_executable = dir_.WriteFile("script.sh", "exit 0\n");
  EXPECT_EQ(Run("--powercap-root " + rapl_ + " -- " + not_executable), 126);
  EXPECT_NE(err_.find("cannot run '" + not_executable + "': Permission denied"), std::string::npos)
      << err_;
}

TEST_F(MonitorCommandTest, BadDeviceListsAreUsageErrors) {
  EXPECT_EQ(Run("--cpus 5 --powercap-root " + rapl_ + " -- true"), 2);
  EXPECT_NE(err_.find("--cpus: no CPU 5 (this machine has 1)"), std::string::npos) << err_;
  EXPECT_EQ(Run("--cpus x --powercap-root " + rapl_ + " -- true"), 2);
  EXPECT_NE(err_.find("--cpus: expected a comma-separated list of indices, got 'x'"),
            std::string::npos)
      << err_;
  EXPECT_EQ(Run("--interval -1 --powercap-root " + rapl_ + " -- true"), 2);
  EXPECT_NE(err_.find("--interval: expected a number in [0, 1000000], got '-1'"), std::string::npos)
      << err_;
  // GPUs asked for on a machine without NVML: nothing of them to measure,
  // so the command runs with a warning.
  EXPECT_EQ(Run("--gpus 0 --powercap-root " + rapl_ + " -- touch " + dir_.File("ran")), 0);
  EXPECT_NE(err_.find("--gpus 0: "), std::string::npos) << err_;
  EXPECT_TRUE(ReadFileToString(dir_.File("ran")).ok());
  // Measuring a device twice would double its energy: refused as a usage error.
  EXPECT_EQ(Run("--cpus 0,0 --powercap-root " + rapl_ + " -- true"), 2);
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
  // JSON Lines: interval objects, then the final report on the last line.
  std::vector<std::string> lines = Split(out, '\n');
  ASSERT_GE(lines.size(), 3u) << out;
  ASSERT_EQ(lines.back(), "") << out;
  nlohmann::json first_interval = nlohmann::json::parse(lines[0]);
  EXPECT_TRUE(first_interval.contains("elapsed_s"));
  nlohmann::json j = nlohmann::json::parse(lines[lines.size() - 2]);
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["command"].empty());
  EXPECT_EQ(j["cpus"].size(), 1u);
  // It said so at once, on stderr.
  EXPECT_THAT(ReadFileToString(dir_.File("err")).value_or(""),
              ::testing::HasSubstr("zeus monitor: measuring CPU 0 until Ctrl-C"));
}

#if defined(FAKE_NVML_FULL) && defined(FAKE_AMDSMI_FULL)
// The real NVML and AMD SMI backends against the fake libraries the device
// tests build (one run per vendor): two GPUs whose counter grows 1 J per
// read, 150 W power.
class MonitorCommandGpuTest : public MonitorCommandTest,
                              public ::testing::WithParamInterface<testing::FakeGpuVendor> {
 protected:
  void SetUp() override {
    MonitorCommandTest::SetUp();
    for (const auto& [name, value] : GetParam().Env()) setenv(name.c_str(), value.c_str(), 1);
    empty_ = std::make_unique<TempDir>();
  }
  void TearDown() override {
    unsetenv(GetParam().Knob("ENERGY_RC").c_str());
    unsetenv(GetParam().Knob("LOST_AFTER_READS").c_str());
  }
  std::unique_ptr<TempDir> empty_;
};

INSTANTIATE_TEST_SUITE_P(Vendors, MonitorCommandGpuTest,
                         ::testing::ValuesIn(testing::FakeGpuVendors(FAKE_NVML_FULL,
                                                                     FAKE_AMDSMI_FULL)),
                         testing::FakeGpuVendorName());

TEST_P(MonitorCommandGpuTest, ReportsEachGpusCounterDifference) {
  EXPECT_EQ(Run("--json --powercap-root " + empty_->path() + " -- true"), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  ASSERT_EQ(j["gpus"].size(), 2u);
  // One read at Begin, one at End: one 1 J step.
  EXPECT_EQ(j["gpus"][0]["energy_j"], 1.0);
  EXPECT_EQ(j["gpus"][1]["energy_j"], 1.0);
  EXPECT_EQ(j["gpus"][0]["source"], "counter");
  EXPECT_EQ(j["total_gpu_energy_j"], 2.0);
}

TEST_P(MonitorCommandGpuTest, EnergyNotSupportedFallsBackToPowerIntegration) {
  setenv(GetParam().Knob("ENERGY_RC").c_str(), GetParam().rc_not_supported.c_str(), 1);
  EXPECT_EQ(Run("--json --gpus 1 --powercap-root " + empty_->path() + " -- sleep 0.2"), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["index"], 1);
  EXPECT_EQ(j["gpus"][0]["source"], "power_integration");
  EXPECT_NEAR(j["gpus"][0]["energy_j"].get<double>(), 150.0 * j["time_s"].get<double>(), 1e-6);
  EXPECT_NE(err_.find("GPU 0 has no energy counter"), std::string::npos) << err_;
}

TEST_P(MonitorCommandGpuTest, GpuLostMidRunIsAnErrorNamingTheGpu) {
  // Create and Begin read twice each.
  setenv(GetParam().Knob("LOST_AFTER_READS").c_str(), "4", 1);
  EXPECT_EQ(Run("--powercap-root " + empty_->path() + " -- true"), 125);
  EXPECT_NE(err_.find("zeus monitor: energy monitor: window 'zeus monitor' end: GPU 0: "),
            std::string::npos)
      << err_;
  EXPECT_NE(err_.find(GetParam().lost_code_name), std::string::npos) << err_;
  EXPECT_EQ(out_, "");
}

// Power domains need the fake libnvml's burst model (NVIDIA only).
class MonitorCommandNvmlDomainsTest : public MonitorCommandTest {
 protected:
  void SetUp() override {
    MonitorCommandTest::SetUp();
    setenv("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL, 1);
    empty_ = std::make_unique<TempDir>();
  }
  void TearDown() override {
    for (const char* name : {"FAKE_NVML_BURST", "FAKE_NVML_POWER_MW", "FAKE_NVML_ARCHITECTURES"}) {
      unsetenv(name);
    }
  }
  std::unique_ptr<TempDir> empty_;
};

TEST_F(MonitorCommandNvmlDomainsTest, PowerDomainIsSampledReportedAndIntegrated) {
  // 50 ms bursts of 400 W over 100 W: the instant power swings, the
  // one-second average holds near 250 W once a second has passed.
  setenv("FAKE_NVML_POWER_MW", "100000", 1);
  setenv("FAKE_NVML_BURST", "50,400000", 1);
  EXPECT_EQ(Run("--json --gpus 1 --interval 0.5 --power-domain device_average --powercap-root " +
                empty_->path() + " -- sleep 2.2"),
            0)
      << err_;
  std::vector<std::string> lines = Split(Trim(out_), '\n');
  ASSERT_GE(lines.size(), 4u) << out_;
  nlohmann::json last_interval = nlohmann::json::parse(lines[lines.size() - 2]);
  EXPECT_EQ(last_interval["power_domain"], "device_average");
  EXPECT_NEAR(last_interval["gpus"][0]["domain_power_w"].get<double>(), 250.0, 20.0);
  nlohmann::json final_report = nlohmann::json::parse(lines.back());
  EXPECT_EQ(final_report["power_domain"], "device_average");
  const double time_s = final_report["time_s"].get<double>();
  // The average starts at 100 W (before the bursts) and reaches 250 W after 1 s.
  const double integral_j = final_report["gpus"][0]["domain_energy_j"].get<double>();
  EXPECT_GT(integral_j, 175.0 * 1.0 + 250.0 * (time_s - 1.0) - 40.0);
  EXPECT_LT(integral_j, 250.0 * time_s + 10.0);
}

TEST_F(MonitorCommandNvmlDomainsTest, PowerDomainTheGpuLacksOrDoesNotExistIsRefused) {
  setenv("FAKE_NVML_ARCHITECTURES", "8,8", 1);  // Ada: no memory power.
  EXPECT_EQ(Run("--power-domain memory_average --powercap-root " + empty_->path() + " -- true"),
            125);
  EXPECT_NE(err_.find("power domain memory_average"), std::string::npos) << err_;
  EXPECT_NE(Run("--power-domain gpu_power --powercap-root " + empty_->path() + " -- true"), 0);
  EXPECT_NE(err_.find("gpu_power"), std::string::npos) << err_;
}

TEST_F(MonitorCommandNvmlDomainsTest, PowerDomainInTheTextReport) {
  EXPECT_EQ(Run("--gpus 0 --interval 0.2 --power-domain device_instant --powercap-root " +
                empty_->path() + " -- sleep 0.5"),
            0)
      << err_;
  EXPECT_NE(out_.find("|  device_instant:  GPU0    150.0 W"), std::string::npos) << out_;
  EXPECT_NE(out_.find("integral of device_instant"), std::string::npos) << out_;
}
#endif  // FAKE_NVML_FULL && FAKE_AMDSMI_FULL

}  // namespace
}  // namespace zeus
