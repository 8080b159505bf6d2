// What a just-in-time profile measured at each setting of one knob (a power
// limit in mW, a locked SM clock in MHz), in a form shared by the profiler,
// the optimum selectors and every knob's own profile file.
//
// Thread-safety: plain values and free functions; no shared state.

#ifndef ZEUS_CORE_KNOB_PROFILE_H_
#define ZEUS_CORE_KNOB_PROFILE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// One measured stretch at one setting of the knob.
struct KnobMeasurement {
  // The setting every GPU ran at, in the knob's unit (mW, MHz); > 0.
  uint32_t setting = 0;
  // Energy of the stretch summed over all GPUs measured (and all ranks), in J.
  double energy_j = 0.0;
  // Duration of the stretch (the slowest rank's under data parallelism), in s.
  double time_s = 0.0;
  // Training steps in the stretch (energy and time are compared per step).
  int64_t steps = 1;

  double energy_per_step_j() const { return energy_j / static_cast<double>(steps); }
  double time_per_step_s() const { return time_s / static_cast<double>(steps); }
};

struct KnobProfile {
  // GPUs whose energy is summed in every measurement (all ranks together).
  int num_gpus = 1;
  // Shortest stretch duration the profiler asked for, in s. Informational.
  double min_stretch_time_s = 0.0;
  // One entry per setting, distinct settings, in any order.
  std::vector<KnobMeasurement> measurements;
};

// Names used in a knob's validation errors: `profile` is e.g.
// "power-limit profile", `field` the setting's field ("power_limit_mw"),
// `noun` what a setting is ("limit").
struct KnobNames {
  std::string_view profile;
  std::string_view field;
  std::string_view noun;
};

// OK when the measurements can drive a selector: at least one, num_gpus >= 1,
// distinct settings > 0, energy in [0, kMaxProfileEnergyJ], time in
// (0, kMaxProfileTimeS], steps in [1, kMaxProfileSteps] (power_limit_profile.h
// holds the constants). The error names the offending measurement and value.
Status ValidateKnobProfile(const KnobProfile& profile, const KnobNames& names);

}  // namespace zeus

#endif  // ZEUS_CORE_KNOB_PROFILE_H_
