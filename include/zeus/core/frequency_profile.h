// The SM-clock profile: what one measured stretch cost at each locked SM
// clock. Saved as JSON by the frequency optimizer and read back by a later
// run (which then pins the optimum without profiling) and by
// `zeus frequency select`.
//
// Thread-safety: plain values and free functions; no shared state.

#ifndef ZEUS_CORE_FREQUENCY_PROFILE_H_
#define ZEUS_CORE_FREQUENCY_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "zeus/core/knob_profile.h"
#include "zeus/core/optimum_selector.h"
#include "zeus/status.h"

namespace zeus {

struct FrequencyProfile {
  // The measurements; KnobMeasurement::setting is the SM clock in MHz.
  KnobProfile profile;
  // The GPUs' power limit while profiling, in mW: MaxPower of the Zeus cost
  // (MaxPowerW(max_power_limit_mw in W, num_gpus)), as a clock does not
  // change what the job may draw at most.
  uint32_t max_power_limit_mw = 0;
};

// The validation names of a frequency profile ("sm_clock_mhz").
inline constexpr KnobNames kFrequencyProfileNames{"frequency profile", "sm_clock_mhz", "clock"};

// ValidateKnobProfile, and max_power_limit_mw > 0.
Status ValidateFrequencyProfile(const FrequencyProfile& profile);

// JSON text: {"format": "zeus-frequency-profile", "version": 1, "num_gpus": N,
// "min_stretch_time_s": S, "max_power_limit_mw": P, "measurements":
// [{"sm_clock_mhz": .., "energy_j": .., "time_s": .., "steps": ..}, ...]}
// (descending clocks).
std::string FrequencyProfileToJson(const FrequencyProfile& profile);
// Parses that format (unknown fields refused; validated); `source` names the
// text in errors.
StatusOr<FrequencyProfile> FrequencyProfileFromJson(std::string_view json,
                                                    const std::string& source);
// Reads a profile file; kNotFound when it does not exist.
StatusOr<FrequencyProfile> LoadFrequencyProfile(const std::string& path);
// Writes FrequencyProfileToJson(profile) to `path` atomically (validated first).
Status SaveFrequencyProfile(const std::string& path, const FrequencyProfile& profile);

// The clock (MHz) `selector` chooses from `profile` (SelectOptimumSetting).
// Errors: an invalid selector or profile.
StatusOr<uint32_t> SelectOptimumMhz(const FrequencyProfile& profile,
                                    const OptimumSelector& selector);

}  // namespace zeus

#endif  // ZEUS_CORE_FREQUENCY_PROFILE_H_
