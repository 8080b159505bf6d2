// A frequency profile the CLI tests of `zeus frequency` share.

#ifndef ZEUS_TESTS_TOOLS_FREQUENCY_PROFILES_H_
#define ZEUS_TESTS_TOOLS_FREQUENCY_PROFILES_H_

#include "zeus/core/frequency_profile.h"

namespace zeus::testing {

// Three clocks at a 700 W limit, per step: 1980 MHz 60 J, 0.1 s; 1530 MHz
// 48 J, 0.11 s; 1080 MHz 45 J, 0.15 s. Energy picks 1080, time 1980.
inline FrequencyProfile ThreeClockProfile(int num_gpus) {
  FrequencyProfile p;
  p.max_power_limit_mw = 700'000;
  p.profile.num_gpus = num_gpus;
  p.profile.measurements = {{1980, 2400, 4, 40}, {1530, 2880, 6.6, 60}, {1080, 2250, 7.5, 50}};
  return p;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_TOOLS_FREQUENCY_PROFILES_H_
