// ResolveTraceDir's order (explicit directory, $ZEUS_TRACE_DIR, cache) with
// no network: downloads are tested in tests/fetch.

#include "zeus/sim/trace_source.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "zeus/sim/trace.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

std::string BundledTraces() { return zeus::testing::DataDir() + "/traces/zeus-nsdi23"; }

TEST(TraceSourceTest, ExplicitAndEnvironmentDirectoriesComeFirst) {
  testing::TempDir empty;
  TraceSourceOptions options;
  options.explicit_dir = empty.path();
  options.allow_download = false;
  EXPECT_EQ(ResolveTraceDir(options).status().code(), StatusCode::kNotFound);
  options.explicit_dir.clear();
  setenv("ZEUS_TRACE_DIR", empty.path().c_str(), 1);
  const Status status = ResolveTraceDir(options).status();
  unsetenv("ZEUS_TRACE_DIR");
  EXPECT_NE(status.message().find("ZEUS_TRACE_DIR"), std::string::npos) << status;
  if (IsCompleteTraceDir(BundledTraces())) {
    options.explicit_dir = BundledTraces();
    ZEUS_ASSERT_OK_AND_ASSIGN(std::string dir, ResolveTraceDir(options));
    EXPECT_EQ(dir, BundledTraces());
  }
  options.explicit_dir.clear();
  options.cache_dir = empty.path();
  EXPECT_EQ(ResolveTraceDir(options).status().code(), StatusCode::kNotFound);
}

TEST(TraceSourceTest, WithoutADownloaderAnEmptyCacheIsNotFound) {
  testing::TempDir empty;
  TraceSourceOptions options;
  options.cache_dir = empty.path();
  unsetenv("ZEUS_TRACE_DIR");
  const Status status = ResolveTraceDir(options).status();
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("--traces"), std::string::npos) << status;
}

}  // namespace
}  // namespace zeus
