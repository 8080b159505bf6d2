// Fuzzes the optimizer state loaders (what the server reads back from its
// store): the input is parsed with ParseJson and given to
// PolicyUnderTest::FromJson, and its "bandit" member (or the whole
// document) to GaussianTs::FromJson. Invariants beyond "no crash": a loaded
// state serializes back to a state that loads, every arm's belief is finite,
// the loaded optimizer can hand out and settle a trial, and its early-stop
// bound for that trial (the frugal policy's exploration bound included) is
// finite and non-negative, as is its bound at a progress it recorded (no
// looser than the whole bound).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/util/json.h"

#include "tests/optimizer/batch_size/policy_under_test.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_optimizer_state: invariant violated: %s\n", what);
    std::abort();
  }
}

template <typename Arms>
void CheckFinite(const Arms& arms) {
  for (const auto& arm : arms) {
    Check(std::isfinite(arm.mean), "a loaded arm has a non-finite mean");
    Check(!std::isnan(arm.precision), "a loaded arm has a NaN precision");
  }
}

void FuzzBandit(const nlohmann::json& json) {
  zeus::StatusOr<zeus::GaussianTs> bandit = zeus::GaussianTs::FromJson(json, {});
  if (!bandit.ok()) return;
  CheckFinite(bandit->ArmStates());
  Check(zeus::GaussianTs::FromJson(bandit->ToJson(), {}).ok(),
        "a loaded bandit's ToJson() does not load");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  zeus::StatusOr<nlohmann::json> json = zeus::ParseJson(text, "fuzz state");
  if (!json.ok()) return 0;
  FuzzBandit(*json);
  if (json->is_object() && json->contains("bandit")) FuzzBandit(json->at("bandit"));
  zeus::StatusOr<zeus::PolicyUnderTest> optimizer = zeus::PolicyUnderTest::FromJson(*json);
  if (!optimizer.ok()) return 0;
  CheckFinite(optimizer->ArmStates());
  zeus::StatusOr<zeus::PolicyUnderTest> again =
      zeus::PolicyUnderTest::FromJson(optimizer->ToJson());
  Check(again.ok(), "a loaded optimizer's ToJson() does not load");
  Check(again->ToJson() == optimizer->ToJson(), "ToJson() is not stable across a reload");
  // swarm: a concurrent run below its restart threshold stops; its report
  // is no observation, and the state still loads.
  for (const auto& [number, in_flight] : optimizer->in_flight()) {
    const std::optional<double> restart = optimizer->RestartThreshold(number);
    if (!restart.has_value()) continue;
    Check(std::isfinite(*restart) && *restart > 0.0, "a restart threshold is not finite and > 0");
    zeus::PolicyUnderTest restarted = *optimizer;
    Check(restarted.ReportResult(number, *restart / 2.0, false).ok(),
          "a run restarted below its threshold cannot be reported");
    Check(zeus::PolicyUnderTest::FromJson(restarted.ToJson()).ok(),
          "the state after a restart does not load");
    break;
  }
  zeus::Trial trial = optimizer->NextTrial();
  const std::optional<double> bound = optimizer->EarlyStopThreshold(trial.trial_number);
  Check(!bound.has_value() || (std::isfinite(*bound) && *bound >= 0.0),
        "a trial's early-stop bound is not finite and >= 0");
  // Its learning curve: one epoch recorded, and the bound at that progress
  // (frugal's and swarm's curve bound included) no looser than the whole one.
  Check(optimizer->RecordProgress(trial.trial_number, 0.5, 0.0).ok(),
        "a trial just handed out cannot record progress");
  const std::optional<double> at_progress = optimizer->EarlyStopThreshold(trial.trial_number, 0.0);
  Check(!at_progress.has_value() || (std::isfinite(*at_progress) && *at_progress >= 0.0 &&
                                     (!bound.has_value() || *at_progress <= *bound)),
        "a trial's bound at its progress is not finite, >= 0 and within its whole bound");
  // A near miss running on past its bound: the walk's verdict now, the run
  // held to more than its bound from then on.
  if (optimizer->RunOnBound(trial.trial_number, 1e15).has_value()) {
    zeus::PolicyUnderTest ran_on = *optimizer;
    Check(ran_on.RunOn(trial.trial_number, 1e15).ok(), "a near miss cannot run on");
    const std::optional<double> run_on_bound = ran_on.EarlyStopThreshold(trial.trial_number);
    Check(run_on_bound.has_value() && bound.has_value() && *run_on_bound > *bound,
          "a run that runs on is not held to more than its bound");
    Check(zeus::PolicyUnderTest::FromJson(ran_on.ToJson()).ok(),
          "the state after a run-on does not load");
    Check(ran_on.ReportResult(trial.trial_number, 1.0, true).ok(),
          "a run that ran on cannot be reported");
  }
  Check(optimizer->ReportResult(trial.trial_number, 1.0, true).ok(),
        "a trial just handed out cannot be reported");
  CheckFinite(optimizer->ArmStates());
  Check(zeus::PolicyUnderTest::FromJson(optimizer->ToJson()).ok(),
        "the state after one more trial does not load");
  return 0;
}
