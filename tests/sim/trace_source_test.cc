// ResolveTraceDir's order (explicit directory, $ZEUS_TRACE_DIR, bundled,
// cache) with no network: downloads are tested in tests/fetch.

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
  options.explicit_dir = BundledTraces();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string dir, ResolveTraceDir(options));
  EXPECT_EQ(dir, BundledTraces());
  options.explicit_dir.clear();
  options.cache_dir = empty.path();
  options.bundled_dir = empty.path() + "/nothing";
  const Status none = ResolveTraceDir(options).status();
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("--download"), std::string::npos) << none;
}

TEST(TraceSourceTest, BundledTracesComeBeforeTheCacheAndNeedNoNetwork) {
  testing::TempDir cache;
  TraceSourceOptions options;
  options.cache_dir = cache.path();
  options.bundled_dir = BundledTraces();
  int downloads = 0;
  options.download = [&](const std::string&, const std::string&, const DownloadProgress&) {
    ++downloads;
    return UnavailableError("offline");
  };
  unsetenv("ZEUS_TRACE_DIR");
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string dir, ResolveTraceDir(options));
  EXPECT_EQ(dir, BundledTraces());
  EXPECT_EQ(downloads, 0);
  // Asking for a download skips the bundled set.
  options.allow_download = true;
  EXPECT_EQ(ResolveTraceDir(options).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(downloads, 1);
}

TEST(TraceSourceTest, WithoutADownloaderAnEmptyCacheIsNotFound) {
  testing::TempDir empty;
  TraceSourceOptions options;
  options.cache_dir = empty.path();
  options.bundled_dir = empty.path() + "/nothing";
  options.allow_download = true;
  unsetenv("ZEUS_TRACE_DIR");
  const Status status = ResolveTraceDir(options).status();
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("--traces"), std::string::npos) << status;
}

}  // namespace
}  // namespace zeus
