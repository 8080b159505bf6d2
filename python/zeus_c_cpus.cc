// The C ABI's RAPL CPU calls (zeus_cpus_*): a handle over the CPU packages
// of a powercap tree, their ids and their energy counters.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/device/devices.h"

#include "python/zeus_c_internal.h"

struct zeus_cpus {
  std::vector<std::unique_ptr<zeus::Cpu>> cpus;
};

namespace {

using zeus::Status;
using zeus::c_api::Guard;
using zeus::c_api::NullHandle;

}  // namespace

extern "C" {

int32_t zeus_cpus_open(const char* options_json, zeus_cpus** out, char* message,
                       size_t message_size) {
  return Guard(
      [&]() -> Status {
        const char* fn = "zeus_cpus_open";
        if (out == nullptr) return zeus::InvalidArgumentError(std::string(fn) + ": out is NULL");
        *out = nullptr;
        ZEUS_ASSIGN_OR_RETURN(nlohmann::json options,
                              zeus::c_api::ParseObject(fn, options_json, {"powercap_root"}));
        std::string root = "/sys/class/powercap";
        if (options.contains("powercap_root")) {
          if (!options["powercap_root"].is_string()) {
            return zeus::InvalidArgumentError(std::string(fn) +
                                              ": powercap_root must be a string, got " +
                                              options["powercap_root"].dump());
          }
          root = options["powercap_root"].get<std::string>();
        }
        auto handle = std::make_unique<zeus_cpus>();
        ZEUS_ASSIGN_OR_RETURN(handle->cpus, zeus::OpenCpus(root));
        *out = handle.release();
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_cpus_count(const zeus_cpus* cpus) {
  return cpus == nullptr ? 0 : static_cast<int32_t>(cpus->cpus.size());
}

int32_t zeus_cpus_info(const zeus_cpus* cpus, int32_t position, int32_t* socket,
                       int32_t* has_dram) {
  if (cpus == nullptr || position < 0 || static_cast<size_t>(position) >= cpus->cpus.size()) {
    return 1;
  }
  *socket = cpus->cpus[position]->index();
  *has_dram = cpus->cpus[position]->HasDram() ? 1 : 0;
  return 0;
}

int32_t zeus_cpus_energy_uj(zeus_cpus* cpus, int32_t position, uint64_t* package_uj,
                            uint64_t* dram_uj, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        const char* fn = "zeus_cpus_energy_uj";
        if (cpus == nullptr) return NullHandle(fn);
        if (position < 0 || static_cast<size_t>(position) >= cpus->cpus.size()) {
          return zeus::InvalidArgumentError(std::string(fn) + ": no CPU at position " +
                                            std::to_string(position) + " of " +
                                            std::to_string(cpus->cpus.size()));
        }
        zeus::Cpu* cpu = cpus->cpus[position].get();
        ZEUS_ASSIGN_OR_RETURN(*package_uj, cpu->PackageEnergyUj());
        if (dram_uj != nullptr && cpu->HasDram()) {
          ZEUS_ASSIGN_OR_RETURN(*dram_uj, cpu->DramEnergyUj());
        }
        return Status::Ok();
      },
      message, message_size);
}

void zeus_cpus_destroy(zeus_cpus* cpus) { delete cpus; }

}  // extern "C"
