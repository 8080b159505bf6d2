#include "src/device/cuda_visible_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kUuids = {
    "GPU-aaaa1111-0000-0000-0000-000000000000",
    "GPU-aaaa2222-0000-0000-0000-000000000000",
    "GPU-bbbb0000-0000-0000-0000-000000000000",
    "GPU-CCCC0000-0000-0000-0000-000000000000",
};

StatusOr<std::vector<unsigned int>> Resolve(const char* value) {
  return ResolveCudaVisibleDevices(std::string(value), kUuids);
}

TEST(CudaVisibleDevicesTest, UnsetMeansEveryGpuInNvmlOrder) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto order, ResolveCudaVisibleDevices(std::nullopt, kUuids));
  EXPECT_THAT(order, ElementsAre(0u, 1u, 2u, 3u));
}

TEST(CudaVisibleDevicesTest, EmptyOrBlankMeansNoGpus) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto order, Resolve(""));
  EXPECT_TRUE(order.empty());
  ZEUS_ASSERT_OK_AND_ASSIGN(order, Resolve("  "));
  EXPECT_TRUE(order.empty());
}

TEST(CudaVisibleDevicesTest, IntegerListMapsOurIndexToNvmlIndex) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto order, Resolve("3, 1 ,0"));
  EXPECT_THAT(order, ElementsAre(3u, 1u, 0u));
}

TEST(CudaVisibleDevicesTest, NegativeIndexEndsTheListLikeCuda) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto order, Resolve("-1"));
  EXPECT_TRUE(order.empty());
  ZEUS_ASSERT_OK_AND_ASSIGN(order, Resolve("2,-1,0"));
  EXPECT_THAT(order, ElementsAre(2u));
}

TEST(CudaVisibleDevicesTest, UuidPrefixesResolveCaseInsensitively) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto order, Resolve("GPU-bbbb,gpu-cccc0000,GPU-aaaa2222-0000-0000-0000-000000000000"));
  EXPECT_THAT(order, ElementsAre(2u, 3u, 1u));
}

TEST(CudaVisibleDevicesTest, AmbiguousOrUnknownUuidIsAnError) {
  auto ambiguous = Resolve("GPU-aaaa");
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ambiguous.status().message(), HasSubstr("ambiguous: 2 GPUs"));
  auto unknown = Resolve("0,GPU-dddd");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("entry 2 'gpu-dddd'"));
}

TEST(CudaVisibleDevicesTest, MigEntriesAreRejectedClearly) {
  for (const char* value : {"MIG-GPU-aaaa1111-0000-0000-0000-000000000000/1/0",
                            "0,MIG-4f1a8b2c-0000-0000-0000-000000000000"}) {
    auto order = Resolve(value);
    EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument) << value;
    EXPECT_THAT(order.status().message(), HasSubstr("MIG devices are not supported")) << value;
  }
}

TEST(CudaVisibleDevicesTest, MalformedEntriesNameTheEntryAndPosition) {
  struct Case {
    const char* value;
    const char* expected;
  };
  for (const Case& c :
       {Case{"0,,1", "entry 2 '': empty entry"}, Case{"0,1,", "entry 3 '': empty entry"},
        Case{"abc", "entry 1 'abc': expected a GPU index"},
        Case{"1.5", "entry 1 '1.5': expected a GPU index"},
        Case{"GPU-xyz", "entry 1 'GPU-xyz': expected 'GPU-' followed by"},
        Case{"GPU-", "entry 1 'GPU-'"}, Case{"1,1", "entry 2 '1': listed twice"}}) {
    auto order = Resolve(c.value);
    EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument) << c.value;
    EXPECT_THAT(order.status().message(), HasSubstr(c.expected)) << c.value;
  }
}

TEST(CudaVisibleDevicesTest, OutOfRangeIndexIsAnError) {
  auto order = Resolve("0,4");
  EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("entry 2 '4': no such GPU: NVML sees 4 GPU(s)"));
}

TEST(CudaVisibleDevicesTest, IndexAndUuidNamingTheSameGpuIsAnError) {
  auto order = Resolve("2,GPU-bbbb");
  EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("names NVML GPU 2 again"));
}

}  // namespace
}  // namespace zeus
