#include "zeus/core/rng.h"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

TEST(RngTest, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    differs |= (x != c.NextU64());
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, JsonRoundTripContinuesTheSequence) {
  Rng rng(7);
  for (int i = 0; i < 13; ++i) rng.StandardNormal();
  const std::string text = rng.ToJson().dump();
  ZEUS_ASSERT_OK_AND_ASSIGN(Rng restored, Rng::FromJson(nlohmann::json::parse(text)));
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(rng.NextU64(), restored.NextU64());
    EXPECT_EQ(rng.StandardNormal(), restored.StandardNormal());
  }
}

TEST(RngTest, RejectsMalformedAndAllZeroState) {
  EXPECT_FALSE(Rng::FromJson(nlohmann::json::parse(R"({"xoshiro256ss":["0","0","0","0"]})")).ok());
  EXPECT_FALSE(Rng::FromJson(nlohmann::json::parse(R"({"xoshiro256ss":["1","2","3"]})")).ok());
  EXPECT_FALSE(Rng::FromJson(nlohmann::json::parse(R"({"xoshiro256ss":["g","2","3","4"]})")).ok());
  EXPECT_FALSE(Rng::FromJson(nlohmann::json::parse(R"({"state":[]})")).ok());
}

TEST(RngTest, NormalHasUnitMomentsAndUniformIntIsUnbiased) {
  Rng rng(123);
  const int n = 200000;
  double sum = 0, squares = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.StandardNormal();
    sum += z;
    squares += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(squares / n, 1.0, 0.02);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) ++counts[rng.UniformInt(3)];
  for (int count : counts) EXPECT_NEAR(count, 10000, 400);
  EXPECT_EQ(rng.Normal(5.0, 0.0), 5.0);
}

TEST(RngTest, PermutationIsAPermutation) {
  Rng rng(1);
  const std::vector<size_t> p = rng.Permutation(10);
  EXPECT_EQ(std::set<size_t>(p.begin(), p.end()).size(), 10u);
  EXPECT_EQ(*std::max_element(p.begin(), p.end()), 9u);
}

}  // namespace
}  // namespace zeus
