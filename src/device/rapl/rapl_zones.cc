// Discovery of RAPL zones in the powercap tree, counter parsing and
// wraparound correction.

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "zeus/util/strings.h"

#include "src/device/rapl/rapl.h"

namespace zeus::rapl {
namespace {

// The N of "<prefix>N" when the rest of `name` is a non-negative integer.
std::optional<int> NumberAfter(std::string_view name, std::string_view prefix) {
  if (!StartsWith(name, prefix)) return std::nullopt;
  std::string_view rest = name.substr(prefix.size());
  if (rest.empty() ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  StatusOr<int64_t> n = ParseInt64(rest);
  if (!n.ok() || *n > 1'000'000) return std::nullopt;
  return static_cast<int>(*n);
}

// Sorted names of the entries of `dir` (empty when it cannot be listed).
std::vector<std::string> ListDirectory(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::string> ReadName(SysfsReader* reader, const std::string& zone_path) {
  StatusOr<std::string> name = reader->Read(zone_path + "/name");
  if (!name.ok()) return name.status().WithContext("RAPL zone name");
  return std::string(Trim(*name));
}

}  // namespace

StatusOr<std::vector<RaplPackage>> FindRaplPackages(const std::string& powercap_root,
                                                    SysfsReader* reader) {
  std::vector<RaplPackage> packages;
  for (const std::string& entry : ListDirectory(powercap_root)) {
    std::optional<int> zone_number = NumberAfter(entry, "intel-rapl:");
    if (!zone_number) continue;
    RaplPackage package;
    package.package.path = powercap_root + "/" + entry;
    ZEUS_ASSIGN_OR_RETURN(package.package.name, ReadName(reader, package.package.path));
    if (!StartsWith(package.package.name, "package")) continue;  // e.g. "psys".
    package.socket = NumberAfter(package.package.name, "package-").value_or(*zone_number);
    const std::string sub_prefix = entry + ":";
    for (const std::string& sub : ListDirectory(package.package.path)) {
      if (!NumberAfter(sub, sub_prefix)) continue;
      RaplZone zone;
      zone.path = package.package.path + "/" + sub;
      ZEUS_ASSIGN_OR_RETURN(zone.name, ReadName(reader, zone.path));
      if (zone.name == "dram") {
        package.dram = zone;
        break;
      }
    }
    packages.push_back(std::move(package));
  }
  std::sort(packages.begin(), packages.end(),
            [](const RaplPackage& a, const RaplPackage& b) { return a.socket < b.socket; });
  return packages;
}

std::string ChoosePowercapRoot(const std::string& powercap_root, const std::string& container_root,
                               SysfsReader* reader) {
  auto has_package = [&](const std::string& root) {
    StatusOr<std::vector<RaplPackage>> packages = FindRaplPackages(root, reader);
    return packages.ok() && !packages->empty();
  };
  if (container_root.empty() || has_package(powercap_root)) return powercap_root;
  return has_package(container_root) ? container_root : powercap_root;
}

Status RaplPermissionError(const std::string& path) {
  return PermissionDeniedError(
      path +
      ": permission denied: since Linux 5.10, RAPL energy_uj is readable only by root "
      "(CVE-2020-8694, the PLATYPUS power side channel). Run as root, or grant read access, "
      "e.g. `sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj "
      "/sys/class/powercap/intel-rapl:*/intel-rapl:*/energy_uj` (until reboot) or a udev rule");
}

StatusOr<uint64_t> ParseCounter(const std::string& path, const std::string& contents) {
  StatusOr<uint64_t> value = ParseUint64(Trim(contents));
  if (!value.ok()) return value.status().WithContext(path);
  return *value;
}

uint64_t WraparoundCounter::Update(uint64_t raw_uj) {
  if (!last_raw_uj_) {
    total_uj_ = raw_uj;  // The counter's own value is the origin.
  } else {
    if (raw_uj >= *last_raw_uj_) {
      total_uj_ += raw_uj - *last_raw_uj_;
    } else if (*last_raw_uj_ <= max_range_uj_) {
      total_uj_ += (max_range_uj_ - *last_raw_uj_) + raw_uj;
    } else {
      total_uj_ += raw_uj;  // The previous reading exceeded the range: count from 0.
    }
  }
  last_raw_uj_ = raw_uj;
  return total_uj_;
}

}  // namespace zeus::rapl
