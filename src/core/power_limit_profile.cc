#include "zeus/core/power_limit_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "zeus/util/csv.h"
#include "zeus/util/file.h"
#include "zeus/util/json.h"
#include "zeus/util/strings.h"

namespace zeus {
namespace {

constexpr std::string_view kJsonFormat = "zeus-power-limit-profile";
constexpr std::string_view kWindowPrefix = "__GlobalPowerLimitOptimizer_";

}  // namespace

Status ValidateProfile(const PowerLimitProfile& profile) {
  return ValidateKnobProfile(ToKnobProfile(profile),
                             KnobNames{"power-limit profile", "power_limit_mw", "limit"});
}

KnobProfile ToKnobProfile(const PowerLimitProfile& profile) {
  KnobProfile out;
  out.num_gpus = profile.num_gpus;
  out.min_stretch_time_s = profile.min_stretch_time_s;
  for (const PowerLimitMeasurement& m : profile.measurements) {
    out.measurements.push_back({m.power_limit_mw, m.energy_j, m.time_s, m.steps});
  }
  return out;
}

PowerLimitProfile PowerLimitProfileOf(const KnobProfile& profile) {
  PowerLimitProfile out;
  out.num_gpus = profile.num_gpus;
  out.min_stretch_time_s = profile.min_stretch_time_s;
  for (const KnobMeasurement& m : profile.measurements) {
    out.measurements.push_back({m.setting, m.energy_j, m.time_s, m.steps});
  }
  return out;
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
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, source));
  ZEUS_ASSIGN_OR_RETURN(JsonFields f, JsonFields::Of(j, source,
                                                     {"format", "version", "num_gpus",
                                                      "min_stretch_time_s", "measurements"}));
  StatusOr<std::string> format = f.String("format");
  if (!format.ok() || *format != kJsonFormat) {
    return f.Error("format", "must be \"" + std::string(kJsonFormat) + "\"");
  }
  ZEUS_ASSIGN_OR_RETURN(int64_t version, f.Int("version", 1, 1));
  (void)version;
  PowerLimitProfile profile;
  ZEUS_ASSIGN_OR_RETURN(int64_t num_gpus, f.Int("num_gpus", 1, 1 << 20));
  profile.num_gpus = static_cast<int>(num_gpus);
  ZEUS_ASSIGN_OR_RETURN(std::optional<double> min_time, f.OptionalDouble("min_stretch_time_s", 0));
  profile.min_stretch_time_s = min_time.value_or(profile.min_stretch_time_s);
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* measurements, f.Array("measurements"));
  for (size_t i = 0; i < measurements->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields m, f.Element("measurements", i));
    PowerLimitMeasurement out;
    ZEUS_ASSIGN_OR_RETURN(int64_t limit_mw, m.Int("power_limit_mw", 1, UINT32_MAX));
    out.power_limit_mw = static_cast<uint32_t>(limit_mw);
    ZEUS_ASSIGN_OR_RETURN(out.energy_j, m.Double("energy_j"));
    ZEUS_ASSIGN_OR_RETURN(out.time_s, m.Double("time_s"));
    ZEUS_ASSIGN_OR_RETURN(out.steps, m.Int("steps"));
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
  std::optional<size_t> first_other_window;  // Row of the first window we skip.
  for (size_t row = 0; row < table.num_rows(); ++row) {
    const std::string& window = table.Field(row, window_col);
    if (!StartsWith(window, kWindowPrefix)) {
      // The user's own windows (e.g. "train_epoch") share the log: not ours.
      if (!first_other_window) first_other_window = row;
      continue;
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
  if (profile.measurements.empty() && first_other_window) {
    return table.ErrorAt(*first_other_window, window_col,
                         "no '" + std::string(kWindowPrefix) +
                             "<W>' window in the file (other windows such as '" +
                             table.Field(*first_other_window, window_col) + "' are skipped)");
  }
  Status valid = ValidateProfile(profile);
  if (!valid.ok()) return valid.WithContext(source);
  return profile;
}

StatusOr<PowerLimitProfile> LoadProfile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::string_view body = text;
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
  if (StartsWith(body, kUtf8Bom)) body.remove_prefix(kUtf8Bom.size());
  if (std::optional<size_t> at = FindNonTextByte(body)) {
    const size_t offset = *at + (text.size() - body.size());
    return InvalidArgumentError(fmt::format(
        "{}: not a power-limit profile: binary data (byte 0x{:02x} at offset {} is not UTF-8 "
        "text); a profile is JSON text (\"format\": \"{}\") or a CSV log",
        path, static_cast<unsigned char>(text[offset]), offset, kJsonFormat));
  }
  std::string_view trimmed = Trim(body);
  if (EndsWith(path, ".json") || (!trimmed.empty() && trimmed.front() == '{')) {
    return ProfileFromJson(body, path);
  }
  return ProfileFromCsv(text, path);
}

Status CheckProfileWritable(const std::string& path) {
  const std::string context = "profile_path '" + path + "'";
  if (path.empty()) return InvalidArgumentError(context + ": empty path");
  const size_t slash = path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) return InvalidArgumentError(context + ": names a directory, not a file");
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return InvalidArgumentError(context + ": is a directory, not a file");
  }
  if (::stat(dir.c_str(), &info) != 0) {
    const int err = errno;
    const std::string message =
        fmt::format("{}: directory '{}' {}", context, dir,
                    err == ENOENT ? std::string("does not exist")
                                  : "cannot be read: " + std::string(std::strerror(err)));
    return err == ENOENT ? NotFoundError(message) : IoError(message);
  }
  if (!S_ISDIR(info.st_mode)) {
    return FailedPreconditionError(fmt::format("{}: '{}' is not a directory", context, dir));
  }
  // Creating a file is the only complete test: access(2) ignores read-only
  // mounts' subtleties, ACLs and root-squashed network file systems.
  std::string probe = dir + "/." + name + ".zeus-write-check-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;
    const std::string message = fmt::format(
        "{}: cannot create a file in directory '{}': {} (the profile is saved there once "
        "profiling ends)",
        context, dir, std::strerror(err));
    if (err == EACCES || err == EPERM || err == EROFS) return PermissionDeniedError(message);
    return IoError(message);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

Status SaveProfile(const std::string& path, const PowerLimitProfile& profile) {
  ZEUS_RETURN_IF_ERROR(ValidateProfile(profile));
  return WriteFileAtomically(path, ProfileToJson(profile));
}

}  // namespace zeus
