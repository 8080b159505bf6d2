// What the batch-size optimizer hands out and knows about one trial: its
// kind, whether it may finish, and the record it keeps while the trial is in
// flight (BatchSizeOptimizer::in_flight()).

#ifndef ZEUS_OPTIMIZER_BATCH_SIZE_TRIAL_H_
#define ZEUS_OPTIMIZER_BATCH_SIZE_TRIAL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "zeus/optimizer/batch_size/progress_curve.h"
#include "zeus/status.h"

namespace zeus {

enum class TrialKind {
  // A step of the pruning walk.
  kExploration,
  // Launched while an exploration step was in flight: best known batch size.
  kConcurrent,
  // Chosen by Thompson sampling after exploration.
  kBandit,
  // swarm only: launched while an exploration step was in flight, at a size
  // the walk may try next (BatchSizePolicyKind::kSwarm).
  kSpeculative,
};

// "exploration", "concurrent", "bandit" or "speculative".
std::string_view TrialKindName(TrialKind kind);
// kInvalidArgument for any other name.
StatusOr<TrialKind> ParseTrialKind(std::string_view name);

struct Trial {
  // 1, 2, ... per job, in the order trials were handed out.
  int64_t trial_number = 0;
  int batch_size = 0;
  TrialKind kind = TrialKind::kExploration;
  // The run may train to its target (or max epochs) held to the ordinary
  // bound alone, beta x the lowest cost known: no tighter exploration bound,
  // no learning curve, no restart. Every zeus and bandit trial; frugal's
  // concurrent trials; swarm's concurrent trials handed out to finish a
  // submission (kMaxStoppableTries). Not part of a trial's identity.
  bool may_finish = true;

  friend bool operator==(const Trial& a, const Trial& b) {
    return a.trial_number == b.trial_number && a.batch_size == b.batch_size && a.kind == b.kind;
  }
};

// The invariant of every policy: a submission's tries after this many that
// ended without reaching the target (stopped, restarted or failed) get a
// trial that may finish (Trial::may_finish), so no submission is abandoned
// to stop after stop.
inline constexpr int kMaxStoppableTries = 2;

// Which curve an in-flight trial is held to: the reference (named by the
// lowest cost known, which changes with it; a provisional curve by the cost
// of its last point) and the multiple of it (FrugalPolicy::CheckInThreshold).
struct CurveKey {
  double min_cost = 0.0;
  double ratio = 0.0;
  friend bool operator==(const CurveKey& a, const CurveKey& b) {
    return a.min_cost == b.min_cost && a.ratio == b.ratio;
  }
};

// Everything the optimizer knows about one trial in flight.
struct InFlightTrial : Trial {
  // frugal and swarm concurrent trials: the lowest cost known when it was
  // handed out or ran on (none when none was); its bound stays beta x that.
  std::optional<double> min_cost_at_handout;
  // A concurrent trial never restarted: it ran on as a near miss (RunOn) or
  // was handed out to finish its submission (kMaxStoppableTries).
  bool never_restarted = false;
  // swarm: a probe that finishes (Finish), held to this bound alone.
  std::optional<double> finish_bound;
  // frugal and swarm: its learning curve so far (RecordProgress).
  std::vector<ProgressPoint> progress;
  // The curve it was held to at its last report, when one was.
  std::optional<CurveKey> curve_at_report;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_BATCH_SIZE_TRIAL_H_
