#include "zeus/sim/trace.h"

#include <gtest/gtest.h>

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
