// Runs the built `zeus exporter` with fake GPUs (the fake libnvml, then the
// fake libamd_smi: every test runs once per vendor) and a fake powercap
// tree: scraped by Debian's real Prometheus, its values come back through
// PromQL; it survives failing GPUs; bad flags are usage errors.

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/http/client.h"
#include "zeus/util/file.h"

#include "tests/device/fake_gpu_vendor.h"
#include "tests/exporter/metrics_text.h"
#include "tests/testing/child_process.h"
#include "tests/testing/prometheus_server.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using zeus::testing::ChildProcess;
using zeus::testing::PrometheusServer;
using zeus::testing::PrometheusServerOptions;
using zeus::testing::PromSample;
using zeus::testing::SampleValue;
using zeus::testing::TempDir;

class ExporterCommandTest : public ::testing::TestWithParam<testing::FakeGpuVendor> {
 protected:
  void SetUp() override {
    powercap_ = dir_.path() + "/powercap";
    dir_.WriteFile("powercap/intel-rapl:0/name", "package-0\n");
    dir_.WriteFile("powercap/intel-rapl:0/energy_uj", "1000000\n");
    dir_.WriteFile("powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/name", "dram\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/energy_uj", "500\n");
    dir_.WriteFile("powercap/intel-rapl:0/intel-rapl:0:0/max_energy_range_uj", "262143328850\n");
  }

  // Environment of an exporter with two fake GPUs of the vendor: GPU 0
  // limited to 250 W, GPU 1 at the fake's default limit (700 W), both drawing
  // 123.456 W (reported as 123 W by AMD SMI), their energy counters following
  // the wall clock at that power.
  std::map<std::string, std::string> FakeGpuEnv() const {
    std::map<std::string, std::string> env = GetParam().Env();
    env[Knob("GPUS")] = "2";
    env[Knob("POWER_MW")] = "123456";
    env[Knob("POWER_LIMITS_MW")] = "250000";
    env[Knob("ENERGY_FROM_POWER")] = "1";
    return env;
  }
  static std::string Knob(const std::string& suffix) { return GetParam().Knob(suffix); }

  // Starts `zeus exporter --listen 127.0.0.1:0 ARGS` and returns its
  // host:port once it serves.
  std::string StartExporter(std::map<std::string, std::string> env,
                            std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {ZEUS_BINARY,   "exporter",        "--listen",
                                     "127.0.0.1:0", "--powercap-root", powercap_};
    argv.insert(argv.end(), args.begin(), args.end());
    StatusOr<std::unique_ptr<ChildProcess>> process =
        ChildProcess::Start(argv, env, dir_.File("exporter.out"), dir_.File("exporter.err"));
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    if (!process.ok()) return "";
    exporter_ = *std::move(process);
    StatusOr<std::string> out =
        exporter_->WaitForOutput(dir_.File("exporter.out"), "/metrics", seconds(20));
    EXPECT_TRUE(out.ok()) << out.status().ToString() << "\nstderr: " << Stderr();
    if (!out.ok()) return "";
    const std::string prefix = "serving http://";
    const size_t start = out->find(prefix) + prefix.size();
    return out->substr(start, out->find("/metrics", start) - start);
  }

  std::string Stderr() const { return ReadFileToString(dir_.File("exporter.err")).value_or(""); }

  // Runs `zeus exporter ARGS` to completion (it must exit by itself).
  int RunToExit(const std::vector<std::string>& args, std::map<std::string, std::string> env) {
    std::vector<std::string> argv = {ZEUS_BINARY, "exporter"};
    argv.insert(argv.end(), args.begin(), args.end());
    StatusOr<std::unique_ptr<ChildProcess>> process =
        ChildProcess::Start(argv, env, dir_.File("run.out"), dir_.File("run.err"));
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    if (!process.ok()) return -1;
    for (int i = 0; i < 1000 && !(*process)->Poll().has_value(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    err_ = ReadFileToString(dir_.File("run.err")).value_or("");
    return (*process)->Stop();
  }

  static std::string Scrape(const std::string& address) {
    HttpClientOptions options;
    options.timeout_s = 5;
    HttpClient client(options);
    StatusOr<HttpClientResponse> result = client.Get("http://" + address + "/metrics");
    return result.ok() && result->status == 200 ? result->body : "";
  }

  TempDir dir_;
  std::string powercap_;
  std::unique_ptr<ChildProcess> exporter_;
  std::string err_;
};

INSTANTIATE_TEST_SUITE_P(Vendors, ExporterCommandTest,
                         ::testing::ValuesIn(testing::FakeGpuVendors(FAKE_NVML_FULL,
                                                                     FAKE_AMDSMI_FULL)),
                         testing::FakeGpuVendorName());

TEST_P(ExporterCommandTest, RealPrometheusScrapesTheFakeGpusAndCpuAndPromqlReturnsTheirValues) {
  ZEUS_SKIP_WITHOUT_PROMETHEUS();
  const std::string address = StartExporter(FakeGpuEnv());
  ASSERT_FALSE(address.empty());
  PrometheusServerOptions options;
  options.targets.push_back({"zeus_exporter", address});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrometheusServer> prometheus,
                            PrometheusServer::Start(options));
  ZEUS_ASSERT_OK(prometheus->WaitForTargetsUp(seconds(20)));

  ZEUS_ASSERT_OK_AND_ASSIGN(double limit_w,
                            prometheus->QueryValue(R"(zeus_gpu_power_limit_watts{gpu="0"})"));
  EXPECT_EQ(limit_w, 250.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double limit1_w,
      prometheus->QueryValue(std::string("zeus_gpu_power_limit_watts{uuid=\"") +
                             GetParam().uuid_prefix + "000000000001\", job=\"zeus_exporter\"}"));
  EXPECT_EQ(limit1_w, 700.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double power_w, prometheus->QueryValue("sum(zeus_gpu_power_watts)"));
  EXPECT_DOUBLE_EQ(power_w, 2 * GetParam().ReportedPowerW(123'456));
  ZEUS_ASSERT_OK_AND_ASSIGN(double gpus_up, prometheus->QueryValue("sum(zeus_gpu_up)"));
  EXPECT_EQ(gpus_up, 2.0);

  // The energy counter grows at the power the fake draws (its counter follows
  // the wall clock). deriv (the least-squares slope over the window's
  // scrapes) rather than rate: rate extrapolates over the whole window, which
  // a loaded machine's late first scrapes leave partly empty.
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::vector<PromSample> samples,
      prometheus->WaitForQuery(R"(count_over_time(zeus_gpu_energy_joules_total{gpu="0"}[3s]) >= 6)",
                               seconds(15)));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double slope_w,
      prometheus->QueryValue(R"(deriv(zeus_gpu_energy_joules_total{gpu="0"}[3s]))"));
  EXPECT_NEAR(slope_w, 123.456, 123.456 * 0.05);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double rate_w, prometheus->QueryValue(R"(rate(zeus_gpu_energy_joules_total{gpu="1"}[3s]))"));
  EXPECT_GT(rate_w, 0.0);
  EXPECT_LT(rate_w, 123.456 * 1.1);

  // RAPL: the counters are the zones' own values (energy_uj plus its
  // wraps), so the package counter moves to what energy_uj moved to.
  dir_.WriteFile("powercap/intel-rapl:0/energy_uj", "2000000\n");
  ZEUS_ASSERT_OK_AND_ASSIGN(
      samples, prometheus->WaitForQuery(R"(zeus_cpu_package_energy_joules_total{socket="0"} == 2)",
                                        seconds(10)));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double dram_j, prometheus->QueryValue(R"(zeus_cpu_dram_energy_joules_total{socket="0"})"));
  EXPECT_DOUBLE_EQ(dram_j, 500e-6);
  EXPECT_EQ(exporter_->Stop(), 0) << Stderr();
}

// --dcgm-names: the queries of a DCGM exporter dashboard (Grafana's "NVIDIA
// DCGM Exporter Dashboard": per-GPU power and temperature selected by
// instance and gpu, their sum and average, legends by UUID and modelName)
// answer for Zeus's GPUs through the real Prometheus.
TEST_P(ExporterCommandTest, RealPrometheusAnswersTheDcgmDashboardQueriesWithDcgmNames) {
  ZEUS_SKIP_WITHOUT_PROMETHEUS();
  std::map<std::string, std::string> env = FakeGpuEnv();
  env["FAKE_NVML_TEMPERATURES_C"] = "61,61";
  env["FAKE_AMDSMI_TEMPERATURE_C"] = "61";
  const std::string address = StartExporter(env, {"--dcgm-names"});
  ASSERT_FALSE(address.empty());
  PrometheusServerOptions options;
  options.targets.push_back({"dcgm", address});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrometheusServer> prometheus,
                            PrometheusServer::Start(options));
  ZEUS_ASSERT_OK(prometheus->WaitForTargetsUp(seconds(20)));

  const double power_w = GetParam().ReportedPowerW(123'456);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double total_w,
      prometheus->QueryValue(R"(sum(DCGM_FI_DEV_POWER_USAGE{instance=~".*", gpu=~".*"}))"));
  EXPECT_DOUBLE_EQ(total_w, 2 * power_w);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double temperature_c,
      prometheus->QueryValue(R"(avg(DCGM_FI_DEV_GPU_TEMP{instance=~".*", gpu="0"}))"));
  EXPECT_EQ(temperature_c, 61.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double labelled,
      prometheus->QueryValue(std::string("count(DCGM_FI_DEV_POWER_USAGE{UUID=~\"") +
                             GetParam().uuid_prefix +
                             ".*\", modelName!=\"\", Hostname!=\"\", device=~\"nvidia[01]\"})"));
  EXPECT_EQ(labelled, 2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double limit_w,
                            prometheus->QueryValue(R"(DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu="0"})"));
  EXPECT_EQ(limit_w, 250.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double enforced_w,
                            prometheus->QueryValue(R"(DCGM_FI_DEV_ENFORCED_POWER_LIMIT{gpu="1"})"));
  EXPECT_GT(enforced_w, 0.0);
  // The energy counter in mJ, as DCGM's: its slope is the power x 1000.
  ZEUS_ASSERT_OK(
      prometheus
          ->WaitForQuery(
              R"(count_over_time(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"}[3s]) >= 6)",
              seconds(15))
          .status());
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double slope_w,
      prometheus->QueryValue(R"(deriv(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"}[3s]) / 1000)"));
  EXPECT_NEAR(slope_w, 123.456, 123.456 * 0.05);
  // Zeus's own names are still served beside them.
  ZEUS_ASSERT_OK_AND_ASSIGN(double zeus_w, prometheus->QueryValue("sum(zeus_gpu_power_watts)"));
  EXPECT_DOUBLE_EQ(zeus_w, 2 * power_w);
  EXPECT_EQ(exporter_->Stop(), 0) << Stderr();
}

// Issue 11's operator view: one real Prometheus scrapes both the exporter
// (fake GPUs) and `zeus serve` (SQLite, one registered job), and PromQL
// answers from both.
TEST_P(ExporterCommandTest, RealPrometheusScrapesTheExporterAndZeusServeTogether) {
  ZEUS_SKIP_WITHOUT_PROMETHEUS();
  const std::string exporter_address = StartExporter(FakeGpuEnv());
  ASSERT_FALSE(exporter_address.empty());
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ChildProcess> serve,
      ChildProcess::Start({ZEUS_BINARY, "serve", "--listen", "127.0.0.1:0", "--db",
                           "sqlite:" + dir_.File("zeus.db")},
                          {}, dir_.File("serve.out"), dir_.File("serve.err")));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::string out,
      serve->WaitForOutput(dir_.File("serve.out"), "listening on http://", seconds(20)));
  const std::string prefix = "listening on http://";
  const size_t start = out.find(prefix) + prefix.size();
  const std::string serve_address = out.substr(start, out.find(' ', start) - start);

  HttpClient client;
  const std::string job = R"({"job_id": "bert-1", "job_id_prefix": "bert",
      "batch_sizes": [32, 64, 128], "default_batch_size": 64, "eta_knob": 0.5,
      "beta_knob": 2.0, "target_metric": 0.5, "higher_is_better_metric": true,
      "max_epochs": 10, "num_pruning_rounds": 2, "window_size": 0, "mab_prior_mean": 0.0,
      "mab_prior_precision": 0.0, "mab_num_explorations": 2, "mab_seed": 1,
      "max_power": 300.0, "number_of_gpus": 1, "gpu_model": "A40"})";
  StatusOr<HttpClientResponse> registered = client.Send(
      {"POST", "http://" + serve_address + "/jobs", {{"Content-Type", "application/json"}}, job});
  ASSERT_TRUE(registered.ok()) << registered.status();
  ASSERT_EQ(registered->status, 201) << registered->body;
  StatusOr<HttpClientResponse> next =
      client.Get("http://" + serve_address + "/jobs/batch_size?job_id=bert-1");
  ASSERT_TRUE(next.ok() && next->status == 200);

  PrometheusServerOptions options;
  options.targets.push_back({"zeus_exporter", exporter_address});
  options.targets.push_back({"zeus_serve", serve_address});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrometheusServer> prometheus,
                            PrometheusServer::Start(options));
  ZEUS_ASSERT_OK(prometheus->WaitForTargetsUp(seconds(20)));
  ZEUS_ASSERT_OK_AND_ASSIGN(double up, prometheus->QueryValue("sum(up)"));
  EXPECT_EQ(up, 2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double jobs, prometheus->QueryValue(R"(zeus_jobs{job="zeus_serve"})"));
  EXPECT_EQ(jobs, 1.0);
  // The first trial of a job is the default batch size.
  ZEUS_ASSERT_OK_AND_ASSIGN(double batch_size,
                            prometheus->QueryValue(R"(zeus_job_batch_size{job_id="bert-1"})"));
  EXPECT_EQ(batch_size, 64.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      double registrations,
      prometheus->QueryValue(
          R"(sum(zeus_http_requests_total{route="/jobs", method="POST", status="201"}))"));
  EXPECT_EQ(registrations, 1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double store_up, prometheus->QueryValue("zeus_store_up"));
  EXPECT_EQ(store_up, 1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(double limit_w,
                            prometheus->QueryValue(R"(zeus_gpu_power_limit_watts{gpu="0"})"));
  EXPECT_EQ(limit_w, 250.0);
  EXPECT_EQ(serve->Stop(), 0) << ReadFileToString(dir_.File("serve.err")).value_or("");
  EXPECT_EQ(exporter_->Stop(), 0) << Stderr();
}

TEST_P(ExporterCommandTest, KeepsServingWhenGpuReadsFailAndReportsThem) {
  std::map<std::string, std::string> env = FakeGpuEnv();
  env[Knob("ENERGY_RC")] = GetParam().rc_unknown;  // An unknown error on every energy read.
  const std::string address = StartExporter(env);
  ASSERT_FALSE(address.empty());
  Scrape(address);
  const std::string text = Scrape(address);
  ASSERT_FALSE(text.empty()) << Stderr();
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}}), 0.0) << text;
  EXPECT_EQ(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "1"}, {"metric", "energy"}}),
            2.0);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_power_watts", {{"gpu", "1"}}),
            GetParam().ReportedPowerW(123'456));
  EXPECT_FALSE(exporter_->Poll().has_value());
  EXPECT_NE(Stderr().find("gpu 0: reading energy failed"), std::string::npos) << Stderr();
  EXPECT_EQ(exporter_->Stop(), 0);
}

TEST_P(ExporterCommandTest, LivesOnWhenEveryGpuIsLost) {
  std::map<std::string, std::string> env = FakeGpuEnv();
  env[Knob("LOST_AFTER_READS")] = "4";
  const std::string address = StartExporter(env);
  ASSERT_FALSE(address.empty());
  std::string text;
  for (int i = 0; i < 4; ++i) text = Scrape(address);
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "0"}}), 0.0) << text;
  EXPECT_EQ(SampleValue(text, "zeus_gpu_up", {{"gpu", "1"}}), 0.0) << text;
  EXPECT_GE(SampleValue(text, "zeus_gpu_read_errors_total", {{"gpu", "1"}, {"metric", "power"}}),
            1.0);
  EXPECT_EQ(SampleValue(text, "zeus_cpu_up", {{"socket", "0"}}), 1.0);
  EXPECT_FALSE(exporter_->Poll().has_value());
  EXPECT_EQ(exporter_->Stop(), 0);
}

TEST_P(ExporterCommandTest, BadFlagsAreUsageErrors) {
  const std::map<std::string, std::string> env = FakeGpuEnv();
  EXPECT_EQ(RunToExit({"--listen", "nonsense", "--powercap-root", powercap_}, env), 2);
  EXPECT_NE(err_.find("listen address 'nonsense': expected HOST:PORT"), std::string::npos) << err_;
  EXPECT_EQ(RunToExit({"--listen", "127.0.0.1:99999", "--powercap-root", powercap_}, env), 2);
  EXPECT_NE(err_.find("[0, 65535]"), std::string::npos) << err_;
  EXPECT_EQ(RunToExit({"--gpus", "7", "--powercap-root", powercap_}, env), 2);
  EXPECT_NE(err_.find("--gpus: no GPU 7"), std::string::npos) << err_;
}

TEST_P(ExporterCommandTest, AnAddressInUseOrNothingToExportFails) {
  const std::string address = StartExporter(FakeGpuEnv());
  ASSERT_FALSE(address.empty());
  EXPECT_EQ(RunToExit({"--listen", address, "--powercap-root", powercap_}, FakeGpuEnv()), 1);
  EXPECT_NE(err_.find("cannot listen on " + address), std::string::npos) << err_;
  TempDir empty;
  EXPECT_EQ(RunToExit({"--listen", "127.0.0.1:0", "--powercap-root", empty.path()},
                      {{"ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"},
                       {"ZEUS_AMDSMI_LIBRARY", "/nonexistent/libamd_smi.so"}}),
            1);
  EXPECT_NE(err_.find("nothing to measure"), std::string::npos) << err_;
}

}  // namespace
}  // namespace zeus
