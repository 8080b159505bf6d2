// Test helper: the A40 profiler logs under data/profiles, parsed here with
// plain string handling (independently of the library's CSV reader) so tests
// can compute expected answers from the raw numbers.

#ifndef ZEUS_TESTS_CORE_BUNDLED_PROFILES_H_
#define ZEUS_TESTS_CORE_BUNDLED_PROFILES_H_

#include <string>
#include <vector>

namespace zeus::testing {

struct RawProfileRow {
  int power_limit_w = 0;
  double time_s = 0;
  std::vector<double> gpu_energy_j;  // One entry per GPU column.
  double TotalEnergyJ() const;
};

struct RawProfile {
  std::string path;
  std::vector<RawProfileRow> rows;  // In file order (descending limits).
};

// Every *.csv under DataDir()/profiles, sorted by path. Fails the calling
// test (ADD_FAILURE) on a malformed file.
std::vector<RawProfile> ReadBundledProfiles();

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_CORE_BUNDLED_PROFILES_H_
