#include <string>
#include <string_view>

#include "zeus/device/gpu.h"

namespace zeus {

const char* PowerDomainName(PowerDomain domain) {
  switch (domain) {
    case PowerDomain::kDeviceInstant:
      return "device_instant";
    case PowerDomain::kDeviceAverage:
      return "device_average";
    case PowerDomain::kMemoryAverage:
      return "memory_average";
  }
  return "unknown";
}

StatusOr<PowerDomain> ParsePowerDomain(std::string_view name) {
  for (PowerDomain domain : kAllPowerDomains) {
    if (name == PowerDomainName(domain)) return domain;
  }
  return InvalidArgumentError("unknown power domain '" + std::string(name) +
                              "' (expected device_instant, device_average or memory_average)");
}

}  // namespace zeus
