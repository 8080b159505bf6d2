// DescribeEnvironment and its reporters, with the fake libnvml and a temp
// powercap tree; and `zeus show-env` end to end.

#include "zeus/device/environment.h"

#include <cstdio>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_nvml;
using ::testing::HasSubstr;
using ::testing::Not;

class EnvironmentTest : public ::testing::Test {
 protected:
  EnvironmentTest() {
    for (const char* name :
         {fake::kGpus, fake::kNames, fake::kArchitectures, fake::kInitRc, fake::kEnergyRc,
          fake::kSetRc, fake::kLostAfterReads, fake::kPowerMw, fake::kEnergyStepMj, fake::kLog,
          "ZEUS_NVML_LIBRARY", "ZEUS_DRY_RUN", "CUDA_VISIBLE_DEVICES"}) {
      env_.Unset(name);
    }
  }

  // A powercap tree with one package zone and its DRAM zone.
  std::string MakeRaplTree() {
    for (const std::string rel : {"intel-rapl:0", "intel-rapl:0/intel-rapl:0:0"}) {
      EXPECT_EQ(mkdir(dir_.File(rel).c_str(), 0755), 0);
    }
    for (const auto& [rel, name] :
         {std::pair<std::string, std::string>{"intel-rapl:0", "package-0"},
          {"intel-rapl:0/intel-rapl:0:0", "dram"}}) {
      dir_.WriteFile(rel + "/name", name + "\n");
      dir_.WriteFile(rel + "/energy_uj", "1234\n");
      dir_.WriteFile(rel + "/max_energy_range_uj", "262143328850\n");
    }
    return dir_.path();
  }

  EnvironmentOptions Options(const char* library, const std::string& powercap_root) {
    EnvironmentOptions options;
    options.gpus.environment["ZEUS_NVML_LIBRARY"] = library;
    options.powercap_root = powercap_root;
    return options;
  }

  // The NVML entry of the report's "gpu_backends".
  static nlohmann::json Nvml(const nlohmann::json& j) {
    for (const nlohmann::json& backend : j["gpu_backends"]) {
      if (backend["name"] == "nvml") return backend;
    }
    ADD_FAILURE() << "no nvml backend in " << j.dump();
    return nlohmann::json::object();
  }

  testing::ScopedEnv env_;
  testing::TempDir dir_;
};

TEST_F(EnvironmentTest, JsonDescribesGpusAndRaplZones) {
  env_.Set(fake::kNames, "NVIDIA H100 80GB HBM3,Tesla P100");
  env_.Set(fake::kArchitectures, "9,4");
  env_.Set("ZEUS_DRY_RUN", "1");
  EnvironmentDescription env = DescribeEnvironment(Options(FAKE_NVML_FULL, MakeRaplTree()));
  nlohmann::json j = nlohmann::json::parse(EnvironmentToJson(env));

  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(Nvml(j)["available"], true);
  EXPECT_EQ(Nvml(j)["versions"]["driver"], fake::kDriverVersion);
  EXPECT_EQ(Nvml(j)["versions"]["nvml"], fake::kNvmlVersion);
  ASSERT_EQ(j["gpus"].size(), 2u);
  const nlohmann::json& gpu = j["gpus"][0];
  EXPECT_EQ(gpu["index"], 0);
  EXPECT_EQ(gpu["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu["architecture"], "Hopper");
  EXPECT_EQ(j["gpus"][1]["architecture"], "Pascal");
  EXPECT_DOUBLE_EQ(gpu["power_limit_w"]["min"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(gpu["power_limit_w"]["max"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ(gpu["power_limit_w"]["default"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ(gpu["power_limit_w"]["current"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ(gpu["power_limit_w"]["enforced"].get<double>(), 700.0);
  EXPECT_EQ(gpu["energy_counter_supported"], true);
  EXPECT_EQ(gpu["persistence_mode"], false);
  EXPECT_TRUE(gpu["errors"].empty());

  ASSERT_EQ(j["cpus"]["zones"].size(), 2u);
  EXPECT_EQ(j["cpus"]["zones"][0]["kind"], "package");
  EXPECT_EQ(j["cpus"]["zones"][0]["readable"], true);
  EXPECT_EQ(j["cpus"]["zones"][1]["kind"], "dram");
  EXPECT_EQ(j["nothing_to_measure"], false);
}

TEST_F(EnvironmentTest, OldLibraryReportsEnergyCounterUnsupported) {
  EnvironmentDescription env = DescribeEnvironment(Options(FAKE_NVML_V1, dir_.path()));
  nlohmann::json j = nlohmann::json::parse(EnvironmentToJson(env));
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["energy_counter_supported"], false);
  EXPECT_TRUE(j["gpus"][0]["architecture"].is_null());
  EXPECT_THAT(j["gpus"][0]["errors"]["architecture"].get<std::string>(),
              HasSubstr("nvmlDeviceGetArchitecture"));
  EXPECT_EQ(Nvml(j)["available"], true);
  EXPECT_TRUE(Nvml(j)["versions"].empty());

  std::ostringstream text;
  WriteEnvironmentText(env, text);
  EXPECT_THAT(text.str(), HasSubstr("energy counter: not supported"));
  EXPECT_THAT(text.str(), HasSubstr("NVML: loaded, versions unknown"));
}

TEST_F(EnvironmentTest, NothingToMeasureIsStatedClearly) {
  EnvironmentDescription env =
      DescribeEnvironment(Options("/nonexistent/libnvidia-ml.so.1", dir_.path()));
  EXPECT_TRUE(env.NothingToMeasure());
  std::ostringstream text;
  WriteEnvironmentText(env, text);
  EXPECT_THAT(text.str(), HasSubstr("Nothing to measure on this machine"));
  EXPECT_THAT(text.str(), HasSubstr("Dry run (ZEUS_DRY_RUN): off"));
  nlohmann::json j = nlohmann::json::parse(EnvironmentToJson(env));
  EXPECT_EQ(j["nothing_to_measure"], true);
  EXPECT_EQ(Nvml(j)["available"], false);
  EXPECT_THAT(Nvml(j)["error"].get<std::string>(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
}

TEST_F(EnvironmentTest, TextReportShowsLimitsInWatts) {
  EnvironmentDescription env = DescribeEnvironment(Options(FAKE_NVML_FULL, MakeRaplTree()));
  std::ostringstream text;
  WriteEnvironmentText(env, text);
  EXPECT_THAT(text.str(), HasSubstr("GPU 0: Fake H100 0 (Hopper)"));
  EXPECT_THAT(text.str(), HasSubstr("min 100.0 W, max 700.0 W, default 700.0 W"));
  EXPECT_THAT(text.str(), HasSubstr("energy counter: supported"));
  EXPECT_THAT(text.str(), HasSubstr("CPU 0 dram: readable"));
  EXPECT_THAT(text.str(), Not(HasSubstr("Nothing to measure")));
}

// Runs `command`, returning its stdout and exit status.
std::pair<std::string, int> RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  return {output, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST_F(EnvironmentTest, ShowEnvCommandPrintsJsonAndExitsZero) {
  std::string root = MakeRaplTree();
  auto [output, code] =
      RunCommand(std::string("ZEUS_DRY_RUN=1 ZEUS_NVML_LIBRARY=") + FAKE_NVML_FULL + " " +
                 ZEUS_CLI + " show-env --json --powercap-root " + root);
  EXPECT_EQ(code, 0);
  nlohmann::json j = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << output;
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["cpus"]["zones"].size(), 2u);

  auto [text, text_code] = RunCommand(std::string("ZEUS_NVML_LIBRARY=/nonexistent/libnvml.so ") +
                                      ZEUS_CLI + " show-env --powercap-root " + dir_.File("none"));
  EXPECT_EQ(text_code, 0);
  EXPECT_THAT(text, HasSubstr("Nothing to measure on this machine"));
}

}  // namespace
}  // namespace zeus
