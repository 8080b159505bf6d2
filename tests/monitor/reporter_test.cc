#include "zeus/monitor/reporter.h"

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace zeus {
namespace {

MonitorReport SampleReport() {
  MonitorReport report;
  report.command = {"python3", "train.py"};
  report.exit_code = 3;
  report.gpu_indices = {0, 2};
  report.cpu_indices = {1};
  Measurement& m = report.measurement;
  m.name = "zeus monitor";
  m.time_s = 10.0;
  m.gpu_energy_j = {1500.0, 2000.0};
  m.gpu_energy_source = {GpuEnergySource::kCounter, GpuEnergySource::kPowerIntegration};
  m.gpu_below_counter_resolution = {false, false};
  m.cpu_energy_j = {400.0};
  m.dram_energy_j = {50.0};
  return report;
}

TEST(MonitorReporterTest, TextShowsEnergyAveragePowerAndSourcePerDevice) {
  std::ostringstream out;
  NewTextReporter(&out)->ReportFinal(SampleReport());
  EXPECT_EQ(out.str(),
            "Command:    python3 train.py\n"
            "Exit code:  3\n"
            "Wall time:  10.000 s\n"
            "Device         Energy (J)      Avg (W)  Source\n"
            "GPU 0            1500.000        150.0  counter\n"
            "GPU 2            2000.000        200.0  power_integration\n"
            "CPU 1             400.000         40.0  rapl\n"
            "DRAM 1             50.000          5.0  rapl\n"
            "GPU total        3500.000        350.0\n");
}

TEST(MonitorReporterTest, JsonHoldsEveryFieldAndEachReportIsOneLine) {
  std::ostringstream out;
  auto reporter = NewJsonReporter(&out);
  MonitorReport report = SampleReport();
  reporter->ReportInterval(1.0, report.measurement, report);
  std::string interval_line = out.str();
  ASSERT_EQ(interval_line.find('\n'), interval_line.size() - 1);
  nlohmann::json interval = nlohmann::json::parse(interval_line);
  EXPECT_EQ(interval["elapsed_s"], 1.0);
  EXPECT_EQ(interval["gpus"][1]["average_power_w"], 200.0);

  std::ostringstream final_out;
  NewJsonReporter(&final_out)->ReportFinal(report);
  // One line too, so intervals and the final report form JSON Lines.
  ASSERT_EQ(final_out.str().find('\n'), final_out.str().size() - 1);
  nlohmann::json j = nlohmann::json::parse(final_out.str());
  EXPECT_EQ(j["command"], (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["time_s"], 10.0);
  EXPECT_EQ(j["total_gpu_energy_j"], 3500.0);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["index"], 2);
  EXPECT_EQ(j["gpus"][1]["energy_j"], 2000.0);
  EXPECT_EQ(j["gpus"][1]["source"], "power_integration");
  EXPECT_EQ(j["gpus"][0]["below_counter_resolution"], false);
  EXPECT_EQ(j["cpus"][0]["index"], 1);
  EXPECT_EQ(j["cpus"][0]["dram_energy_j"], 50.0);
}

TEST(MonitorReporterTest, JsonWithoutCommandHasNullExitCode) {
  MonitorReport report = SampleReport();
  report.command.clear();
  report.exit_code.reset();
  std::ostringstream out;
  NewJsonReporter(&out)->ReportFinal(report);
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["command"].empty());
}

}  // namespace
}  // namespace zeus
