#include "zeus/protocol/job_spec.h"

#include <algorithm>
#include <limits>
#include <vector>

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
  for (BatchSizePolicyKind policy :
       {BatchSizePolicyKind::kZeus, BatchSizePolicyKind::kFrugal, BatchSizePolicyKind::kSwarm}) {
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

// One definition of a valid spec: the physical ranges are ParseJobSpec's
// own (they were the service's alone), so stored specs and answers are held
// to them too, with the messages registrations have always had.
TEST(JobSpecTest, ParsingEnforcesThePhysicalRangesAndIdentifiers) {
  struct Case {
    const char* field;
    json value;
    const char* message;
  };
  const Case cases[] = {
      {"max_power", 2e7, "is outside (0, "},
      {"number_of_gpus", 2000000, "2000000 is outside [1, 1000000]"},
      {"max_epochs", 2000000000, "2000000000 is outside [1, 1000000000]"},
      {"target_metric", 1e16, "is outside ["},
      {"mab_prior_mean", -1e21, "is outside ["},
      {"mab_prior_precision", 1e21, "is outside ["},
      {"gpu_model", "A40\n", "control character"},
      {"job_id", "img-7\r\nX: 1", "control character"},
      {"num_pruning_rounds", 3000000000LL, "3000000000 is out of range"},
      {"window_size", 3000000000LL, "3000000000 is out of range"},
      {"mab_num_explorations", 3000000000LL, "3000000000 is out of range"},
  };
  for (const Case& c : cases) {
    json body = JobBody("img-7");
    body[c.field] = c.value;
    const Status status = ParseJobSpec(body).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(status.message().find(std::string("field '") + c.field + "'"), std::string::npos)
        << status;
    EXPECT_NE(status.message().find(c.message), std::string::npos) << status;
  }
  json wide = JobBody("img-7");
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= 1025; ++b) sizes.push_back(b);
  wide["batch_sizes"] = sizes;
  wide["default_batch_size"] = 1;
  EXPECT_NE(ParseJobSpec(wide).status().message().find(
                "field 'batch_sizes': 1025 batch sizes, more than the limit of 1024 per job"),
            std::string::npos);
  json generated = JobBody("img-7");
  generated.erase("job_id");
  generated["job_id_prefix"] = std::string(248, 'p');
  EXPECT_NE(ParseJobSpec(generated).status().message().find(
                "248 bytes long; at most 247 when job_id is generated"),
            std::string::npos);
}

TEST(JobSpecTest, ValidateJobSpecChecksACppSpecAsTheWireWould) {
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(JobBody("img-7")));
  BatchSizeJobSpec bad = spec;
  bad.eta_knob = 3;
  json body = JobBody("img-7");
  body["eta_knob"] = 3.0;
  const Status wire = ParseJobSpec(body).status();
  ASSERT_FALSE(wire.ok());
  EXPECT_EQ(ValidateJobSpec(bad).status().message(), wire.message());
  bad = spec;
  bad.beta_knob = std::numeric_limits<double>::infinity();
  EXPECT_NE(ValidateJobSpec(bad).status().message().find("beta_knob"), std::string::npos);
  bad = spec;
  bad.gpu_model = "A40\x7f";
  EXPECT_NE(ValidateJobSpec(bad).status().message().find("control character"), std::string::npos);
  BatchSizeJobSpec unsorted = spec;
  std::reverse(unsorted.batch_sizes.begin(), unsorted.batch_sizes.end());
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec sorted, ValidateJobSpec(unsorted));
  EXPECT_TRUE(sorted == spec);
}

}  // namespace
}  // namespace zeus::testing
