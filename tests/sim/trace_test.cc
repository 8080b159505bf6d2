#include "zeus/sim/trace.h"

#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "zeus/sim/job_groups.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

constexpr char kJobs[] =
    "dataset,network,optimizer,target_metric,max_epochs,default_batch_size\n"
    "toy,net,sgd,0.5,10,64\n";
constexpr char kTrain[] =
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
    "toy,net,32,sgd,0.1,1,0.5,4\n"
    "toy,net,32,sgd,0.1,2,0.5,6\n"
    "toy,net,32,sgd,0.1,1,0.3,2\n"
    "toy,net,64,sgd,0.1,1,0.5,3\n"
    "toy,net,64,sgd,0.1,2,0.5,nan\n"
    "toy,net,128,sgd,0.1,1,0.5,\n"
    "toy,net,512,sgd,0.1,1,0.5,2\n";
constexpr char kPower[] =
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    "toy,net,32,sgd,200,10,150\n"
    "toy,net,32,sgd,100,14,90\n"
    "toy,net,64,sgd,100,8,95\n"
    "toy,net,64,sgd,200,6,180\n"
    "toy,net,128,sgd,200,4,190\n"
    "other,net,8,sgd,300,1,1\n";

class TraceTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& jobs, const std::string& train, const std::string& power) {
    dir_.WriteFile("jobs.csv", jobs);
    dir_.WriteFile("summary_train.csv", train);
    dir_.WriteFile("summary_power_toy.csv", power);
    return dir_.path();
  }
  testing::TempDir dir_;
};

TEST_F(TraceTest, JoinsTracesOnWorkloadAndBatchSize) {
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(Write(kJobs, kTrain, kPower), "toy"));
  ASSERT_EQ(workloads.size(), 1u);
  const Workload& w = workloads[0];
  EXPECT_EQ(w.gpu, "toy");
  // 512 lacks power rows; the target 0.3 row is filtered out.
  EXPECT_EQ(w.BatchSizeList(), (std::vector<int>{32, 64, 128}));
  EXPECT_EQ(w.power_limits_w, (std::vector<int>{100, 200}));
  EXPECT_EQ(w.default_batch_size, 64);
  // MaxPower comes from the whole GPU trace, other workloads included.
  EXPECT_EQ(w.max_power_w, 300);
  const BatchSizeTrace* b32 = w.Find(32);
  ASSERT_NE(b32, nullptr);
  ASSERT_EQ(b32->power.size(), 2u);
  EXPECT_EQ(b32->power[0].power_limit_w, 100);  // Sorted ascending.
  EXPECT_EQ(b32->target_epochs.size(), 2u);
  const BatchSizeTrace* b64 = w.Find(64);
  EXPECT_EQ(b64->target_epochs[0], 3.0);
  EXPECT_FALSE(b64->target_epochs[1].has_value());          // "nan".
  EXPECT_FALSE(w.Find(128)->target_epochs[0].has_value());  // Empty.
}

TEST_F(TraceTest, DefaultIsCappedAtTheLargestPowerTraceBatchSize) {
  std::string jobs = kJobs;
  jobs.replace(jobs.find(",64\n"), 4, ",1024\n");
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(Write(jobs, kTrain, kPower), "toy"));
  EXPECT_EQ(workloads[0].default_batch_size, 128);
}

TEST_F(TraceTest, ErrorsNameFileLineAndColumn) {
  std::string power = kPower;
  power.replace(power.find("14,90"), 2, "xx");
  Status status = LoadWorkloads(Write(kJobs, kTrain, power), "toy").status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("summary_power_toy.csv:3:6: column 'time_per_epoch'"),
            std::string::npos)
      << status;

  std::string train = kTrain;
  train.replace(train.find("0.5,6"), 5, "0.5,-6");
  status = LoadWorkloads(Write(kJobs, train, kPower), "toy").status();
  EXPECT_NE(status.message().find("summary_train.csv:3:8: column 'target_epoch'"),
            std::string::npos)
      << status;

  status = LoadWorkloads(Write("dataset,network\ntoy,net\n", kTrain, kPower), "toy").status();
  EXPECT_NE(status.message().find("missing column 'optimizer'"), std::string::npos) << status;

  status =
      LoadWorkloads(Write(kJobs, kTrain, std::string(kPower) + "toy,net,32,sgd,200,1,1\n"), "toy")
          .status();
  EXPECT_NE(status.message().find("duplicate row"), std::string::npos) << status;

  EXPECT_EQ(LoadWorkloads(dir_.path(), "nonexistent").status().code(), StatusCode::kNotFound);
}

// Issue 23, item 4: values that load today but abort the simulator (1e307 s
// per epoch), wrap in the W -> mW conversion (4294968 W) or overflow its
// costs (1e100 s) are refused at load, naming file:line:col and the range.
TEST_F(TraceTest, OutOfRangeValuesAreRefusedNamingFileLineColumnAndRange) {
  struct Case {
    const char* file;
    const char* find;
    const char* replace;
    const char* where;
    const char* range;
  };
  const Case cases[] = {
      {"power", "200,10,150", "5000000,10,150", "summary_power_toy.csv:2:5: column 'power_limit'",
       "expected an integer in [1, 100000] W, got '5000000'"},
      {"power", "200,10,150", "4294968,10,150", "summary_power_toy.csv:2:5: column 'power_limit'",
       "got '4294968'"},
      {"power", "200,10,150", "200,1e307,150", "summary_power_toy.csv:2:6: column 'time_per_epoch'",
       "expected a number in [1e-06, 1e+09] s, got '1e307'"},
      {"power", "200,10,150", "200,1e100,150", "summary_power_toy.csv:2:6", "got '1e100'"},
      {"power", "200,10,150", "200,1e-300,150", "summary_power_toy.csv:2:6", "got '1e-300'"},
      {"power", "200,10,150", "200,10,1e300", "summary_power_toy.csv:2:7: column 'average_power'",
       "expected a number in [1e-06, 1e+06] W, got '1e300'"},
      {"power", "200,10,150", "200,10,inf", "summary_power_toy.csv:2:7", "got 'inf'"},
      {"train", "0.5,6", "0.5,1e300", "summary_train.csv:3:8: column 'target_epoch'",
       "expected a number in [1, 1.07374e+09], got '1e300'"},
      {"train", "0.5,6", "0.5,0.5", "summary_train.csv:3:8", "got '0.5'"},
      {"train", "sgd,0.1,2,0.5,6", "sgd,0.1,4294967298,0.5,6",
       "summary_train.csv:3:6: column 'run'",
       "expected an integer in [0, 1073741824], got '4294967298'"},
      {"jobs", "0.5,10,64", "0.5,10000000000,64", "jobs.csv:2:5: column 'max_epochs'",
       "got '10000000000'"},
      {"jobs", "0.5,10,64", "1e999,10,64", "jobs.csv:2:4: column 'target_metric'", "'1e999'"},
  };
  for (const Case& c : cases) {
    std::string jobs = kJobs;
    std::string train = kTrain;
    std::string power = kPower;
    std::string& text = std::string(c.file) == "jobs"    ? jobs
                        : std::string(c.file) == "train" ? train
                                                         : power;
    ASSERT_NE(text.find(c.find), std::string::npos) << c.find;
    text.replace(text.find(c.find), std::string(c.find).size(), c.replace);
    const Status status = LoadWorkloads(Write(jobs, train, power), "toy").status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.replace << ": " << status;
    EXPECT_NE(status.message().find(c.where), std::string::npos) << c.replace << ": " << status;
    EXPECT_NE(status.message().find(c.range), std::string::npos) << c.replace << ": " << status;
  }
}

TEST_F(TraceTest, BoundaryValuesOfEveryRangeLoad) {
  std::string power = kPower;
  power.replace(power.find("200,10,150"), 10, "100000,1e9,1e6");
  power.replace(power.find("100,14,90"), 9, "1,1e-6,1e-6");
  std::string train = kTrain;
  train.replace(train.find("0.5,6"), 5, "0.5,1");
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(Write(kJobs, train, power), "toy"));
  const BatchSizeTrace* b32 = workloads[0].Find(32);
  ASSERT_NE(b32, nullptr);
  EXPECT_EQ(b32->power.front().power_limit_w, 1);
  EXPECT_EQ(b32->power.back().power_limit_w, kMaxTracePowerLimitW);
  EXPECT_EQ(workloads[0].max_power_w, kMaxTracePowerLimitW);
  EXPECT_TRUE(ValidateWorkload(workloads[0]).ok());
}

// Issue 23, item 9: Excel and Python's utf-8-sig write a byte-order mark
// before the header; it used to glue onto "dataset" ("missing column").
TEST_F(TraceTest, HeadersWithAUtf8ByteOrderMarkLoad) {
  const std::string bom = "\xEF\xBB\xBF";
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(Write(bom + kJobs, bom + kTrain, bom + kPower), "toy"));
  ASSERT_EQ(workloads.size(), 1u);
  EXPECT_EQ(workloads[0].job.dataset, "toy");
  EXPECT_EQ(workloads[0].BatchSizeList(), (std::vector<int>{32, 64, 128}));
}

TEST_F(TraceTest, ValidateWorkloadNamesTheWorkloadBatchSizeLimitAndValue) {
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(Write(kJobs, kTrain, kPower), "toy"));
  Workload w = workloads[0];
  w.batch_sizes[0].power[1].time_per_epoch_s = 1e307;
  Status status = ValidateWorkload(w);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "workload toy toy/net/sgd: batch size 32 at 200 W: time_per_epoch_s must be in "
            "[1e-06, 1e+09], got 1e+307");

  w = workloads[0];
  w.batch_sizes[0].power[1].power_limit_w = 5'000'000;
  w.power_limits_w.back() = 5'000'000;
  EXPECT_NE(ValidateWorkload(w).message().find("power limit (W) must be in [1, 100000], got 5e+06"),
            std::string::npos)
      << ValidateWorkload(w);

  w = workloads[0];
  w.batch_sizes[1].target_epochs[0] = 0.25;
  EXPECT_NE(ValidateWorkload(w).message().find("batch size 64: target epoch must be in"),
            std::string::npos);

  w = workloads[0];
  w.batch_sizes[2].power.clear();
  EXPECT_NE(ValidateWorkload(w).message().find("batch size 128: no power points"),
            std::string::npos);

  w = workloads[0];
  w.default_batch_size = 48;
  EXPECT_NE(ValidateWorkload(w).message().find("default batch size 48"), std::string::npos);

  w = workloads[0];
  w.max_power_w = std::numeric_limits<double>::infinity();
  EXPECT_NE(ValidateWorkload(w).message().find("max_power_w must be in"), std::string::npos);
}

TEST_F(TraceTest, DefaultMissingFromTracesIsAnError) {
  std::string jobs = kJobs;
  jobs.replace(jobs.find(",64\n"), 4, ",48\n");
  const Status status = LoadWorkloads(Write(jobs, kTrain, kPower), "toy").status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("default batch size 48"), std::string::npos) << status;
}

TEST_F(TraceTest, FindsGpusByPowerTraceFiles) {
  Write(kJobs, kTrain, kPower);
  dir_.WriteFile("summary_power_a40.csv", kPower);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<std::string> gpus, FindTraceGpus(dir_.path()));
  EXPECT_EQ(gpus, (std::vector<std::string>{"a40", "toy"}));
  testing::TempDir empty;
  EXPECT_EQ(FindTraceGpus(empty.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace zeus

namespace zeus {
namespace {

TEST(TraceMilestonesTest, BundledTracesKeepTheLevelsOnTheWayToTheTarget) {
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(testing::DataDir() + "/traces/zeus-nsdi23", "a40"));
  std::map<std::string, const Workload*> by_dataset;
  for (const Workload& w : workloads) by_dataset[w.job.dataset] = &w;
  // Accuracy upwards: 0.05, 0.1, ... below the target 0.6.
  const Workload& cifar = *by_dataset.at("cifar100");
  ASSERT_EQ(cifar.milestones.size(), 11u);
  EXPECT_DOUBLE_EQ(cifar.milestones.front(), 0.05);
  EXPECT_DOUBLE_EQ(cifar.milestones.back(), 0.55);
  // A word error rate downwards: 65, 60, ... above the target 40.
  const Workload& librispeech = *by_dataset.at("librispeech");
  ASSERT_FALSE(librispeech.milestones.empty());
  EXPECT_GT(librispeech.milestones.front(), librispeech.milestones.back());
  EXPECT_GT(librispeech.milestones.back(), librispeech.job.target_metric);
  for (const Workload& w : workloads) {
    ZEUS_EXPECT_OK(ValidateWorkload(w));
    for (const BatchSizeTrace& trace : w.batch_sizes) {
      ASSERT_EQ(trace.milestone_epochs.size(), trace.target_epochs.size()) << w.job.dataset;
    }
  }
  // cifar100's default (1024), seed run 1: 0.05 at epoch 1, ..., 0.55 at 29,
  // the target 0.6 at 74.
  const BatchSizeTrace& default_trace = *cifar.Find(1024);
  EXPECT_EQ(default_trace.milestone_epochs[0].front(), 1.0);
  EXPECT_EQ(default_trace.milestone_epochs[0].back(), 29.0);
  EXPECT_EQ(default_trace.target_epochs[0], 74.0);
}

}  // namespace
}  // namespace zeus

namespace zeus {
namespace {

// A trace file beyond kMaxTraceFileBytes is refused before it is read (a
// sparse file: no time, no memory), naming the file and its size; so is a
// job-group file.
TEST(TraceFileLimitTest, ATraceFileBeyondTheLimitIsRefusedBeforeItIsRead) {
  testing::TempDir dir;
  const std::string path = dir.File("summary_train.csv");
  { std::ofstream create(path); }
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kMaxTraceFileBytes + 1)), 0);
  const Status refused = ReadTraceFile(path).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(path), std::string::npos) << refused;
  EXPECT_NE(refused.message().find(std::to_string(kMaxTraceFileBytes + 1) + " bytes"),
            std::string::npos)
      << refused;
  const Status groups = LoadJobGroups(path).status();
  EXPECT_EQ(groups.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(groups.message().find("MiB"), std::string::npos) << groups;
}

}  // namespace
}  // namespace zeus
