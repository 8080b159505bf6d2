#include "zeus/sim/report.h"

#include <sstream>

#include <gtest/gtest.h>

#include "zeus/sim/trace.h"
#include "zeus/util/csv.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

PolicyResult MakeResult(const std::string& dataset, const std::string& policy) {
  PolicyResult r;
  r.gpu = "a40";
  r.dataset = dataset;
  r.policy = policy;
  r.num_recurrences = 180;
  r.num_seeds = 10;
  r.energy_ratio = 0.3463;
  r.time_ratio = 0.49;
  r.cost_ratio = 0.4294;
  r.regret = 0.0589;
  r.final_batch_size = 128;
  r.final_power_limit_w = 225;
  r.default_run = {1024, 300, 1000.0, 10.0, 2000.0};
  r.oracle_run = {128, 225, 330.0, 4.9, 800.0};
  return r;
}

TEST(ReportTest, TableShowsRatiosRegretAndSettledConfiguration) {
  std::ostringstream out;
  WriteResultsTable({MakeResult("cifar100", "zeus"), MakeResult("squad", "zeus")}, 10, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("a40      cifar100       zeus                180     0.346     0.490     "
                      "0.429      5.9%  128 @ 225 W"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n\na40      squad"), std::string::npos) << text;  // Workloads separated.
  EXPECT_NE(text.find("means over 10 seed(s)"), std::string::npos);
}

TEST(ReportTest, ComparisonTableSummarisesEachPolicyOverTheWorkloads) {
  PolicyResult zeus_a = MakeResult("cifar100", "zeus");
  zeus_a.expected_regret = 0.04;
  zeus_a.cost_ratio = 0.5;
  PolicyResult zeus_b = MakeResult("squad", "zeus");
  zeus_b.expected_regret = 0.08;
  zeus_b.cost_ratio = 1.04;
  PolicyResult frugal_a = MakeResult("cifar100", "frugal");
  frugal_a.expected_regret = 0.02;
  frugal_a.cost_ratio = 0.45;
  PolicyResult frugal_b = MakeResult("squad", "frugal");
  frugal_b.expected_regret = 0.01;
  frugal_b.cost_ratio = 0.99;
  std::ostringstream out;
  WriteComparisonTable({zeus_a, frugal_a, zeus_b, frugal_b}, out);
  const std::string text = out.str();
  // Mean 6 %, max 8 %, worst cost 1.04 on squad, one workload above default.
  EXPECT_NE(text.find("zeus                  2        6.00%       8.00%      1.040        1  "
                      "a40/squad"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("frugal                2        1.50%       2.00%      0.990        0  "
                      "a40/squad"),
            std::string::npos)
      << text;
  EXPECT_LT(text.find("zeus "), text.find("frugal "));  // First-seen order.
}

TEST(ReportTest, JsonCarriesEveryFieldAndTheReferences) {
  const nlohmann::json json = ResultToJson(MakeResult("cifar100", "zeus"));
  EXPECT_EQ(json["policy"], "zeus");
  EXPECT_EQ(json["recurrences"], 180);
  EXPECT_DOUBLE_EQ(json["regret"].get<double>(), 0.0589);
  EXPECT_EQ(json["final_batch_size"], 128);
  EXPECT_EQ(json["default"]["batch_size"], 1024);
  EXPECT_EQ(json["oracle"]["power_limit_w"], 225);
}

TEST(ReportTest, HistoryCsvHasTheExactLeadingColumnsAndParses) {
  std::ostringstream out;
  WriteHistoryCsvHeader(out);
  const std::string gpu = "v100", dataset = "squad", policy = "zeus";
  HistoryRow row;
  row.gpu = &gpu;
  row.dataset = &dataset;
  row.policy = &policy;
  row.seed = 7;
  row.run = {0, 32, 200, 123456.789, 4410.5, true, 99.5, "bandit"};
  WriteHistoryCsvRow(row, out);
  row.run.recurrence = 0;
  row.run.reached = false;
  WriteHistoryCsvRow(row, out);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("gpu,dataset,seed,recurrence,batch_size,power_limit,energy_j,time_s,"
                       "reached,policy",
                       0),
            0u);
  StatusOr<CsvTable> table = CsvTable::Parse(text, "history.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_rows(), 2u);
  EXPECT_EQ(table->Field(0, 0), "v100");
  EXPECT_EQ(table->Field(0, 2), "7");
  EXPECT_EQ(table->Field(0, 6), "123456.789");
  EXPECT_EQ(table->Field(0, 8), "true");
  EXPECT_EQ(table->Field(1, 8), "false");
  EXPECT_EQ(table->Field(1, 9), "zeus");
  EXPECT_EQ(table->Field(0, 11), "bandit");
  // Outside a group simulation the group columns are empty.
  for (size_t column = 12; column < 17; ++column) EXPECT_EQ(table->Field(0, column), "");
  EXPECT_EQ(table->Field(0, 17), "false");
  EXPECT_EQ(table->Field(0, 18), "");
}

TEST(ReportTest, HistoryCsvGroupRowsCarryTheirGroupTryTimesAndStop) {
  std::ostringstream out;
  WriteHistoryCsvHeader(out);
  const std::string gpu = "a40", dataset = "cifar100", policy = "swarm";
  const std::string group = "sweep, \"lr\"";  // Needs quoting.
  GroupRunRecord run;
  run.run = {3, 2048, 175, 1000.0, 20.0, true, 1500.25, "speculative", true};
  run.start_time_s = 5019.5;
  run.end_time_s = 10497.0;
  run.attempt = 2;
  run.stopped_early = true;
  HistoryRow row;
  row.gpu = &gpu;
  row.dataset = &dataset;
  row.policy = &policy;
  row.seed = 1;
  row.run = run.run;
  row.group = &group;
  row.group_run = &run;
  WriteHistoryCsvRow(row, out);
  StatusOr<CsvTable> table = CsvTable::Parse(out.str(), "history.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_rows(), 1u);
  EXPECT_EQ(table->Field(0, 3), "3");
  EXPECT_EQ(table->Field(0, 10), "1500.25");
  EXPECT_EQ(table->Field(0, 11), "speculative");
  EXPECT_EQ(table->Field(0, 12), group);
  EXPECT_EQ(table->Field(0, 13), "2");
  EXPECT_EQ(table->Field(0, 14), "5019.5");
  EXPECT_EQ(table->Field(0, 15), "10497");
  EXPECT_EQ(table->Field(0, 16), "true");
  EXPECT_EQ(table->Field(0, 17), "true");
  EXPECT_EQ(table->Field(0, 18), "false");
  run.restarted = true;
  WriteHistoryCsvRow(row, out);
  table = CsvTable::Parse(out.str(), "history.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Field(1, 18), "true");
}

TEST(ReportTest, HistorySizeEstimateIsCloseToWhatTheTracesWrite) {
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<Workload> workloads,
                            LoadWorkloads(zeus::testing::DataDir() + "/traces/zeus-nsdi23", "a40"));
  ExperimentOptions options;
  options.policies = {"zeus", "grid-search"};
  options.seeds = {1, 2, 1000};
  std::ostringstream out;
  auto write = [&out](const HistoryRow& row) { WriteHistoryCsvRow(row, out); };
  ASSERT_TRUE(RunExperiment(workloads, options, nullptr, write).ok());
  const double written = static_cast<double>(out.str().size());
  const double estimate = static_cast<double>(EstimateHistoryCsvBytes(workloads, nullptr, options));
  EXPECT_GT(estimate, 0.75 * written) << written;
  EXPECT_LT(estimate, 1.25 * written) << written;

  // Groups: one row per submission of a group on a loaded dataset.
  JobGroups groups;
  groups["g"] = {{"g", 0, 10, workloads[0].job.dataset, 1.0},
                 {"g", 5, 20, workloads[0].job.dataset, 1.0}};
  groups["other"] = {{"other", 0, 10, "no-such-dataset", 1.0}};
  std::ostringstream grouped_out;
  auto write_grouped = [&grouped_out](const HistoryRow& row) {
    WriteHistoryCsvRow(row, grouped_out);
  };
  ASSERT_TRUE(RunGroupExperiment(workloads, groups, options, nullptr, write_grouped).ok());
  const double grouped_written = static_cast<double>(grouped_out.str().size());
  const double grouped_estimate =
      static_cast<double>(EstimateHistoryCsvBytes(workloads, &groups, options));
  EXPECT_GT(grouped_estimate, 0.75 * grouped_written) << grouped_written;
  EXPECT_LT(grouped_estimate, 1.25 * grouped_written) << grouped_written;
}

}  // namespace
}  // namespace zeus
