#include "zeus/core/power_limit_profile.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "zeus/util/csv.h"
#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus {
namespace {

constexpr std::string_view kJsonFormat = "zeus-power-limit-profile";
constexpr std::string_view kWindowPrefix = "__GlobalPowerLimitOptimizer_";

std::string Describe(const PowerLimitMeasurement& m, size_t i) {
  return "measurement " + std::to_string(i) + " (power_limit_mw " +
         std::to_string(m.power_limit_mw) + ")";
}

}  // namespace

Status ValidateProfile(const PowerLimitProfile& profile) {
  if (profile.measurements.empty()) {
    return InvalidArgumentError("power-limit profile: no measurements");
  }
  if (profile.num_gpus < 1) {
    return InvalidArgumentError("power-limit profile: num_gpus must be >= 1, got " +
                                std::to_string(profile.num_gpus));
  }
  for (size_t i = 0; i < profile.measurements.size(); ++i) {
    const PowerLimitMeasurement& m = profile.measurements[i];
    std::string what = "power-limit profile: " + Describe(m, i);
    if (m.power_limit_mw == 0) return InvalidArgumentError(what + ": power limit must be > 0");
    if (!std::isfinite(m.energy_j) || m.energy_j < 0) {
      return InvalidArgumentError(what + ": energy_j must be finite and >= 0, got " +
                                  std::to_string(m.energy_j));
    }
    if (!std::isfinite(m.time_s) || m.time_s <= 0) {
      return InvalidArgumentError(what + ": time_s must be finite and > 0, got " +
                                  std::to_string(m.time_s));
    }
    if (m.steps < 1) {
      return InvalidArgumentError(what + ": steps must be >= 1, got " + std::to_string(m.steps));
    }
    for (size_t j = 0; j < i; ++j) {
      if (profile.measurements[j].power_limit_mw == m.power_limit_mw) {
        return InvalidArgumentError(what + ": same limit as measurement " + std::to_string(j));
      }
    }
  }
  return Status::Ok();
}

std::string ProfileToJson(const PowerLimitProfile& profile) {
  std::vector<PowerLimitMeasurement> sorted = profile.measurements;
  std::sort(sorted.begin(), sorted.end(),
            [](const PowerLimitMeasurement& a, const PowerLimitMeasurement& b) {
              return a.power_limit_mw > b.power_limit_mw;
            });
  nlohmann::json measurements = nlohmann::json::array();
  for (const PowerLimitMeasurement& m : sorted) {
    measurements.push_back({{"power_limit_mw", m.power_limit_mw},
                            {"energy_j", m.energy_j},
                            {"time_s", m.time_s},
                            {"steps", m.steps}});
  }
  nlohmann::json j = {{"format", kJsonFormat},
                      {"version", 1},
                      {"num_gpus", profile.num_gpus},
                      {"min_stretch_time_s", profile.min_stretch_time_s},
                      {"measurements", std::move(measurements)}};
  return j.dump(2) + "\n";
}

StatusOr<PowerLimitProfile> ProfileFromJson(std::string_view json, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(source + ": not valid JSON");
  auto error = [&source](const std::string& detail) {
    return InvalidArgumentError(source + ": " + detail);
  };
  if (!j.is_object()) return error("expected a JSON object");
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kJsonFormat) {
    return error("field 'format' must be \"" + std::string(kJsonFormat) + "\"");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return error("field 'version' must be 1");
  }
  PowerLimitProfile profile;
  auto num_gpus = j.find("num_gpus");
  if (num_gpus == j.end() || !num_gpus->is_number_integer()) {
    return error("field 'num_gpus' must be an integer");
  }
  profile.num_gpus = num_gpus->get<int>();
  auto min_time = j.find("min_stretch_time_s");
  if (min_time != j.end()) {
    if (!min_time->is_number()) return error("field 'min_stretch_time_s' must be a number");
    profile.min_stretch_time_s = min_time->get<double>();
  }
  auto measurements = j.find("measurements");
  if (measurements == j.end() || !measurements->is_array()) {
    return error("field 'measurements' must be an array");
  }
  for (size_t i = 0; i < measurements->size(); ++i) {
    const nlohmann::json& m = (*measurements)[i];
    std::string where = "measurements[" + std::to_string(i) + "]";
    if (!m.is_object()) return error(where + ": expected an object");
    PowerLimitMeasurement out;
    auto limit = m.find("power_limit_mw");
    if (limit == m.end() || !limit->is_number_unsigned() || limit->get<uint64_t>() > UINT32_MAX) {
      return error(where + ".power_limit_mw: expected an unsigned 32-bit integer");
    }
    out.power_limit_mw = limit->get<uint32_t>();
    auto energy = m.find("energy_j");
    if (energy == m.end() || !energy->is_number()) {
      return error(where + ".energy_j: expected a number");
    }
    out.energy_j = energy->get<double>();
    auto time = m.find("time_s");
    if (time == m.end() || !time->is_number()) return error(where + ".time_s: expected a number");
    out.time_s = time->get<double>();
    auto steps = m.find("steps");
    if (steps == m.end() || !steps->is_number_integer()) {
      return error(where + ".steps: expected an integer");
    }
    out.steps = steps->get<int64_t>();
    profile.measurements.push_back(out);
  }
  Status valid = ValidateProfile(profile);
  if (!valid.ok()) return valid.WithContext(source);
  return profile;
}

StatusOr<PowerLimitProfile> ProfileFromCsv(std::string_view csv, const std::string& source) {
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, CsvTable::Parse(csv, source));
  ZEUS_ASSIGN_OR_RETURN(size_t window_col, table.ColumnIndex("window_name"));
  ZEUS_ASSIGN_OR_RETURN(size_t time_col, table.ColumnIndex("elapsed_time"));
  std::vector<size_t> energy_cols;
  for (size_t c = 0; c < table.header().size(); ++c) {
    const std::string& name = table.header()[c];
    if (StartsWith(name, "gpu") && EndsWith(name, "_energy")) energy_cols.push_back(c);
  }
  if (energy_cols.empty()) {
    return InvalidArgumentError(
        source + ":1: no gpu<i>_energy column (columns: " + Join(table.header(), ",") + ")");
  }
  PowerLimitProfile profile;
  profile.num_gpus = static_cast<int>(energy_cols.size());
  for (size_t row = 0; row < table.num_rows(); ++row) {
    const std::string& window = table.Field(row, window_col);
    if (!StartsWith(window, kWindowPrefix)) {
      return table.ErrorAt(
          row, window_col,
          "expected '" + std::string(kWindowPrefix) + "<W>', got '" + window + "'");
    }
    StatusOr<int64_t> watts = ParseInt64(window.substr(kWindowPrefix.size()));
    if (!watts.ok() || *watts <= 0 || *watts > 4'000'000) {
      return table.ErrorAt(row, window_col,
                           "expected a positive whole number of watts after '" +
                               std::string(kWindowPrefix) + "', got '" + window + "'");
    }
    PowerLimitMeasurement m;
    m.power_limit_mw = static_cast<uint32_t>(*watts * 1000);
    ZEUS_ASSIGN_OR_RETURN(m.time_s, table.Double(row, time_col));
    if (!std::isfinite(m.time_s) || m.time_s <= 0) {
      return table.ErrorAt(row, time_col, "expected a positive duration in s");
    }
    for (size_t c : energy_cols) {
      ZEUS_ASSIGN_OR_RETURN(double energy_j, table.Double(row, c));
      if (!std::isfinite(energy_j) || energy_j < 0) {
        return table.ErrorAt(row, c, "expected a non-negative energy in J");
      }
      m.energy_j += energy_j;
    }
    for (const PowerLimitMeasurement& seen : profile.measurements) {
      if (seen.power_limit_mw == m.power_limit_mw) {
        return table.ErrorAt(row, window_col,
                             "power limit " + std::to_string(*watts) + " W appears twice");
      }
    }
    profile.measurements.push_back(m);
  }
  Status valid = ValidateProfile(profile);
  if (!valid.ok()) return valid.WithContext(source);
  return profile;
}

StatusOr<PowerLimitProfile> LoadProfile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::string_view trimmed = Trim(text);
  if (!trimmed.empty() && trimmed.front() == '{') return ProfileFromJson(text, path);
  return ProfileFromCsv(text, path);
}

Status SaveProfile(const std::string& path, const PowerLimitProfile& profile) {
  ZEUS_RETURN_IF_ERROR(ValidateProfile(profile));
  return WriteFileAtomically(path, ProfileToJson(profile));
}

}  // namespace zeus
