#include "zeus/core/frequency_profile.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/core/cost.h"
#include "zeus/util/file.h"
#include "zeus/util/json.h"
#include "zeus/util/units.h"

namespace zeus {
namespace {

constexpr std::string_view kFrequencyJsonFormat = "zeus-frequency-profile";

}  // namespace

Status ValidateFrequencyProfile(const FrequencyProfile& profile) {
  if (profile.max_power_limit_mw == 0) {
    return InvalidArgumentError("frequency profile: max_power_limit_mw must be > 0");
  }
  return ValidateKnobProfile(profile.profile, kFrequencyProfileNames);
}

std::string FrequencyProfileToJson(const FrequencyProfile& profile) {
  std::vector<KnobMeasurement> sorted = profile.profile.measurements;
  std::sort(sorted.begin(), sorted.end(), [](const KnobMeasurement& a, const KnobMeasurement& b) {
    return a.setting > b.setting;
  });
  nlohmann::json measurements = nlohmann::json::array();
  for (const KnobMeasurement& m : sorted) {
    measurements.push_back({{"sm_clock_mhz", m.setting},
                            {"energy_j", m.energy_j},
                            {"time_s", m.time_s},
                            {"steps", m.steps}});
  }
  nlohmann::json j = {{"format", kFrequencyJsonFormat},
                      {"version", 1},
                      {"num_gpus", profile.profile.num_gpus},
                      {"min_stretch_time_s", profile.profile.min_stretch_time_s},
                      {"max_power_limit_mw", profile.max_power_limit_mw},
                      {"measurements", std::move(measurements)}};
  return j.dump(2) + "\n";
}

StatusOr<FrequencyProfile> FrequencyProfileFromJson(std::string_view json,
                                                    const std::string& source) {
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, source));
  ZEUS_ASSIGN_OR_RETURN(JsonFields f,
                        JsonFields::Of(j, source,
                                       {"format", "version", "num_gpus", "min_stretch_time_s",
                                        "max_power_limit_mw", "measurements"}));
  StatusOr<std::string> format = f.String("format");
  if (!format.ok() || *format != kFrequencyJsonFormat) {
    return f.Error("format", "must be \"" + std::string(kFrequencyJsonFormat) + "\"");
  }
  ZEUS_ASSIGN_OR_RETURN(int64_t version, f.Int("version", 1, 1));
  (void)version;
  FrequencyProfile out;
  ZEUS_ASSIGN_OR_RETURN(int64_t num_gpus, f.Int("num_gpus", 1, 1 << 20));
  out.profile.num_gpus = static_cast<int>(num_gpus);
  ZEUS_ASSIGN_OR_RETURN(std::optional<double> min_time, f.OptionalDouble("min_stretch_time_s", 0));
  out.profile.min_stretch_time_s = min_time.value_or(0.0);
  ZEUS_ASSIGN_OR_RETURN(int64_t max_mw, f.Int("max_power_limit_mw", 1, UINT32_MAX));
  out.max_power_limit_mw = static_cast<uint32_t>(max_mw);
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* measurements, f.Array("measurements"));
  for (size_t i = 0; i < measurements->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields m, f.Element("measurements", i));
    KnobMeasurement k;
    ZEUS_ASSIGN_OR_RETURN(int64_t mhz, m.Int("sm_clock_mhz", 1, UINT32_MAX));
    k.setting = static_cast<uint32_t>(mhz);
    ZEUS_ASSIGN_OR_RETURN(k.energy_j, m.Double("energy_j"));
    ZEUS_ASSIGN_OR_RETURN(k.time_s, m.Double("time_s"));
    ZEUS_ASSIGN_OR_RETURN(k.steps, m.Int("steps"));
    out.profile.measurements.push_back(k);
  }
  Status valid = ValidateFrequencyProfile(out);
  if (!valid.ok()) return valid.WithContext(source);
  return out;
}

StatusOr<FrequencyProfile> LoadFrequencyProfile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return FrequencyProfileFromJson(text, path);
}

Status SaveFrequencyProfile(const std::string& path, const FrequencyProfile& profile) {
  ZEUS_RETURN_IF_ERROR(ValidateFrequencyProfile(profile));
  return WriteFileAtomically(path, FrequencyProfileToJson(profile));
}

StatusOr<uint32_t> SelectOptimumMhz(const FrequencyProfile& profile,
                                    const OptimumSelector& selector) {
  ZEUS_RETURN_IF_ERROR(ValidateSelector(selector));
  ZEUS_RETURN_IF_ERROR(ValidateFrequencyProfile(profile));
  return SelectOptimumSetting(
      profile.profile.measurements,
      MaxPowerW(MwToW(profile.max_power_limit_mw), profile.profile.num_gpus), selector);
}

}  // namespace zeus
