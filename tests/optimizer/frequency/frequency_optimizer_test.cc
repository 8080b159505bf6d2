#include "zeus/optimizer/frequency/frequency_optimizer.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/core/frequency_profile.h"
#include "zeus/device/fake.h"

#include "tests/device/scoped_env.h"
#include "tests/optimizer/power_limit/replay_rig.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// H100-like: 1980 down to 345 MHz in 15 MHz steps.
std::vector<uint32_t> SupportedMhz() {
  std::vector<uint32_t> out;
  for (uint32_t mhz = 1980; mhz >= 345; mhz -= 15) out.push_back(mhz);
  return out;
}

FakeClockModel Model() {
  FakeClockModel m;
  m.supported_mhz = SupportedMhz();
  m.compute_fraction = 0.7;
  m.max_power_w = 300.0;
  m.static_power_w = 60.0;
  m.min_voltage_fraction = 0.7;
  return m;
}

constexpr double kStepAtHighestS = 0.1;

// GPUs with the clock model; each step lasts kStepAtHighestS x the model's
// factor at GPU 0's clock.
class ClockRig {
 public:
  explicit ClockRig(int num_gpus, bool with_clocks = true) : set_(Options(num_gpus, with_clocks)) {}
  std::vector<Gpu*> gpus() const { return set_.gpus(); }
  FakeGpu& gpu(size_t i) { return set_.gpu(i); }
  StatusOr<std::unique_ptr<FrequencyOptimizer>> Create(FrequencyOptimizerOptions o) {
    return FrequencyOptimizer::Create(gpus(), set_.monitor(), set_.clock(), std::move(o));
  }
  void Run(FrequencyOptimizer& opt, int64_t steps) {
    for (int64_t i = 0; i < steps; ++i) {
      Status s = opt.OnStepBegin();
      ASSERT_TRUE(s.ok()) << s;
      set_.clock()->AdvanceSeconds(kStepAtHighestS * set_.gpu(0).StepTimeFactor());
    }
  }

 private:
  static std::vector<FakeGpuOptions> Options(int num_gpus, bool with_clocks) {
    std::vector<FakeGpuOptions> options(num_gpus);
    for (int i = 0; i < num_gpus; ++i) {
      options[i].index = i;
      if (with_clocks) options[i].clock_model = Model();
    }
    return options;
  }

  testing::FakeGpuSet set_;
};

FrequencyOptimizerOptions StepOnly() {
  FrequencyOptimizerOptions o;
  o.wait_steps = 5;
  o.warmup_steps = 5;
  o.measure_steps = 20;
  o.min_measure_time = std::chrono::nanoseconds(0);
  o.restore_on_signal = false;
  return o;
}

// The optimum the model implies over `grid` for `selector` (what a perfect
// profile gives), with MaxPower at the fake's 300 W limit.
uint32_t ModelOptimumMhz(const std::vector<uint32_t>& grid, const OptimumSelector& selector,
                         int num_gpus) {
  FrequencyProfile p;
  p.max_power_limit_mw = 300'000;
  p.profile.num_gpus = num_gpus;
  const FakeClockModel m = Model();
  for (uint32_t mhz : grid) {
    const double t = kStepAtHighestS * m.StepTimeFactor(mhz);
    p.profile.measurements.push_back({mhz, m.PowerW(mhz) * t * num_gpus, t, 1});
  }
  return SelectOptimumMhz(p, selector).value();
}

TEST(SmClocksToProfileMhzTest, ACoarseGridFromTheHighestDownToHalfOfIt) {
  EXPECT_THAT(SmClocksToProfileMhz(SupportedMhz(), 90, 0).value(),
              ElementsAre(1980, 1890, 1800, 1710, 1620, 1530, 1440, 1350, 1260, 1170, 1080, 990));
  // Targets between supported clocks take the supported clock below them.
  EXPECT_THAT(SmClocksToProfileMhz({1000, 700, 400}, 200, 300).value(),
              ElementsAre(1000, 700, 400));
  EXPECT_THAT(SmClocksToProfileMhz({1500}, 90, 0).value(), ElementsAre(1500));
  EXPECT_FALSE(SmClocksToProfileMhz({}, 90, 0).ok());
  EXPECT_FALSE(SmClocksToProfileMhz({1500}, 0, 0).ok());
}

TEST(FakeClockModelTest, ComputeBoundTimeScalesWithTheClockAndPowerFallsFasterThanIt) {
  const FakeClockModel m = Model();
  EXPECT_DOUBLE_EQ(m.StepTimeFactor(1980), 1.0);
  EXPECT_NEAR(m.StepTimeFactor(990), 0.7 * 2 + 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(m.PowerW(1980), 300.0);
  EXPECT_LT(m.PowerW(990), 60.0 + 240.0 * 0.5);
}

TEST(FrequencyOptimizerTest, ProfilesTheGridPinsTheOptimumAndUnlocksAtTheEnd) {
  for (OptimumSelector selector :
       {OptimumSelector::LeastCost(0.5), OptimumSelector::LeastEnergy(),
        OptimumSelector::LeastTime(), OptimumSelector::MaxSlowdown(1.2)}) {
    ClockRig rig(2);
    {
      auto opt = rig.Create([&] {
        FrequencyOptimizerOptions o = StepOnly();
        o.selector = selector;
        return o;
      }());
      ASSERT_TRUE(opt.ok()) << opt.status();
      rig.Run(**opt, 2'000);
      ASSERT_EQ((*opt)->phase(), FrequencyOptimizer::Phase::kDone);
      const std::vector<uint32_t> grid = (*opt)->clocks_mhz();
      ASSERT_EQ(grid.size(), 12u);
      const uint32_t expected = ModelOptimumMhz(grid, selector, 2);
      EXPECT_EQ((*opt)->optimum_mhz(), expected) << selector.ToString();
      EXPECT_EQ(rig.gpu(1).effective_clock_mhz(), expected);
      std::vector<uint32_t> history = {grid.front()};
      history.insert(history.end(), grid.begin(), grid.end());
      history.push_back(expected);
      EXPECT_THAT(rig.gpu(0).locked_clock_history(), ElementsAreArray(history));
      EXPECT_EQ((*opt)->profile().profile.measurements.size(), 12u);
      EXPECT_EQ((*opt)->profile().profile.num_gpus, 2);
      if (selector.kind == OptimumKind::kEnergy) {
        EXPECT_LT(expected, grid.front());
      }
      if (selector.kind == OptimumKind::kTime) {
        EXPECT_EQ(expected, grid.front());
      }
    }
    // Destruction unlocks every GPU.
    EXPECT_EQ(rig.gpu(0).locked_clock_history().back(), 0u);
    EXPECT_EQ(rig.gpu(1).locked_clock_history().back(), 0u);
  }
}

TEST(FrequencyOptimizerTest, RestoreUnlocksAndLaterStepsLockNothing) {
  ClockRig rig(1);
  auto opt = rig.Create(StepOnly());
  ASSERT_TRUE(opt.ok()) << opt.status();
  rig.Run(**opt, 40);
  ZEUS_ASSERT_OK((*opt)->Restore());
  const size_t locks = rig.gpu(0).locked_clock_history().size();
  const uint32_t last_locked = (*opt)->current_clock_mhz();
  EXPECT_EQ(rig.gpu(0).locked_clock_history().back(), 0u);
  rig.Run(**opt, 2'000);
  EXPECT_EQ(rig.gpu(0).locked_clock_history().size(), locks);
  // Nothing is locked after Restore(), so the last clock locked stays.
  EXPECT_EQ((*opt)->current_clock_mhz(), last_locked);
}

TEST(FrequencyOptimizerTest, ASavedProfilePinsItsOptimumWithoutProfiling) {
  testing::TempDir dir;
  const std::string path = dir.File("clocks.json");
  uint32_t optimum = 0;
  {
    ClockRig rig(1);
    FrequencyOptimizerOptions o = StepOnly();
    o.profile_path = path;
    auto opt = rig.Create(o);
    ASSERT_TRUE(opt.ok()) << opt.status();
    rig.Run(**opt, 2'000);
    optimum = (*opt)->optimum_mhz().value();
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(FrequencyProfile saved, LoadFrequencyProfile(path));
  EXPECT_EQ(saved.max_power_limit_mw, 300'000u);
  EXPECT_EQ(saved.profile.measurements.size(), 12u);
  ClockRig rig(1);
  FrequencyOptimizerOptions o = StepOnly();
  o.profile_path = path;
  auto opt = rig.Create(o);
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ((*opt)->phase(), FrequencyOptimizer::Phase::kDone);
  EXPECT_EQ((*opt)->optimum_mhz(), optimum);
  EXPECT_THAT(rig.gpu(0).locked_clock_history(), ElementsAre(optimum));
}

TEST(FrequencyOptimizerTest, DryRunMeasuresEveryClockButLocksNothing) {
  testing::ScopedEnv env;
  env.Set("ZEUS_DRY_RUN", "1");
  ClockRig rig(1);
  auto opt = rig.Create(StepOnly());
  ASSERT_TRUE(opt.ok()) << opt.status();
  rig.Run(**opt, 2'000);
  EXPECT_EQ((*opt)->phase(), FrequencyOptimizer::Phase::kDone);
  EXPECT_EQ((*opt)->profile().profile.measurements.size(), 12u);
  opt->reset();
  EXPECT_TRUE(rig.gpu(0).locked_clock_history().empty());
}

TEST(FrequencyOptimizerTest, GpusWithoutClockListsAreNotSupportedAndBadOptionsRefused) {
  ClockRig plain(1, /*with_clocks=*/false);
  auto opt = plain.Create(StepOnly());
  ASSERT_EQ(opt.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(opt.status().message(), HasSubstr("supported graphics clocks"));
  ClockRig rig(1);
  FrequencyOptimizerOptions o = StepOnly();
  o.clock_step_mhz = 0;
  EXPECT_THAT(rig.Create(o).status().message(), HasSubstr("clock_step_mhz must be > 0"));
  o = StepOnly();
  o.measure_steps = 0;
  EXPECT_THAT(rig.Create(o).status().message(), HasSubstr("measure_steps must be >= 1"));
}

// A blocking all-reduce over `n` threads.
class ThreadAllReduce {
 public:
  explicit ThreadAllReduce(int n) : n_(n) {}
  StatusOr<StretchTotals> operator()(const StretchTotals& local) {
    std::unique_lock<std::mutex> lock(mu_);
    int generation = generation_;
    acc_.energy_j += local.energy_j;
    acc_.num_gpus += local.num_gpus;
    acc_.time_s = std::max(acc_.time_s, local.time_s);
    if (++arrived_ == n_) {
      result_ = acc_;
      acc_ = {};
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    return result_;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  StretchTotals acc_;
  StretchTotals result_;
  int arrived_ = 0;
  int generation_ = 0;
};

TEST(FrequencyOptimizerTest, DataParallelRanksAgreeOnOneClock) {
  ThreadAllReduce reduce(2);
  ClockRig rig0(1);
  ClockRig rig1(1);
  FrequencyOptimizerOptions o = StepOnly();
  o.min_measure_time = std::chrono::seconds(5);
  o.all_reduce = [&reduce](const StretchTotals& t) { return reduce(t); };
  auto opt0 = rig0.Create(o);
  auto opt1 = rig1.Create(o);
  ASSERT_TRUE(opt0.ok() && opt1.ok());
  std::thread t0([&] { rig0.Run(**opt0, 5'000); });
  std::thread t1([&] { rig1.Run(**opt1, 5'000); });
  t0.join();
  t1.join();
  ASSERT_EQ((*opt0)->phase(), FrequencyOptimizer::Phase::kDone);
  EXPECT_EQ((*opt0)->optimum_mhz(), (*opt1)->optimum_mhz());
  EXPECT_EQ(rig0.gpu(0).locked_clock_history(), rig1.gpu(0).locked_clock_history());
  EXPECT_EQ((*opt0)->profile().profile.num_gpus, 2);
}

}  // namespace
}  // namespace zeus
