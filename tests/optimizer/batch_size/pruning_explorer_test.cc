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

TEST(PruningExplorerTest, MayTryListsWhatTheRoundInProgressCanStillReach) {
  PruningExplorer explorer({8, 16, 32, 64, 128}, 32, 1);
  // Going down from 32: 32, 16, 8 ahead; the up direction (64, 128) later.
  for (int size : {8, 16, 32, 64, 128}) EXPECT_TRUE(explorer.MayTry(size)) << size;
  ZEUS_ASSERT_OK(explorer.Report(10, true));  // 32
  EXPECT_FALSE(explorer.MayTry(32));
  EXPECT_TRUE(explorer.MayTry(16));
  ZEUS_ASSERT_OK(explorer.Report(17, false));  // 16 fails: down is over.
  ASSERT_EQ(explorer.Current(), 64);
  for (int size : {8, 16, 32}) EXPECT_FALSE(explorer.MayTry(size)) << size;
  EXPECT_TRUE(explorer.MayTry(64));
  EXPECT_TRUE(explorer.MayTry(128));
  EXPECT_FALSE(explorer.MayTry(256));          // Not a candidate.
  ZEUS_ASSERT_OK(explorer.Report(20, true));   // 64
  ZEUS_ASSERT_OK(explorer.Report(90, false));  // 128
  ASSERT_TRUE(explorer.done());
  for (int size : {8, 16, 32, 64, 128}) EXPECT_FALSE(explorer.MayTry(size)) << size;
}

TEST(PruningExplorerTest, MayTryDropsTheUpDirectionOnceTheDownWalkIsDecisive) {
  PruningExplorer explorer({8, 16, 32, 64, 128}, 32, 1, 1, /*decisive_ratio=*/1.25);
  ZEUS_ASSERT_OK(explorer.Report(10, true));  // 32, the start.
  ZEUS_ASSERT_OK(explorer.Report(9, true));   // 16: cheaper, not decisively.
  EXPECT_TRUE(explorer.MayTry(64));
  ZEUS_ASSERT_OK(explorer.Report(7, true));  // 8: 10 > 1.25 x 7, decisive.
  // The down walk is over and the up direction skipped: nothing is left.
  EXPECT_TRUE(explorer.done());

  PruningExplorer still_down({4, 8, 16, 32, 64, 128}, 32, 1, 1, 1.25);
  ZEUS_ASSERT_OK(still_down.Report(10, true));  // 32
  EXPECT_TRUE(still_down.MayTry(64));
  ZEUS_ASSERT_OK(still_down.Report(7, true));  // 16: decisive, 8 and 4 still ahead.
  ASSERT_FALSE(still_down.done());
  EXPECT_TRUE(still_down.MayTry(8));
  EXPECT_FALSE(still_down.MayTry(64));
  EXPECT_FALSE(still_down.MayTry(128));
}

TEST(PruningExplorerTest, UpcomingListsEachDirectionToItsOwnDepthNearestFirst) {
  const std::vector<int> sizes = {8, 16, 32, 64, 128, 256, 512, 1024};
  PruningExplorer explorer(sizes, 64, 1, 1, /*decisive_ratio=*/1.2);
  // Going down, nothing reported: 2 sizes down, 3 up, interleaved.
  EXPECT_EQ(explorer.Upcoming(2, 3), (std::vector<int>{32, 128, 16, 256, 512}));
  EXPECT_EQ(explorer.Upcoming(3, 1), (std::vector<int>{32, 128, 16, 8}));
  EXPECT_EQ(explorer.Upcoming(0, 0), (std::vector<int>{}));
  ZEUS_ASSERT_OK(explorer.Report(20, true));  // 64
  // 64 reached and nothing smaller beat it yet: up stays likely.
  EXPECT_EQ(explorer.Upcoming(2, 3), (std::vector<int>{16, 128, 8, 256, 512}));
  ZEUS_ASSERT_OK(explorer.Report(10, true));  // 32 is cheaper: the optimum is not above 64.
  EXPECT_EQ(explorer.Upcoming(2, 3), (std::vector<int>{8}));
  ZEUS_ASSERT_OK(explorer.Report(11, true));  // 16
  // 8 fails: down is over; 32 (10) was 1.2 x cheaper than the start (20),
  // so the up direction is skipped.
  ZEUS_ASSERT_OK(explorer.Report(30, false));
  EXPECT_TRUE(explorer.done());
  EXPECT_EQ(explorer.Upcoming(2, 3), (std::vector<int>{}));

  // Going up, only the up depth counts.
  PruningExplorer up(sizes, 64, 1);
  ZEUS_ASSERT_OK(up.Report(20, true));   // 64
  ZEUS_ASSERT_OK(up.Report(30, false));  // 32 fails: up from 128.
  ASSERT_EQ(up.Current(), 128);
  EXPECT_EQ(up.Upcoming(2, 3), (std::vector<int>{256, 512, 1024}));
  EXPECT_EQ(up.Upcoming(3, 1), (std::vector<int>{256}));
}

TEST(PruningExplorerTest, StepsBehindCountsCandidatesBackAlongTheCurrentDirection) {
  PruningExplorer explorer({8, 16, 32, 64, 128, 256}, 64, 1);
  // The start: nothing behind it.
  EXPECT_EQ(explorer.StepsBehind(64), 0);
  EXPECT_EQ(explorer.StepsBehind(32), -1);
  ZEUS_ASSERT_OK(explorer.Report(20, true));  // 64
  ZEUS_ASSERT_OK(explorer.Report(15, true));  // 32
  ASSERT_EQ(explorer.Current(), 16);
  EXPECT_EQ(explorer.StepsBehind(32), 1);
  EXPECT_EQ(explorer.StepsBehind(64), 2);
  EXPECT_EQ(explorer.StepsBehind(8), -1);
  EXPECT_EQ(explorer.StepsBehind(100), 0);     // Not a candidate.
  ZEUS_ASSERT_OK(explorer.Report(30, false));  // 16 fails: up from 128.
  ASSERT_EQ(explorer.Current(), 128);
  EXPECT_EQ(explorer.StepsBehind(64), 1);
  EXPECT_EQ(explorer.StepsBehind(32), 2);
  EXPECT_EQ(explorer.StepsBehind(256), -1);
  ZEUS_ASSERT_OK(explorer.Report(40, false));  // 128 fails: the walk is over.
  ASSERT_TRUE(explorer.done());
  EXPECT_EQ(explorer.StepsBehind(64), 0);
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
  refused(bad, "up");
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

TEST(PruningExplorerTest, PatienceSkipsOneUnluckyFailureOnlyOnAnImprovingSlope) {
  // Up from 2: 4 and 8 improve, 16 fails (unlucky), 32 improves, 64 and 128
  // fail. Down from 2: 1 fails at once (that direction never improved).
  PruningExplorer explorer({1, 2, 4, 8, 16, 32, 64, 128}, 2, /*num_rounds=*/1,
                           /*direction_patience=*/2);
  const std::map<int, std::pair<double, bool>> outcomes = {
      {1, {60, false}},  {2, {50, true}},  {4, {40, true}},   {8, {30, true}},
      {16, {36, false}}, {32, {20, true}}, {64, {24, false}}, {128, {24, false}}};
  EXPECT_EQ(Walk(explorer, outcomes), (std::vector<int>{2, 1, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(explorer.survivors(), (std::vector<int>{2, 4, 8, 32}));

  // Patience 1 (Zeus) stops at 16 and never sees 32.
  PruningExplorer zeus({1, 2, 4, 8, 16, 32, 64, 128}, 2, 1);
  EXPECT_EQ(Walk(zeus, outcomes), (std::vector<int>{2, 1, 4, 8, 16}));
  EXPECT_EQ(zeus.survivors(), (std::vector<int>{2, 4, 8}));
}

TEST(PruningExplorerTest, PatienceStateRoundTripsAndZeusStateHasNoPatienceFields) {
  PruningExplorer explorer({1, 2, 4, 8, 16}, 1, 1, /*direction_patience=*/2);
  ASSERT_TRUE(explorer.Report(10, true).ok());  // 1
  ASSERT_TRUE(explorer.Report(8, true).ok());   // 2: a new best
  ASSERT_TRUE(explorer.Report(9, false).ok());  // 4: one miss, direction goes on
  ASSERT_FALSE(explorer.done());
  ASSERT_EQ(explorer.Current(), 8);
  const nlohmann::json json = explorer.ToJson();
  EXPECT_EQ(json["direction_patience"], 2);
  EXPECT_EQ(json["misses_in_a_row"], 1);
  EXPECT_EQ(json["improved_in_direction"], true);
  StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(json);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->ToJson(), json);
  // The second miss in a row ends the walk, in the original and the copy.
  ASSERT_TRUE(explorer.Report(9, false).ok());
  ASSERT_TRUE(loaded->Report(9, false).ok());
  EXPECT_TRUE(explorer.done());
  EXPECT_TRUE(loaded->done());
  EXPECT_EQ(loaded->survivors(), (std::vector<int>{1, 2}));

  PruningExplorer zeus({1, 2, 4}, 2, 2);
  EXPECT_FALSE(zeus.ToJson().contains("direction_patience"));
  EXPECT_FALSE(zeus.ToJson().contains("misses_in_a_row"));
}

TEST(PruningExplorerTest, FromJsonRefusesAMissCountThatShouldHaveEndedTheDirection) {
  PruningExplorer explorer({1, 2, 4}, 2, 1, /*direction_patience=*/2);
  nlohmann::json json = explorer.ToJson();
  json["misses_in_a_row"] = 2;
  StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(json);
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("misses_in_a_row"), std::string::npos)
      << loaded.status();
  json = explorer.ToJson();
  json["direction_patience"] = 0;
  EXPECT_EQ(PruningExplorer::FromJson(json).status().code(), StatusCode::kInvalidArgument);
}

TEST(PruningExplorerTest, SkipsTheUpDirectionOnlyAfterADecisiveDownWalk) {
  const std::map<int, std::pair<double, bool>> decisive = {
      {1, {90, false}}, {2, {40, true}}, {4, {100, true}}, {8, {200, true}}};
  // 2 costs 40 < 100 / 1.2: the up direction (8) is skipped.
  PruningExplorer skipping({1, 2, 4, 8}, 4, 1, 1, /*decisive_ratio=*/1.2);
  EXPECT_EQ(Walk(skipping, decisive), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(skipping.survivors(), (std::vector<int>{2, 4}));
  // Without the ratio (Zeus), it is walked.
  PruningExplorer walking({1, 2, 4, 8}, 4, 1);
  EXPECT_EQ(Walk(walking, decisive), (std::vector<int>{4, 2, 1, 8}));

  // 2 at 90 is not 1.2 x cheaper than 100: the up direction is walked.
  const std::map<int, std::pair<double, bool>> close = {
      {1, {90, false}}, {2, {90, true}}, {4, {100, true}}, {8, {95, true}}};
  PruningExplorer not_skipping({1, 2, 4, 8}, 4, 1, 1, 1.2);
  EXPECT_EQ(Walk(not_skipping, close), (std::vector<int>{4, 2, 1, 8}));

  // The start cost survives a round trip through JSON.
  PruningExplorer half_way({1, 2, 4, 8}, 4, 1, 1, 1.2);
  ASSERT_TRUE(half_way.Report(100, true).ok());
  StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(half_way.ToJson());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->ToJson()["start_cost"], 100.0);
  EXPECT_EQ(Walk(*loaded, decisive), (std::vector<int>{2, 1}));
}

TEST(PruningExplorerTest, WithADecisiveRatioOnlyASteepSlopeEarnsPatience) {
  // Down from 16 (cost 100): 8 is a new best but only 1.1x cheaper, so the
  // direction ends at 4's failure and 2 is never tried.
  const std::map<int, std::pair<double, bool>> shallow = {{1, {50, true}},   {2, {50, true}},
                                                          {4, {95, false}},  {8, {91, true}},
                                                          {16, {100, true}}, {32, {120, false}}};
  PruningExplorer ratio({1, 2, 4, 8, 16, 32}, 16, 1, /*direction_patience=*/2, 1.25);
  EXPECT_EQ(Walk(ratio, shallow), (std::vector<int>{16, 8, 4, 32}));
  // Without a ratio any new best earns the patience: 2 is tried.
  PruningExplorer any_best({1, 2, 4, 8, 16, 32}, 16, 1, /*direction_patience=*/2);
  EXPECT_EQ(Walk(any_best, shallow), (std::vector<int>{16, 8, 4, 2, 1, 32}));

  // 8 at 70 is 1.43x cheaper than 100: one failure (4) does not end the walk.
  const std::map<int, std::pair<double, bool>> steep = {{1, {50, true}},   {2, {50, true}},
                                                        {4, {95, false}},  {8, {70, true}},
                                                        {16, {100, true}}, {32, {120, false}}};
  PruningExplorer patient({1, 2, 4, 8, 16, 32}, 16, 1, /*direction_patience=*/2, 1.25);
  EXPECT_EQ(Walk(patient, steep), (std::vector<int>{16, 8, 4, 2, 1}));

  // Up, the slope is measured from the best cost when the up walk began (90).
  const std::map<int, std::pair<double, bool>> up = {
      {1, {95, false}},  {2, {90, true}},  {4, {100, true}},  {8, {60, true}},
      {16, {99, false}}, {32, {40, true}}, {64, {41, false}}, {128, {10, true}}};
  PruningExplorer up_walk({1, 2, 4, 8, 16, 32, 64, 128}, 4, 1, /*direction_patience=*/2, 1.25);
  for (int i = 0; i < 4; ++i) {  // 4, 2, 1, then 8 (60 < 90 / 1.25).
    ASSERT_TRUE(
        up_walk.Report(up.at(up_walk.Current()).first, up.at(up_walk.Current()).second).ok());
  }
  // The up walk's start survives a round trip through JSON.
  const nlohmann::json json = up_walk.ToJson();
  EXPECT_EQ(json["up_start_cost"], 90.0);
  StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(json);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->ToJson(), json);
  // 16 fails once and 32 is still tried (a new best); 64 fails once and 128
  // is still tried.
  EXPECT_EQ(Walk(*loaded, up), (std::vector<int>{16, 32, 64, 128}));
}

TEST(PruningExplorerTest, FromJsonRefusesARepeatedSize) {
  // Found by fuzz_optimizer_state: a repeated survivor became a repeated
  // candidate of the next round, whose saved state then did not load.
  PruningExplorer explorer({8, 16, 32, 64}, 32, 1);
  for (const char* field : {"good", "down", "up"}) {
    nlohmann::json json = explorer.ToJson();
    json[field] = {16, 16};
    StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(json);
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(loaded.status().message().find("16 appears twice"), std::string::npos)
        << loaded.status();
  }
}

TEST(PruningExplorerTest, FromJsonRefusesASurvivorNotWalkedYet) {
  // Found by fuzz_optimizer_state: a survivor still ahead in the walk was
  // walked again, survived twice, and the saved state did not load.
  PruningExplorer explorer({8, 16, 32, 64}, 32, 1);
  ASSERT_TRUE(explorer.Report(10, true).ok());  // 32; next 16.
  nlohmann::json json = explorer.ToJson();
  ASSERT_TRUE(PruningExplorer::FromJson(json).ok());
  json["good"] = {32, 64};
  StatusOr<PruningExplorer> loaded = PruningExplorer::FromJson(json);
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("64 has not been walked yet"), std::string::npos)
      << loaded.status();
  // Nor a size in both directions (it would be walked, and survive, twice).
  json = explorer.ToJson();
  json["up"] = {16, 64};
  loaded = PruningExplorer::FromJson(json);
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("16 is also in the down walk"), std::string::npos)
      << loaded.status();
}

}  // namespace
}  // namespace zeus
