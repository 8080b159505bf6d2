#include "zeus/optimizer/batch_size/pruning_explorer.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

// Drives the walk with a fixed table of (cost, reached) per batch size and
// returns the order in which sizes were tried.
std::vector<int> Walk(PruningExplorer& explorer,
                      const std::map<int, std::pair<double, bool>>& outcomes) {
  std::vector<int> order;
  while (!explorer.done()) {
    const int batch_size = explorer.Current();
    order.push_back(batch_size);
    const auto& [cost, reached] = outcomes.at(batch_size);
    EXPECT_TRUE(explorer.Report(cost, reached).ok());
    if (order.size() > 100) break;
  }
  return order;
}

TEST(PruningExplorerTest, WalksDownThenUpTwiceAndKeepsSurvivors) {
  // 8 and 128 fail; 32 is cheapest.
  PruningExplorer explorer({8, 16, 32, 64, 128}, 64, 2);
  const std::map<int, std::pair<double, bool>> outcomes = {
      {8, {50, false}}, {16, {30, true}}, {32, {10, true}}, {64, {20, true}}, {128, {90, false}}};
  const std::vector<int> order = Walk(explorer, outcomes);
  // Round 1: down 64, 32, 16, 8 (fails); up 128 (fails).
  // Round 2 over {16, 32, 64} from 32: down 32, 16; up 64.
  EXPECT_EQ(order, (std::vector<int>{64, 32, 16, 8, 128, 32, 16, 64}));
  EXPECT_EQ(explorer.survivors(), (std::vector<int>{16, 32, 64}));
}

TEST(PruningExplorerTest, AFailureEndsOnlyItsDirection) {
  PruningExplorer explorer({8, 16, 32, 64, 128}, 32, 1);
  const std::map<int, std::pair<double, bool>> outcomes = {
      {8, {5, true}}, {16, {7, false}}, {32, {10, true}}, {64, {20, true}}, {128, {90, true}}};
  EXPECT_EQ(Walk(explorer, outcomes), (std::vector<int>{32, 16, 64, 128}));
  // 8 was never tried: pruned with its failing neighbour.
  EXPECT_EQ(explorer.survivors(), (std::vector<int>{32, 64, 128}));
}

TEST(PruningExplorerTest, SecondRoundPrunesFurther) {
  PruningExplorer explorer({8, 16, 32}, 16, 2);
  std::map<int, std::pair<double, bool>> outcomes = {
      {8, {5, true}}, {16, {7, true}}, {32, {10, true}}};
  std::vector<int> order;
  // Round 1 everything converges; in round 2, 16 fails.
  while (!explorer.done()) {
    const int batch_size = explorer.Current();
    order.push_back(batch_size);
    const bool reached = !(explorer.round() == 1 && batch_size == 16);
    ASSERT_TRUE(explorer.Report(outcomes.at(batch_size).first, reached).ok());
  }
  // Round 2 starts from 8 (cheapest): down 8; up 16 fails, so 32 is not tried.
  EXPECT_EQ(order, (std::vector<int>{16, 8, 32, 8, 16}));
  EXPECT_EQ(explorer.survivors(), (std::vector<int>{8}));
}

TEST(PruningExplorerTest, DefaultFailingEverywhereLeavesNoSurvivors) {
  PruningExplorer explorer({8, 16}, 16, 2);
  EXPECT_EQ(explorer.Current(), 16);
  // The default fails: down is over at once and nothing lies above 16.
  ZEUS_ASSERT_OK(explorer.Report(1, false));
  EXPECT_TRUE(explorer.done());
  EXPECT_TRUE(explorer.survivors().empty());
}

TEST(PruningExplorerTest, ZeroRoundsKeepsEverySize) {
  PruningExplorer explorer({8, 16}, 16, 0);
  EXPECT_TRUE(explorer.done());
  EXPECT_EQ(explorer.survivors(), (std::vector<int>{8, 16}));
  EXPECT_EQ(explorer.Report(1, true).code(), StatusCode::kFailedPrecondition);
}

TEST(PruningExplorerTest, JsonRoundTripMidWalk) {
  PruningExplorer explorer({8, 16, 32, 64}, 32, 2);
  ZEUS_ASSERT_OK(explorer.Report(10, true));  // 32
  ZEUS_ASSERT_OK(explorer.Report(8, true));   // 16
  ZEUS_ASSERT_OK_AND_ASSIGN(PruningExplorer restored, PruningExplorer::FromJson(explorer.ToJson()));
  while (!explorer.done()) {
    ASSERT_FALSE(restored.done());
    EXPECT_EQ(explorer.Current(), restored.Current());
    ZEUS_ASSERT_OK(explorer.Report(explorer.Current(), true));
    ZEUS_ASSERT_OK(restored.Report(restored.Current(), true));
  }
  EXPECT_TRUE(restored.done());
  EXPECT_EQ(explorer.survivors(), restored.survivors());
  nlohmann::json bad = explorer.ToJson();
  bad.erase("good");
  EXPECT_EQ(PruningExplorer::FromJson(bad).status().code(), StatusCode::kInvalidArgument);
}

// Found by fuzz_optimizer_state: a survivor listed twice was loaded, and the
// round's end then built candidates that were not unique, which no longer
// loaded. Every inconsistent round in progress is refused, naming its field.
TEST(PruningExplorerTest, FromJsonRefusesARoundStartRoundAndReportCouldNotBuild) {
  PruningExplorer explorer({8, 16, 32, 64}, 32, 1);
  ZEUS_ASSERT_OK(explorer.Report(132, true));  // 32
  ZEUS_ASSERT_OK(explorer.Report(116, true));  // 16
  ZEUS_ASSERT_OK(explorer.Report(108, true));  // 8; now going up to 64
  const nlohmann::json state = explorer.ToJson();
  ZEUS_ASSERT_OK(PruningExplorer::FromJson(state).status());
  const auto refused = [](const nlohmann::json& bad, const std::string& field) {
    StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(bad);
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_NE(loaded.status().message().find("field '" + field + "'"), std::string::npos)
        << loaded.status();
  };
  nlohmann::json bad = state;
  bad["good"] = {16, 16, 8};
  refused(bad, "good");
  bad = state;
  bad["good"] = {32, 64};  // 64 is the size being tried, not yet reported.
  refused(bad, "good");
  bad = state;
  bad["down"] = {32, 8};
  refused(bad, "down");
  bad = state;
  bad["up"] = {64, 64};
  refused(bad, "down");
  bad = state;
  bad["default"] = 64;
  refused(bad, "default");
  bad = state;
  bad["best_cost"] = nullptr;
  refused(bad, "best_cost");
  bad = state;
  bad["good"] = nlohmann::json::array();
  refused(bad, "best_cost");

  // The state that really was built still finishes its round and reloads.
  ZEUS_ASSERT_OK_AND_ASSIGN(PruningExplorer restored, PruningExplorer::FromJson(state));
  ZEUS_ASSERT_OK(restored.Report(150, true));  // 64
  ASSERT_TRUE(restored.done());
  EXPECT_EQ(restored.survivors(), (std::vector<int>{8, 16, 32, 64}));
  ZEUS_EXPECT_OK(PruningExplorer::FromJson(restored.ToJson()).status());
}

}  // namespace
}  // namespace zeus
