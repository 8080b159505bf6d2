#include "src/device/zeusd/zeusd_cpu.h"

#include <nlohmann/json.hpp>

#include "src/device/zeusd/zeusd_client.h"

namespace zeus::zeusd {
namespace {

class ZeusdCpu final : public Cpu {
 public:
  ZeusdCpu(std::string socket_path, int index, bool has_dram)
      : socket_path_(std::move(socket_path)), index_(index), has_dram_(has_dram) {}

  int index() const override { return index_; }
  StatusOr<uint64_t> PackageEnergyUj() override { return Read(false); }
  StatusOr<uint64_t> DramEnergyUj() override {
    if (!has_dram_) {
      return NotSupportedError("CPU " + std::to_string(index_) + ": no DRAM zone (zeusd)");
    }
    return Read(true);
  }
  bool HasDram() const override { return has_dram_; }

 private:
  StatusOr<uint64_t> Read(bool dram) {
    const std::string target = "/cpu/get_cumulative_energy?cpu_ids=" + std::to_string(index_) +
                               "&cpu=" + (dram ? "false" : "true") +
                               "&dram=" + (dram ? "true" : "false");
    ZEUS_ASSIGN_OR_RETURN(std::string body, Request(socket_path_, "GET", target));
    const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
    const char* field = dram ? "dram_energy_uj" : "cpu_energy_uj";
    const std::string key = std::to_string(index_);
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_object() ||
        !doc[key].contains(field) || !doc[key][field].is_number_unsigned()) {
      return UnavailableError("zeusd at " + socket_path_ + ": " + target + ": unexpected answer " +
                              body.substr(0, 128));
    }
    return doc[key][field].get<uint64_t>();
  }

  const std::string socket_path_;
  const int index_;
  const bool has_dram_;
};

}  // namespace

StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenZeusdCpus(const std::string& socket_path) {
  ZEUS_ASSIGN_OR_RETURN(std::string body, Request(socket_path, "GET", "/discover"));
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("cpu_ids") || !doc["cpu_ids"].is_array()) {
    return UnavailableError("zeusd at " + socket_path + ": /discover: no cpu_ids in " +
                            body.substr(0, 128));
  }
  const nlohmann::json& ids = doc["cpu_ids"];
  const nlohmann::json dram = doc.value("dram_available", nlohmann::json::array());
  std::vector<std::unique_ptr<Cpu>> cpus;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_unsigned()) continue;
    const bool has_dram = i < dram.size() && dram[i].is_boolean() && dram[i].get<bool>();
    cpus.push_back(std::make_unique<ZeusdCpu>(socket_path, ids[i].get<int>(), has_dram));
  }
  return cpus;
}

}  // namespace zeus::zeusd
