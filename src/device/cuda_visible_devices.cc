#include "src/device/cuda_visible_devices.h"

#include <algorithm>
#include <cctype>

#include "zeus/util/strings.h"

namespace zeus {
namespace {

Status EntryError(std::string_view entry, size_t position, std::string_view detail) {
  return InvalidArgumentError("CUDA_VISIBLE_DEVICES: entry " + std::to_string(position) + " '" +
                              std::string(entry) + "': " + std::string(detail));
}

bool IsHexUuidBody(std::string_view body) {
  if (body.empty()) return false;
  return std::all_of(body.begin(), body.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
  });
}

}  // namespace

StatusOr<std::vector<VisibleDeviceEntry>> ParseCudaVisibleDevices(std::string_view value) {
  std::vector<VisibleDeviceEntry> entries;
  if (Trim(value).empty()) return entries;
  std::vector<std::string> parts = Split(value, ',');
  for (size_t i = 0; i < parts.size(); ++i) {
    const size_t position = i + 1;
    std::string_view entry = Trim(parts[i]);
    if (entry.empty()) return EntryError(entry, position, "empty entry");
    std::string lower = ToLower(entry);
    if (StartsWith(lower, "mig-")) {
      return EntryError(entry, position,
                        "MIG devices are not supported (NVML reports energy and power limits "
                        "per physical GPU); list the parent GPU instead");
    }
    VisibleDeviceEntry parsed;
    if (StartsWith(lower, "gpu-")) {
      if (!IsHexUuidBody(std::string_view(lower).substr(4))) {
        return EntryError(entry, position, "expected 'GPU-' followed by hexadecimal UUID digits");
      }
      parsed.uuid_prefix = lower;
    } else {
      StatusOr<int64_t> number = ParseInt64(entry);
      if (!number.ok()) {
        return EntryError(entry, position, "expected a GPU index or a 'GPU-<uuid>' prefix");
      }
      if (*number < 0) break;  // CUDA stops at the first negative index.
      if (*number > 0xFFFF) return EntryError(entry, position, "GPU index out of range");
      parsed.nvml_index = static_cast<unsigned int>(*number);
    }
    for (const VisibleDeviceEntry& seen : entries) {
      if (seen.nvml_index == parsed.nvml_index && seen.uuid_prefix == parsed.uuid_prefix) {
        return EntryError(entry, position, "listed twice");
      }
    }
    entries.push_back(std::move(parsed));
  }
  return entries;
}

StatusOr<std::vector<unsigned int>> ResolveCudaVisibleDevices(
    const std::optional<std::string>& value, const std::vector<std::string>& nvml_uuids) {
  std::vector<unsigned int> result;
  if (!value) {
    for (unsigned int j = 0; j < nvml_uuids.size(); ++j) result.push_back(j);
    return result;
  }
  ZEUS_ASSIGN_OR_RETURN(std::vector<VisibleDeviceEntry> entries, ParseCudaVisibleDevices(*value));
  for (size_t i = 0; i < entries.size(); ++i) {
    const VisibleDeviceEntry& entry = entries[i];
    const size_t position = i + 1;
    unsigned int nvml_index = 0;
    if (entry.nvml_index) {
      nvml_index = *entry.nvml_index;
      if (nvml_index >= nvml_uuids.size()) {
        return EntryError(std::to_string(nvml_index), position,
                          "no such GPU: NVML sees " + std::to_string(nvml_uuids.size()) +
                              " GPU(s), indices 0.." +
                              std::to_string(static_cast<int>(nvml_uuids.size()) - 1));
      }
    } else {
      std::vector<unsigned int> matches;
      for (unsigned int j = 0; j < nvml_uuids.size(); ++j) {
        if (StartsWith(ToLower(nvml_uuids[j]), entry.uuid_prefix)) matches.push_back(j);
      }
      if (matches.empty()) {
        return EntryError(entry.uuid_prefix, position, "no GPU has a UUID starting with it");
      }
      if (matches.size() > 1) {
        return EntryError(
            entry.uuid_prefix, position,
            "ambiguous: " + std::to_string(matches.size()) + " GPUs have a UUID starting with it");
      }
      nvml_index = matches[0];
    }
    if (std::find(result.begin(), result.end(), nvml_index) != result.end()) {
      return EntryError(entry.nvml_index ? std::to_string(nvml_index) : entry.uuid_prefix, position,
                        "names NVML GPU " + std::to_string(nvml_index) + " again");
    }
    result.push_back(nvml_index);
  }
  return result;
}

}  // namespace zeus
