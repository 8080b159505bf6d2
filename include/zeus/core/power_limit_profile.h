// The power-limit profile: what one measured stretch cost at each limit.
//
// A profile is saved as JSON by the optimizer and read back by a later run
// (which then pins the optimum without profiling) and by
// `zeus power-limit select`. The CSV log of the original Python Zeus
// (`start_time,window_name,elapsed_time,gpu{i}_energy...`, window names
// `__GlobalPowerLimitOptimizer_<W>`) is read too.
//
// Thread-safety: plain values and free functions; no shared state.

#ifndef ZEUS_CORE_POWER_LIMIT_PROFILE_H_
#define ZEUS_CORE_POWER_LIMIT_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/core/knob_profile.h"
#include "zeus/status.h"

namespace zeus {

// One measured stretch at one power limit.
struct PowerLimitMeasurement {
  // The limit every GPU ran at, in mW.
  uint32_t power_limit_mw = 0;
  // Energy of the stretch summed over all GPUs measured (and all ranks), in J.
  double energy_j = 0.0;
  // Duration of the stretch (the slowest rank's under data parallelism), in s.
  double time_s = 0.0;
  // Training steps in the stretch. Energy and time are compared per step, so
  // stretches of different lengths are comparable. The CSV log does not
  // record it: its rows all span the same number of steps and read as 1.
  int64_t steps = 1;

  double energy_per_step_j() const { return energy_j / static_cast<double>(steps); }
  double time_per_step_s() const { return time_s / static_cast<double>(steps); }
};

struct PowerLimitProfile {
  // GPUs whose energy is summed in every measurement (all ranks together).
  int num_gpus = 1;
  // Shortest stretch duration the profiler asked for, in s (0 when unknown,
  // e.g. read from CSV). Informational.
  double min_stretch_time_s = 0.0;
  // One entry per limit, distinct limits, in any order.
  std::vector<PowerLimitMeasurement> measurements;
};

// Ranges of a measurement, far beyond any real stretch and narrow enough that
// every per-step cost a selector computes stays finite.
constexpr double kMaxProfileEnergyJ = 1e18;
constexpr double kMaxProfileTimeS = 1e9;
constexpr int64_t kMaxProfileSteps = int64_t{1} << 53;

// OK when the profile can drive a selector: at least one measurement,
// num_gpus >= 1, distinct limits > 0, energy in [0, kMaxProfileEnergyJ],
// time in (0, kMaxProfileTimeS], steps in [1, kMaxProfileSteps]. The error
// names the offending measurement and value.
Status ValidateProfile(const PowerLimitProfile& profile);

// The same profile with the limit (mW) as the knob's setting, and back.
KnobProfile ToKnobProfile(const PowerLimitProfile& profile);
PowerLimitProfile PowerLimitProfileOf(const KnobProfile& profile);

// JSON text of `profile`:
// {"format": "zeus-power-limit-profile", "version": 1, "num_gpus": N,
//  "min_stretch_time_s": S, "measurements": [{"power_limit_mw": ..,
//  "energy_j": .., "time_s": .., "steps": ..}, ...]} (descending limits).
std::string ProfileToJson(const PowerLimitProfile& profile);
// Parses ProfileToJson's format with ParseJson's limits (depth, size,
// duplicate keys); `source` names the text in errors. Unknown fields are
// refused. The result is validated.
StatusOr<PowerLimitProfile> ProfileFromJson(std::string_view json, const std::string& source);

// Parses the CSV log format; `source` names the text in errors, which read
// "source:line:col: detail". Rows of windows named
// `__GlobalPowerLimitOptimizer_<W>` (W an integer number of watts) are the
// measurements; other windows (the user's own, e.g. "train_epoch") are
// skipped, but a file with none of ours is an error. Energy is summed over the
// `gpu<i>_energy` columns (num_gpus = their count). A last line without a
// newline is refused as truncated (see CsvTable::Parse).
StatusOr<PowerLimitProfile> ProfileFromCsv(std::string_view csv, const std::string& source);

// Reads a profile file: JSON when its name ends in ".json" or its first
// non-blank character is '{', else CSV (a leading UTF-8 byte-order mark is
// skipped). kNotFound when the file does not exist; kInvalidArgument naming
// the offset when it holds binary data (FindNonTextByte), or the parser's
// error.
StatusOr<PowerLimitProfile> LoadProfile(const std::string& path);
// OK when SaveProfile(path, ...) can write `path`: its directory exists and a
// file can be created there (tried by creating and removing a hidden
// temporary file, so read-only mounts and ACLs count, root or not), and
// `path` is not a directory. The error names `path` and the reason:
// kNotFound (no such directory), kFailedPrecondition (a parent is a file),
// kPermissionDenied (cannot create files there), kInvalidArgument (path is
// a directory), kIoError otherwise. Meant for checking before a long
// profiling run whose result would otherwise be lost at the end.
Status CheckProfileWritable(const std::string& path);
// Writes ProfileToJson(profile) to `path` atomically.
Status SaveProfile(const std::string& path, const PowerLimitProfile& profile);

// The margin over the mean draw a limit must stay under to bind: it stands
// for bursts above the mean (PowerLimitOptimizerOptions::nonbinding_margin).
inline constexpr double kDefaultNonbindingMargin = 0.2;

// Whether a power limit of `power_limit_w` can change anything for work
// whose mean draw per GPU at the maximum limit is `draw_w`: the limit is
// below draw_w x (1 + `margin`). A limit that cannot bind gives the
// maximum's energy and time, so a profile may record the maximum's
// measurement for it instead of profiling it. The one rule the power-limit
// optimizer and the simulator's JIT profile both apply.
inline bool PowerLimitCanBind(double power_limit_w, double draw_w, double margin) {
  return power_limit_w < draw_w * (1.0 + margin);
}

}  // namespace zeus

#endif  // ZEUS_CORE_POWER_LIMIT_PROFILE_H_
