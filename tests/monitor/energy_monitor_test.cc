#include "zeus/monitor/energy_monitor.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/device/fake.h"
#include "zeus/monitor/reporter.h"
#include "zeus/util/file.h"
#include "zeus/util/units.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr double kPi = 3.14159265358979323846;

// Exact-mode options with no background threads.
EnergyMonitorOptions ManualEnergyOptions() {
  EnergyMonitorOptions options;
  options.power_sample_period = std::chrono::nanoseconds(0);
  options.counter_poll_period = std::chrono::nanoseconds(0);
  return options;
}

FakeGpuOptions GpuOptions(int index, double power_w) {
  FakeGpuOptions options;
  options.index = index;
  options.power_w = [power_w](double, uint32_t) { return power_w; };
  return options;
}

TEST(EnergyMonitorTest, NestedAndOverlappingWindowsEachGetTheirOwnEnergy) {
  FakeClock clock(seconds(0));
  FakeGpu gpu0(&clock, GpuOptions(0, 100.0));
  FakeGpu gpu1(&clock, GpuOptions(1, 250.0));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor, EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, ManualEnergyOptions()));
  ZEUS_ASSERT_OK(monitor->Begin("outer"));
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK(monitor->Begin("inner"));
  clock.AdvanceSeconds(2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement inner, monitor->End("inner"));
  ZEUS_ASSERT_OK(monitor->Begin("overlap"));
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement outer, monitor->End("outer"));
  clock.AdvanceSeconds(0.5);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement overlap, monitor->End("overlap"));

  EXPECT_EQ(outer.name, "outer");
  EXPECT_DOUBLE_EQ(outer.start_time_s, 0.0);
  EXPECT_DOUBLE_EQ(outer.time_s, 4.0);
  EXPECT_NEAR(outer.gpu_energy_j[0], 400.0, 1e-3);
  EXPECT_NEAR(outer.gpu_energy_j[1], 1000.0, 1e-3);
  EXPECT_NEAR(outer.TotalGpuEnergyJ(), 1400.0, 2e-3);
  EXPECT_DOUBLE_EQ(inner.time_s, 2.0);
  EXPECT_NEAR(inner.gpu_energy_j[0], 200.0, 1e-3);
  EXPECT_DOUBLE_EQ(overlap.start_time_s, 3.0);
  EXPECT_DOUBLE_EQ(overlap.time_s, 1.5);
  EXPECT_NEAR(overlap.gpu_energy_j[1], 375.0, 1e-3);
  for (const Measurement* m : {&inner, &outer, &overlap}) {
    EXPECT_EQ(m->gpu_energy_source[0], GpuEnergySource::kCounter);
    EXPECT_FALSE(m->AnyBelowCounterResolution());
  }
  EXPECT_FALSE(monitor->IsOpen("outer"));
}

TEST(EnergyMonitorTest, WindowNameErrorsAreClear) {
  FakeClock clock;
  FakeGpu gpu(&clock, FakeGpuOptions{});
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create({&gpu}, {}, &clock, ManualEnergyOptions()));
  EXPECT_EQ(monitor->Begin("").code(), StatusCode::kInvalidArgument);
  ZEUS_ASSERT_OK(monitor->Begin("a"));
  Status twice = monitor->Begin("a");
  EXPECT_EQ(twice.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(twice.message(), "energy monitor: window 'a' is already open");
  StatusOr<Measurement> unknown = monitor->End("b");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "energy monitor: no open window 'b'");
  EXPECT_EQ(monitor->Cancel("b").code(), StatusCode::kNotFound);
  ZEUS_ASSERT_OK(monitor->Cancel("a"));
  EXPECT_FALSE(monitor->IsOpen("a"));
  EXPECT_EQ(monitor->End("a").status().code(), StatusCode::kNotFound);
  ZEUS_EXPECT_OK(monitor->Begin("a"));  // The name is free again.
}

TEST(EnergyMonitorTest, RejectsNothingToMeasureAndBrokenCounters) {
  FakeClock clock;
  EXPECT_EQ(EnergyMonitor::Create({}, {}, &clock, ManualEnergyOptions()).status().code(),
            StatusCode::kInvalidArgument);
  FakeGpu gpu(&clock, FakeGpuOptions{});
  gpu.InjectError(FakeGpuOp::kTotalEnergy, UnavailableError("GPU is lost"));
  StatusOr<std::unique_ptr<EnergyMonitor>> monitor =
      EnergyMonitor::Create({&gpu}, {}, &clock, ManualEnergyOptions());
  EXPECT_EQ(monitor.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(monitor.status().message(), "energy monitor: GPU 0: GPU is lost");
}

TEST(EnergyMonitorTest, SyncRunsBeforeEachTimestamp) {
  FakeClock clock(seconds(0));
  FakeGpu gpu(&clock, FakeGpuOptions{});
  std::vector<double> sync_times_s;
  EnergyMonitorOptions options = ManualEnergyOptions();
  options.sync = [&] {
    sync_times_s.push_back(ToSeconds(clock.Now()));
    clock.AdvanceSeconds(1.0);  // Pretend queued GPU work takes 1 s.
  };
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, EnergyMonitor::Create({&gpu}, {}, &clock, options));
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  clock.AdvanceSeconds(2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("w"));
  ASSERT_EQ(sync_times_s.size(), 2u);
  EXPECT_DOUBLE_EQ(m.start_time_s, sync_times_s[0] + 1.0);
  EXPECT_DOUBLE_EQ(m.start_time_s + m.time_s, sync_times_s[1] + 1.0);
  // The work drained by the closing sync belongs to the window.
  EXPECT_NEAR(m.gpu_energy_j[0], 300.0, 1e-3);
}

TEST(EnergyMonitorTest, MeasuresCpuPackageAndDramPerSocket) {
  FakeClock clock;
  FakeCpu cpu0(0);
  FakeCpu cpu1(1, /*has_dram=*/false);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor, EnergyMonitor::Create({}, {&cpu0, &cpu1}, &clock, ManualEnergyOptions()));
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  cpu0.AddEnergyUj(5'000'000, 1'500'000);
  cpu1.AddEnergyUj(2'000'000, 0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("w"));
  EXPECT_TRUE(m.gpu_energy_j.empty());
  ASSERT_EQ(m.cpu_energy_j.size(), 2u);
  EXPECT_DOUBLE_EQ(m.cpu_energy_j[0], 5.0);
  EXPECT_DOUBLE_EQ(m.dram_energy_j[0], 1.5);
  EXPECT_DOUBLE_EQ(m.cpu_energy_j[1], 2.0);
  EXPECT_DOUBLE_EQ(m.dram_energy_j[1], 0.0);
}

TEST(EnergyMonitorTest, BeginOfGivesTheCountersReadAtBeginWithoutReadingAgain) {
  FakeClock clock(seconds(0));
  FakeGpu gpu(&clock, GpuOptions(0, 100.0));
  FakeCpu cpu(0);
  cpu.AddEnergyUj(7'000'000, 2'500'000);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create({&gpu}, {&cpu}, &clock, ManualEnergyOptions()));
  clock.AdvanceSeconds(2.0);
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t begin_mj, gpu.TotalEnergyMj());
  clock.AdvanceSeconds(1.0);
  cpu.AddEnergyUj(1'000'000, 1'000'000);
  const int64_t reads = gpu.energy_reads();
  ZEUS_ASSERT_OK_AND_ASSIGN(WindowBegin w, monitor->BeginOf("w"));
  EXPECT_EQ(gpu.energy_reads(), reads);
  EXPECT_DOUBLE_EQ(w.start_time_s, 2.0);
  ASSERT_EQ(w.gpu_energy_j.size(), 1u);
  EXPECT_DOUBLE_EQ(w.gpu_energy_j[0], MjToJ(static_cast<double>(begin_mj)));
  ASSERT_EQ(w.cpu_energy_j.size(), 1u);
  EXPECT_DOUBLE_EQ(w.cpu_energy_j[0], 7.0);
  EXPECT_DOUBLE_EQ(w.dram_energy_j[0], 2.5);
  EXPECT_EQ(monitor->BeginOf("other").status().code(), StatusCode::kNotFound);
  ZEUS_ASSERT_OK(monitor->End("w").status());
  EXPECT_EQ(monitor->BeginOf("w").status().code(), StatusCode::kNotFound);
}

TEST(EnergyMonitorTest, GpuLostMidWindowFailsThatEndAndLeavesOtherWindowsUsable) {
  FakeClock clock(seconds(0));
  FakeGpu gpu0(&clock, GpuOptions(0, 100.0));
  FakeGpu gpu1(&clock, GpuOptions(1, 100.0));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor, EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, ManualEnergyOptions()));
  ZEUS_ASSERT_OK(monitor->Begin("a"));
  ZEUS_ASSERT_OK(monitor->Begin("b"));
  clock.AdvanceSeconds(1.0);
  gpu1.InjectError(FakeGpuOp::kTotalEnergy, UnavailableError("nvmlDeviceGetTotalEnergyConsumption"
                                                             ": GPU is lost (15)"));
  StatusOr<Measurement> a = monitor->End("a");
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(a.status().message(),
            "energy monitor: window 'a' end: GPU 1: nvmlDeviceGetTotalEnergyConsumption: GPU is "
            "lost (15)");
  EXPECT_FALSE(monitor->IsOpen("a"));
  EXPECT_EQ(monitor->Begin("c").code(), StatusCode::kUnavailable);
  EXPECT_FALSE(monitor->IsOpen("c"));
  gpu1.ClearErrors();
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement b, monitor->End("b"));
  EXPECT_NEAR(b.gpu_energy_j[1], 200.0, 1e-3);
}

// A Gpu whose energy reads wait until `expected` reads are in flight at
// once (or a generous timeout), proving the monitor issues them concurrently.
class RendezvousGpu final : public Gpu {
 public:
  RendezvousGpu(FakeGpu* inner, std::atomic<int>* in_flight, int expected)
      : inner_(inner), in_flight_(in_flight), expected_(expected) {}
  void Arm() { armed_ = true; }
  bool timed_out() const { return timed_out_; }

  int index() const override { return inner_->index(); }
  StatusOr<std::string> Name() override { return inner_->Name(); }
  StatusOr<std::string> Architecture() override { return inner_->Architecture(); }
  StatusOr<std::string> Uuid() override { return inner_->Uuid(); }
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override {
    return inner_->PowerLimitConstraintsMw();
  }
  StatusOr<uint32_t> DefaultPowerLimitMw() override { return inner_->DefaultPowerLimitMw(); }
  StatusOr<uint32_t> PowerLimitMw() override { return inner_->PowerLimitMw(); }
  StatusOr<uint32_t> EnforcedPowerLimitMw() override { return inner_->EnforcedPowerLimitMw(); }
  Status SetPowerLimitMw(uint32_t mw) override { return inner_->SetPowerLimitMw(mw); }
  StatusOr<bool> PersistenceMode() override { return inner_->PersistenceMode(); }
  Status SetPersistenceMode(bool enabled) override { return inner_->SetPersistenceMode(enabled); }
  StatusOr<uint32_t> PowerMw() override { return inner_->PowerMw(); }
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return inner_->EnergyCounterUpdatePeriod();
  }
  StatusOr<uint64_t> TotalEnergyMj() override {
    if (armed_) {
      ++*in_flight_;
      auto deadline = std::chrono::steady_clock::now() + seconds(10);
      while (in_flight_->load() < expected_ && !timed_out_) {
        if (std::chrono::steady_clock::now() > deadline) timed_out_ = true;
        std::this_thread::yield();
      }
    }
    return inner_->TotalEnergyMj();
  }

 private:
  FakeGpu* inner_;
  std::atomic<int>* in_flight_;
  const int expected_;
  std::atomic<bool> armed_{false};
  std::atomic<bool> timed_out_{false};
};

TEST(EnergyMonitorTest, ReadsAllGpusOfABoundaryConcurrently) {
  constexpr int kGpus = 8;
  FakeClock clock;
  std::atomic<int> in_flight{0};
  std::vector<std::unique_ptr<FakeGpu>> fakes;
  std::vector<std::unique_ptr<RendezvousGpu>> gpus;
  std::vector<Gpu*> gpu_ptrs;
  for (int i = 0; i < kGpus; ++i) {
    fakes.push_back(std::make_unique<FakeGpu>(&clock, GpuOptions(i, 100.0)));
    gpus.push_back(std::make_unique<RendezvousGpu>(fakes.back().get(), &in_flight, kGpus));
    gpu_ptrs.push_back(gpus.back().get());
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create(gpu_ptrs, {}, &clock, ManualEnergyOptions()));
  for (auto& g : gpus) g->Arm();
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  for (auto& g : gpus) EXPECT_FALSE(g->timed_out());
  for (auto& f : fakes) EXPECT_EQ(f->energy_reads(), 2);  // Create + Begin.
}

TEST(EnergyMonitorTest, WindowsFromManyThreadsAreAllMeasured) {
  FakeClock clock(seconds(0));
  FakeGpu gpu0(&clock, GpuOptions(0, 100.0));
  FakeGpu gpu1(&clock, GpuOptions(1, 100.0));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor, EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, ManualEnergyOptions()));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = "thread" + std::to_string(t);
      for (int i = 0; i < 50; ++i) {
        if (!monitor->Begin(name).ok()) ++failures;
        clock.Advance(milliseconds(1));
        StatusOr<Measurement> m = monitor->End(name);
        if (!m.ok() || m->gpu_energy_j.size() != 2 || m->time_s <= 0.0) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(EnergyMonitorTest, GpuWithoutCounterIsIntegratedFromPowerSamples) {
  FakeClock clock(seconds(0));
  FakeGpuOptions options;
  options.has_energy_counter = false;
  // A known curve: 200 W + 100 W sin(pi t).
  options.power_w = [](double t, uint32_t) { return 200.0 + 100.0 * std::sin(kPi * t); };
  FakeGpu gpu(&clock, options);
  FakeGpu counter_gpu(&clock, GpuOptions(1, 50.0));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor, EnergyMonitor::Create({&gpu, &counter_gpu}, {}, &clock, ManualEnergyOptions()));
  EXPECT_EQ(monitor->GpusIntegratingPower(), (std::vector<bool>{true, false}));
  clock.AdvanceSeconds(0.25);
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  double true_begin_j = gpu.TrueEnergyJ();
  for (int i = 0; i < 1000; ++i) {  // 10 s sampled every 10 ms.
    clock.AdvanceSeconds(0.01);
    ZEUS_ASSERT_OK(monitor->SampleNow());
  }
  clock.AdvanceSeconds(0.005);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("w"));
  double true_j = gpu.TrueEnergyJ() - true_begin_j;
  EXPECT_EQ(m.gpu_energy_source[0], GpuEnergySource::kPowerIntegration);
  EXPECT_EQ(m.gpu_energy_source[1], GpuEnergySource::kCounter);
  EXPECT_NEAR(m.gpu_energy_j[0], true_j, 1e-4 * true_j);
  EXPECT_NEAR(m.gpu_energy_j[1], 50.0 * 10.005, 1e-2);
}

TEST(EnergyMonitorTest, ShortWindowsAreFlaggedOrApproximatedOnRequest) {
  FakeClock clock(milliseconds(1000));
  FakeGpuOptions gpu_options = GpuOptions(0, 100.0);
  gpu_options.energy_update_period = milliseconds(100);
  FakeGpu gpu(&clock, gpu_options);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto flagging,
                            EnergyMonitor::Create({&gpu}, {}, &clock, ManualEnergyOptions()));
  EnergyMonitorOptions approximate_options = ManualEnergyOptions();
  approximate_options.approximate_short_windows = true;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto approximating,
                            EnergyMonitor::Create({&gpu}, {}, &clock, approximate_options));
  ZEUS_ASSERT_OK(flagging->Begin("short"));
  ZEUS_ASSERT_OK(approximating->Begin("short"));
  clock.AdvanceSeconds(0.05);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement flagged, flagging->End("short"));
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement approximated, approximating->End("short"));
  // The counter did not move in 50 ms: 0 J, but flagged.
  EXPECT_EQ(flagged.gpu_energy_j[0], 0.0);
  EXPECT_TRUE(flagged.gpu_below_counter_resolution[0]);
  EXPECT_EQ(approximated.gpu_energy_source[0], GpuEnergySource::kInstantPowerApproximation);
  EXPECT_FALSE(approximated.gpu_below_counter_resolution[0]);
  EXPECT_NEAR(approximated.gpu_energy_j[0], 5.0, 1e-6);
  // A long window is neither.
  ZEUS_ASSERT_OK(approximating->Begin("long"));
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement long_window, approximating->End("long"));
  EXPECT_EQ(long_window.gpu_energy_source[0], GpuEnergySource::kCounter);
  EXPECT_FALSE(long_window.gpu_below_counter_resolution[0]);
  EXPECT_NEAR(long_window.gpu_energy_j[0], 100.0, 1e-3);
}

TEST(EnergyMonitorTest, EachGpuSaysItsOwnCounterUpdatePeriod) {
  FakeClock clock(milliseconds(1000));
  FakeGpuOptions periodic_options = GpuOptions(0, 100.0);
  periodic_options.energy_update_period = milliseconds(100);
  FakeGpu periodic(&clock, periodic_options);
  FakeGpu continuous(&clock, GpuOptions(1, 100.0));
  EXPECT_EQ(periodic.EnergyCounterUpdatePeriod(), milliseconds(100));
  EXPECT_EQ(continuous.EnergyCounterUpdatePeriod(), std::chrono::nanoseconds(0));
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, EnergyMonitor::Create({&periodic, &continuous}, {},
                                                                &clock, ManualEnergyOptions()));
  ZEUS_ASSERT_OK(monitor->Begin("short"));
  clock.AdvanceSeconds(0.05);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("short"));
  EXPECT_TRUE(m.gpu_below_counter_resolution[0]);
  EXPECT_FALSE(m.gpu_below_counter_resolution[1]);
  EXPECT_NEAR(m.gpu_energy_j[1], 5.0, 1e-6);
}

// Records what the monitor hands its window reporter.
class RecordingWindowReporter final : public WindowReporter {
 public:
  Status Open(size_t num_gpus) override {
    opened_with.push_back(num_gpus);
    return open_status;
  }
  Status ReportWindow(const Measurement& m) override {
    names.push_back(m.name);
    return report_status;
  }
  std::vector<size_t> opened_with;
  std::vector<std::string> names;
  Status open_status;
  Status report_status;
};

TEST(EnergyMonitorTest, HandsEveryClosedWindowToItsReporter) {
  FakeClock clock(seconds(5));
  FakeGpu gpu(&clock, GpuOptions(0, 100.0));
  auto reporter = std::make_shared<RecordingWindowReporter>();
  EnergyMonitorOptions options = ManualEnergyOptions();
  options.window_reporter = reporter;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, EnergyMonitor::Create({&gpu}, {}, &clock, options));
  EXPECT_EQ(reporter->opened_with, std::vector<size_t>{1});
  ZEUS_ASSERT_OK(monitor->Begin("a"));
  ZEUS_ASSERT_OK(monitor->Begin("b"));
  ZEUS_ASSERT_OK(monitor->Cancel("b"));
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK(monitor->End("a").status());
  EXPECT_EQ(reporter->names, std::vector<std::string>{"a"});

  reporter->report_status = IoError("disk full");
  ZEUS_ASSERT_OK(monitor->Begin("c"));
  StatusOr<Measurement> failed = monitor->End("c");
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError);
  EXPECT_FALSE(monitor->IsOpen("c"));

  reporter->open_status = InvalidArgumentError("bad log");
  EXPECT_EQ(EnergyMonitor::Create({&gpu}, {}, &clock, options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(EnergyMonitorTest, CsvRowsQuoteAwkwardWindowNames) {
  Measurement m;
  m.name = "a,\"b\"";
  m.start_time_s = 99.0;  // Monotonic: not what the log records.
  m.start_wall_time_s = 1.5;
  m.time_s = 2.0;
  m.gpu_energy_j = {3.25};
  EXPECT_EQ(EnergyCsvRow(m), "1.5,\"a,\"\"b\"\"\",2,3.25");
  EXPECT_EQ(EnergyCsvHeader(2), "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy");
  // Named by GPU index, as the original's log.
  EXPECT_EQ(EnergyCsvHeader(std::vector<int>{1, 3}),
            "start_time,window_name,elapsed_time,gpu1_energy,gpu3_energy");
}

TEST(EnergyMonitorTest, AppendsTheProfileCsvFormat) {
  zeus::testing::TempDir dir;
  FakeClock clock(seconds(5));
  FakeGpu gpu0(&clock, GpuOptions(0, 100.0));
  FakeGpu gpu1(&clock, GpuOptions(1, 200.0));
  EnergyMonitorOptions options = ManualEnergyOptions();
  const std::string csv_path = dir.File("log.csv");
  options.window_reporter = NewCsvWindowReporter(csv_path);
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                              EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, options));
    ZEUS_ASSERT_OK(monitor->Begin("__GlobalPowerLimitOptimizer_300"));
    clock.AdvanceSeconds(2.5);
    ZEUS_ASSERT_OK(monitor->End("__GlobalPowerLimitOptimizer_300").status());
  }
  {
    // A second monitor appends below the same header.
    ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                              EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, options));
    ZEUS_ASSERT_OK(monitor->Begin("b"));
    clock.AdvanceSeconds(1.0);
    ZEUS_ASSERT_OK(monitor->End("b").status());
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string contents, ReadFileToString(csv_path));
  EXPECT_EQ(contents,
            "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
            // Unix start times (FakeClock's wall time is 1.7e9 s + its time).
            "1700000005,__GlobalPowerLimitOptimizer_300,2.5,250,500\n"
            "1700000007.5,b,1,100,200\n");
  // A log of another shape is refused rather than corrupted.
  StatusOr<std::unique_ptr<EnergyMonitor>> one_gpu =
      EnergyMonitor::Create({&gpu0}, {}, &clock, options);
  EXPECT_EQ(one_gpu.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(one_gpu.status().message().find("expected 'start_time,window_name,elapsed_time,"
                                            "gpu0_energy'"),
            std::string::npos)
      << one_gpu.status().message();
}

TEST(EnergyMonitorTest, CsvLogChecksOnlyTheFirstLineAndNeverBlocks) {
  zeus::testing::TempDir dir;
  FakeClock clock(seconds(5));
  FakeGpu gpu0(&clock, GpuOptions(0, 100.0));
  EnergyMonitorOptions options = ManualEnergyOptions();
  // A header for more GPUs starts with this one's header: still refused.
  options.window_reporter =
      NewCsvWindowReporter(dir.WriteFile("wide.csv", EnergyCsvHeader(2) + "\n"));
  StatusOr<std::unique_ptr<EnergyMonitor>> wide =
      EnergyMonitor::Create({&gpu0}, {}, &clock, options);
  EXPECT_EQ(wide.status().code(), StatusCode::kInvalidArgument);
  // A matching first line is enough, whatever follows (never read).
  options.window_reporter = NewCsvWindowReporter(
      dir.WriteFile("ok.csv", EnergyCsvHeader(1) + "\n" + std::string(1 << 20, 'x')));
  ZEUS_EXPECT_OK(EnergyMonitor::Create({&gpu0}, {}, &clock, options).status());
  // A full device and a FIFO nobody reads fail at once instead of growing
  // memory or blocking.
  options.window_reporter = NewCsvWindowReporter("/dev/full");
  StatusOr<std::unique_ptr<EnergyMonitor>> full =
      EnergyMonitor::Create({&gpu0}, {}, &clock, options);
  EXPECT_EQ(full.status().code(), StatusCode::kIoError);
  EXPECT_NE(full.status().message().find("'/dev/full'"), std::string::npos)
      << full.status().message();
  const std::string fifo = dir.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  options.window_reporter = NewCsvWindowReporter(fifo);
  EXPECT_EQ(EnergyMonitor::Create({&gpu0}, {}, &clock, options).status().code(),
            StatusCode::kIoError);
}

}  // namespace
}  // namespace zeus
