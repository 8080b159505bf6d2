// DeviceMetrics against fake devices: the values, units and labels of one
// scrape, and how read errors are reported.

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"
#include "zeus/exporter/device_exporter.h"
#include "zeus/util/strings.h"

#include "tests/exporter/metrics_text.h"
#include "tests/testing/raw_socket.h"

namespace zeus {
namespace {

using zeus::testing::RawClient;
using zeus::testing::SampleValue;

class DeviceMetricsTest : public ::testing::Test {
 protected:
  DeviceMetricsTest()
      : gpu0_(&clock_, Options(0, 250'000, 180.5)),
        gpu1_(&clock_, Options(1, 300'000, 90.0)),
        cpu0_(0, /*has_dram=*/true),
        cpu1_(1, /*has_dram=*/false) {}

  static FakeGpuOptions Options(int index, uint32_t limit_mw, double power_w) {
    FakeGpuOptions options;
    options.index = index;
    options.name = "Fake GPU " + std::to_string(index);
    options.uuid = "GPU-test-" + std::to_string(index);
    options.power_limit_mw = limit_mw;
    options.power_w = [power_w](double, uint32_t) { return power_w; };
    return options;
  }

  FakeClock clock_;
  FakeGpu gpu0_;
  FakeGpu gpu1_;
  FakeCpu cpu0_;
  FakeCpu cpu1_;
};

TEST_F(DeviceMetricsTest, ReportsEnergyPowerAndLimitPerGpuInJoulesAndWatts) {
  DeviceMetrics metrics({&gpu0_, &gpu1_}, {});
  clock_.AdvanceSeconds(10.0);
  const std::string text = metrics.ScrapeText();
  EXPECT_NE(text.find("# TYPE zeus_gpu_energy_joules_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE zeus_gpu_power_watts gauge"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(SampleValue(text, "zeus_gpu_energy_joules_total", {{"gpu", "0"}}).value(),
                   1805.0);
  EXPECT_DOUBLE_EQ(SampleValue(text, "zeus_gpu_energy_joules_total", {{"gpu", "1"}}).value(),
                   900.0);
  EXPECT_DOUBLE_EQ(SampleValue(text, "zeus_gpu_power_watts", {{"gpu", "0"}}).value(), 180.5);
  EXPECT_DOUBLE_EQ(SampleValue(text, "zeus_gpu_power_limit_watts", {{"gpu", "0"}}).value(), 250.0);
  EXPECT_DOUBLE_EQ(SampleValue(text, "zeus_gpu_power_limit_watts", {{"gpu", "1"}}).value(), 300.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "1"}}), 1.0);
  // Name and UUID label every GPU series.
  EXPECT_EQ(SampleValue(text, "zeus_gpu_power_watts",
                        {{"gpu", "1"}, {"uuid", "GPU-test-1"}, {"name", "Fake GPU 1"}}),
            90.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "0"}, {"metric", "energy"}}),
            0.0);
  // The counter moves with the energy the GPU used.
  clock_.AdvanceSeconds(2.0);
  EXPECT_DOUBLE_EQ(
      SampleValue(metrics.ScrapeText(), "zeus_gpu_energy_joules_total", {{"gpu", "0"}}).value(),
      1805.0 + 361.0);
  // Only reads: no limit was ever set.
  EXPECT_TRUE(gpu0_.power_limit_history().empty());
  EXPECT_TRUE(gpu1_.power_limit_history().empty());
}

TEST_F(DeviceMetricsTest, DcgmCompatibleAddsDcgmNamesUnitsAndLabels) {
  DeviceMetricsOptions options;
  options.dcgm_compatible = true;
  options.hostname = "node-1";
  DeviceMetrics metrics({&gpu0_, &gpu1_}, {}, options);
  clock_.AdvanceSeconds(10.0);
  const std::string text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "DCGM_FI_DEV_POWER_USAGE",
                        {{"gpu", "0"},
                         {"UUID", "GPU-test-0"},
                         {"pci_bus_id", "00000000:01:00.0"},
                         {"device", "nvidia0"},
                         {"modelName", "Fake GPU 0"},
                         {"Hostname", "node-1"}}),
            180.5);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"), std::string::npos);
  EXPECT_DOUBLE_EQ(
      SampleValue(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", {{"gpu", "0"}}).value(),
      1'805'000.0);  // mJ.
  EXPECT_EQ(SampleValue(text, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "1"}}), 45.0);
  EXPECT_EQ(SampleValue(text, "DCGM_FI_DEV_POWER_MGMT_LIMIT", {{"gpu", "0"}}), 250.0);
  EXPECT_EQ(SampleValue(text, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", {{"gpu", "1"}}), 300.0);
  // Zeus's own names stay.
  EXPECT_EQ(SampleValue(text, "zeus_gpu_power_watts", {{"gpu", "0"}}), 180.5);
  // Without the option: no DCGM name.
  EXPECT_EQ(DeviceMetrics({&gpu0_}, {}).ScrapeText().find("DCGM_"), std::string::npos);
}

TEST_F(DeviceMetricsTest, ReportsRaplPackageAndDramEnergyPerSocket) {
  cpu0_.AddEnergyUj(2'500'000, 750'000);
  cpu1_.AddEnergyUj(1'000'000, 0);
  DeviceMetrics metrics({}, {&cpu0_, &cpu1_});
  const std::string text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "zeus_cpu_package_energy_joules_total", {{"socket", "0"}}), 2.5);
  EXPECT_EQ(SampleValue(text, "zeus_cpu_dram_energy_joules_total", {{"socket", "0"}}), 0.75);
  EXPECT_EQ(SampleValue(text, "zeus_cpu_package_energy_joules_total", {{"socket", "1"}}), 1.0);
  // Socket 1 has no DRAM zone: no DRAM series, and it is still up.
  EXPECT_FALSE(SampleValue(text, "zeus_cpu_dram_energy_joules_total", {{"socket", "1"}}));
  EXPECT_EQ(SampleValue(text, "zeus_cpu_up", {{"socket", "1"}}), 1.0);
  EXPECT_EQ(text.find("zeus_gpu_"), std::string::npos) << "no GPU, no GPU families:\n" << text;
}

TEST_F(DeviceMetricsTest, AFailingReadMarksTheGpuDownCountsItAndKeepsTheRest) {
  DeviceMetrics metrics({&gpu0_, &gpu1_}, {&cpu0_});
  gpu0_.InjectError(FakeGpuOp::kTotalEnergy, UnavailableError("GPU is lost"));
  for (int scrape = 0; scrape < 3; ++scrape) metrics.ScrapeText();
  std::string text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "0"}, {"metric", "energy"}}),
            4.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "0"}, {"metric", "power"}}),
            0.0);
  // The failed series is left out; the GPU's other readings and the other
  // devices are still there.
  EXPECT_FALSE(SampleValue(text, "zeus_gpu_energy_joules_total", {{"gpu", "0"}}));
  EXPECT_EQ(SampleValue(text, "zeus_gpu_power_watts", {{"gpu", "0"}}), 180.5);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "1"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "zeus_cpu_up", {{"socket", "0"}}), 1.0);

  // Recovered: up again, the error count stays (a counter).
  gpu0_.ClearErrors();
  text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "0"}, {"metric", "energy"}}),
            4.0);
  EXPECT_TRUE(SampleValue(text, "zeus_gpu_energy_joules_total", {{"gpu", "0"}}));
}

TEST_F(DeviceMetricsTest, AFailingRaplReadMarksTheSocketDown) {
  DeviceMetrics metrics({}, {&cpu0_});
  cpu0_.InjectError(PermissionDeniedError("energy_uj: permission denied"));
  const std::string text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "zeus_cpu_up", {{"socket", "0"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "zeus_cpu_read_errors_total",
                        {{"socket", "0"}, {"metric", "package_energy"}}),
            1.0);
  EXPECT_EQ(
      SampleValue(text, "zeus_cpu_read_errors_total", {{"socket", "0"}, {"metric", "dram_energy"}}),
      1.0);
  EXPECT_FALSE(SampleValue(text, "zeus_cpu_package_energy_joules_total", {{"socket", "0"}}));
}

TEST_F(DeviceMetricsTest, AGpuWithoutEnergyCounterIsUpWithoutTheEnergySeries) {
  FakeGpuOptions options = Options(0, 250'000, 100.0);
  options.has_energy_counter = false;
  FakeGpu old_gpu(&clock_, options);
  DeviceMetrics metrics({&old_gpu}, {});
  const std::string text = metrics.ScrapeText();
  EXPECT_FALSE(SampleValue(text, "zeus_gpu_energy_joules_total", {{"gpu", "0"}})) << text;
  EXPECT_EQ(SampleValue(text, "zeus_gpu_power_watts", {{"gpu", "0"}}), 100.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "0"}, {"metric", "energy"}}),
            0.0);
}

TEST_F(DeviceMetricsTest, LabelsLeaveOutANameThatCannotBeRead) {
  gpu0_.InjectError(FakeGpuOp::kName, UnavailableError("no name"));
  DeviceMetrics metrics({&gpu0_}, {});
  gpu0_.ClearErrors();
  const std::string text = metrics.ScrapeText();
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}, {"uuid", "GPU-test-0"}}), 1.0);
  EXPECT_EQ(text.find("name=\""), std::string::npos) << text;
}

// Issue 23 item 9: 100 requests pipelined on one connection once got one
// answer (civetweb closed the connection after it, keep-alive being off).
TEST_F(DeviceMetricsTest, ExporterAnswersEveryPipelinedRequestInOrder) {
  DeviceMetrics metrics({&gpu0_}, {&cpu0_});
  DeviceExporterOptions options;
  options.listen_address = "127.0.0.1:0";
  StatusOr<std::unique_ptr<DeviceExporter>> exporter = DeviceExporter::Start(&metrics, options);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  RawClient client((*exporter)->port());
  ASSERT_TRUE(client.connected());
  constexpr int kRequests = 100;
  std::string requests;
  for (int i = 0; i < kRequests; ++i) {
    requests += "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (i + 1 == kRequests) requests += "Connection: close\r\n";
    requests += "\r\n";
  }
  ASSERT_TRUE(client.Send(requests));
  // The server closes after the last answer.
  EXPECT_TRUE(client.ClosedWithin(20));
  const std::string& answers = client.received();
  int answered = 0;
  for (size_t at = answers.find("HTTP/1.1 200"); at != std::string::npos;
       at = answers.find("HTTP/1.1 200", at + 1)) {
    ++answered;
  }
  EXPECT_EQ(answered, kRequests) << answers.substr(0, 500);
}

}  // namespace
}  // namespace zeus
