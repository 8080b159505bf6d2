// One description of each fake GPU library (fake libnvml, fake libamd_smi),
// so a test that runs on fake GPUs runs on both vendors as a parameterised
// test instead of a copy. The fakes' knobs share their suffixes
// (FAKE_NVML_GPUS, FAKE_AMDSMI_GPUS, ...; see fake_nvml_config.h and
// fake_amdsmi_config.h) and meaning; what differs is listed here.

#ifndef ZEUS_TESTS_DEVICE_FAKE_GPU_VENDOR_H_
#define ZEUS_TESTS_DEVICE_FAKE_GPU_VENDOR_H_

#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/device/fake_amdsmi/fake_amdsmi_config.h"
#include "tests/device/fake_nvml/fake_nvml_config.h"

namespace zeus::testing {

struct FakeGpuVendor {
  // "nvml" or "amdsmi" (also the parameterised tests' suffix).
  std::string name;
  // The variable naming the library to load, and the fake to load.
  std::string library_env;
  std::string library_path;
  // The other vendor's variable, pointed at nothing so only this one loads.
  std::string other_library_env;
  // "FAKE_NVML_" or "FAKE_AMDSMI_".
  std::string knob_prefix;
  // The vendor's "not supported" and "unknown error" codes, as knob values.
  std::string rc_not_supported;
  std::string rc_unknown;
  // The symbolic name of the code the fake returns once "lost"
  // (LOST_AFTER_READS).
  std::string lost_code_name;
  // The UUID of fake GPU i is uuid_prefix followed by i in 12 hex digits.
  std::string uuid_prefix;
  // AMD SMI reports power in whole W; NVML in mW.
  bool power_in_whole_watts = false;

  // The knob `suffix` ("GPUS", "POWER_MW", ...) of this vendor's fake.
  std::string Knob(const std::string& suffix) const { return knob_prefix + suffix; }

  // The power in W the backend reports for a fake drawing `power_mw`.
  double ReportedPowerW(unsigned int power_mw) const {
    return power_in_whole_watts ? std::floor(power_mw / 1000.0) : power_mw / 1000.0;
  }

  // The variables that make a process (or a child) load this fake and not
  // the other vendor's library. The AMD energy counter check at open is off
  // (its tests are in tests/device/amdsmi): it would read the fake's
  // counters before the test does.
  std::map<std::string, std::string> Env() const {
    return {{library_env, library_path},
            {other_library_env, "/nonexistent/" + other_library_env + ".so"},
            {"ZEUS_AMDSMI_ENERGY_CHECK_MS", "0"}};
  }
};

inline std::ostream& operator<<(std::ostream& out, const FakeGpuVendor& vendor) {
  return out << vendor.name;
}

// Both fakes, given their paths (each test target receives them as compile
// definitions FAKE_NVML_FULL and FAKE_AMDSMI_FULL).
inline std::vector<FakeGpuVendor> FakeGpuVendors(const std::string& fake_nvml_path,
                                                 const std::string& fake_amdsmi_path) {
  FakeGpuVendor nvml{"nvml",
                     "ZEUS_NVML_LIBRARY",
                     fake_nvml_path,
                     "ZEUS_AMDSMI_LIBRARY",
                     "FAKE_NVML_",
                     "3",    // NVML_ERROR_NOT_SUPPORTED
                     "999",  // NVML_ERROR_UNKNOWN
                     "NVML_ERROR_GPU_IS_LOST",
                     fake_nvml::kUuidPrefix,
                     false};
  FakeGpuVendor amdsmi{"amdsmi",
                       "ZEUS_AMDSMI_LIBRARY",
                       fake_amdsmi_path,
                       "ZEUS_NVML_LIBRARY",
                       "FAKE_AMDSMI_",
                       "2",           // AMDSMI_STATUS_NOT_SUPPORTED
                       "4294967295",  // AMDSMI_STATUS_UNKNOWN_ERROR
                       "AMDSMI_STATUS_DRIVER_NOT_LOADED",
                       fake_amdsmi::kUuidPrefix,
                       true};
  return {nvml, amdsmi};
}

// For INSTANTIATE_TEST_SUITE_P's name generator.
struct FakeGpuVendorName {
  std::string operator()(const ::testing::TestParamInfo<FakeGpuVendor>& info) const {
    return info.param.name;
  }
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_DEVICE_FAKE_GPU_VENDOR_H_
