// The decoded jobs the service keeps: a parsed spec beside each optimizer,
// both served only for the exact stored text they came from.

#include "src/server/optimizer_cache.h"

#include <gtest/gtest.h>

#include "zeus/protocol/job_spec.h"
#include "zeus/server/batch_size_service.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using server_internal::OptimizerCache;

TEST(OptimizerCacheTest, SpecHitsOnlyForTheSameJobAndStoredText) {
  OptimizerCache cache(4);
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(JobBody("a-1")));
  const std::string text = JobSpecToJson(spec).dump();
  EXPECT_FALSE(cache.FindSpec("a-1", text).has_value());
  cache.PutSpec("a-1", text, spec);
  std::optional<BatchSizeJobSpec> hit = cache.FindSpec("a-1", text);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(*hit == spec);
  EXPECT_FALSE(cache.FindSpec("a-1", text + " ").has_value());
  EXPECT_FALSE(cache.FindSpec("b-1", text).has_value());
  // A spec is no optimizer; an optimizer put beside it keeps the spec.
  EXPECT_FALSE(cache.Find("a-1", "").has_value());
  BatchSizeOptimizerConfig config;
  config.batch_sizes = {32, 64};
  config.default_batch_size = 64;
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeOptimizer optimizer, BatchSizeOptimizer::Create(config));
  cache.Put("a-1", "state", optimizer);
  EXPECT_TRUE(cache.Find("a-1", "state").has_value());
  EXPECT_TRUE(cache.FindSpec("a-1", text).has_value());
}

TEST(OptimizerCacheTest, FullCacheStartsOver) {
  OptimizerCache cache(2);
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(JobBody("a-1")));
  cache.PutSpec("a-1", "1", spec);
  cache.PutSpec("b-1", "2", spec);
  cache.PutSpec("b-1", "3", spec);  // Same job: no eviction.
  EXPECT_TRUE(cache.FindSpec("a-1", "1").has_value());
  cache.PutSpec("c-1", "4", spec);
  EXPECT_FALSE(cache.FindSpec("a-1", "1").has_value());
  EXPECT_TRUE(cache.FindSpec("c-1", "4").has_value());
}

// A report reads the spec of the job as stored now: a job deleted and
// registered again under its id with another max_epochs is held to the new
// one, although the old spec was cached by an earlier report.
TEST(OptimizerCacheTest, AJobRegisteredAgainIsReadWithItsNewSpec) {
  TempDir dir;
  std::string skip_reason;
  const std::string url = NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason);
  ASSERT_FALSE(url.empty()) << skip_reason;
  TestServer server(url);
  ASSERT_TRUE(server.ok()) << server.error();
  BatchSizeService& service = server.service();
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec spec, ParseJobSpec(JobBody("re-1")));
  ASSERT_EQ(spec.max_epochs, 10);
  ZEUS_ASSERT_OK(service.RegisterJob(spec).status());
  ZEUS_ASSERT_OK_AND_ASSIGN(TrialId trial, service.NextBatchSize("re-1"));
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse kept,
                            service.Report(TrainingResult{trial, 1.0, 100.0, 0.1, 7}));
  EXPECT_FALSE(kept.stop_train);
  ZEUS_ASSERT_OK(service.DeleteJob("re-1"));
  spec.max_epochs = 5;
  ZEUS_ASSERT_OK(service.RegisterJob(spec).status());
  ZEUS_ASSERT_OK_AND_ASSIGN(trial, service.NextBatchSize("re-1"));
  const Status late = service.Report(TrainingResult{trial, 1.0, 100.0, 0.1, 7}).status();
  EXPECT_EQ(late.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(late.message().find("past max_epochs 5"), std::string::npos) << late;
}

}  // namespace
}  // namespace zeus::testing
