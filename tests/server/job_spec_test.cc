#include "zeus/protocol/job_spec.h"

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/protocol/protocol.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

TEST(JobSpecTest, RoundTripsThroughJson) {
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(JobBody("img-7", 42)));
  EXPECT_EQ(spec.job_id, "img-7");
  EXPECT_EQ(spec.mab_seed, 42);
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec again, ParseJobSpec(JobSpecToJson(spec)));
  EXPECT_TRUE(again == spec);
}

TEST(JobSpecTest, NullBetaDisablesEarlyStopping) {
  json body = JobBody("img-7");
  body["beta_knob"] = nullptr;
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(body));
  EXPECT_FALSE(spec.beta_knob.has_value());
  EXPECT_TRUE(JobSpecToJson(spec)["beta_knob"].is_null());
}

TEST(JobSpecTest, ErrorsNameFieldAndValue) {
  json body = JobBody("img-7");
  body["default_batch_size"] = 100;
  StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(body);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("default_batch_size"), std::string::npos);
  EXPECT_NE(spec.status().message().find("100"), std::string::npos);
}

TEST(JobSpecTest, PolicyDefaultsToZeusAndAcceptsOnlyKnownNames) {
  json body = JobBody("img-7");
  ASSERT_FALSE(body.contains("policy"));
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(body));
  EXPECT_EQ(spec.policy, "zeus");
  EXPECT_EQ(JobSpecToJson(spec)["policy"], "zeus");
  body["policy"] = "frugal";
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec frugal, ParseJobSpec(body));
  EXPECT_EQ(frugal.policy, "frugal");
  EXPECT_FALSE(frugal == spec);
  body["policy"] = "greedy";
  StatusOr<BatchSizeJobSpec> bad = ParseJobSpec(body);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("policy"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("greedy"), std::string::npos) << bad.status();
}

TEST(JobSpecTest, PolicyNamesAreTheOptimizers) {
  std::vector<std::string> optimizer_names;
  for (BatchSizePolicy policy :
       {BatchSizePolicy::kZeus, BatchSizePolicy::kFrugal, BatchSizePolicy::kSwarm}) {
    optimizer_names.emplace_back(BatchSizePolicyName(policy));
  }
  EXPECT_EQ(BatchSizePolicyNames(), optimizer_names);
  for (const std::string& name : BatchSizePolicyNames()) {
    EXPECT_TRUE(ParseBatchSizePolicy(name).ok()) << name;
  }
}

TEST(ProtocolTest, TrainingResultRejectsNegativeEnergyAndUnknownFields) {
  json body{{"job_id", "a-1"}, {"batch_size", 8}, {"trial_number", 1}, {"time", 1.0},
            {"energy", -1.0},  {"metric", 0.5},   {"current_epoch", 1}};
  EXPECT_EQ(ParseTrainingResult(body).status().code(), StatusCode::kInvalidArgument);
  body["energy"] = 1.0;
  ZEUS_ASSERT_OK_AND_ASSIGN(TrainingResult result, ParseTrainingResult(body));
  EXPECT_EQ(ToJson(result), body);
  body["bogus"] = 1;
  EXPECT_EQ(ParseTrainingResult(body).status().code(), StatusCode::kInvalidArgument);
}

TEST(ProtocolTest, WireParsersListUnknownFieldsInsteadOfRefusingThem) {
  json report{{"job_id", "a-1"}, {"batch_size", 8}, {"trial_number", 1},  {"time", 1.0},
              {"energy", 1.0},   {"metric", 0.5},   {"current_epoch", 1}, {"max_power", 300}};
  std::vector<std::string> ignored;
  ZEUS_ASSERT_OK_AND_ASSIGN(TrainingResult result, ParseTrainingResult(report, &ignored));
  EXPECT_EQ(result.energy_j, 1.0);
  EXPECT_EQ(ignored, std::vector<std::string>{"max_power"});
  report["energy"] = "lots";
  EXPECT_EQ(ParseTrainingResult(report, &ignored).status().code(), StatusCode::kInvalidArgument);

  json spec = JobBody("img-7");
  spec["seed"] = 1;
  spec[std::string("bad\nname")] = 2;
  EXPECT_EQ(ParseJobSpec(spec).status().code(), StatusCode::kInvalidArgument);  // Stored: strict.
  ignored.clear();
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec parsed, ParseJobSpec(spec, &ignored));
  EXPECT_EQ(parsed.job_id, "img-7");
  EXPECT_EQ(ignored, (std::vector<std::string>{"bad\\x0aname", "seed"}));
  EXPECT_FALSE(JobSpecToJson(parsed).contains("seed"));

  json trial{{"job_id", "a-1"}, {"batch_size", 8}, {"trial_number", 1}, {"extra", nullptr}};
  ignored.clear();
  ZEUS_ASSERT_OK(ParseTrialId(trial, &ignored).status());
  EXPECT_EQ(ignored, std::vector<std::string>{"extra"});
}

}  // namespace
}  // namespace zeus::testing
