#include "src/device/zeusd/zeusd_cpu.h"

#include <optional>
#include <utility>

#include "zeus/util/json.h"

#include "src/device/zeusd/zeusd_api.h"
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
    const std::string target = CpuEnergyTarget(index_, dram);
    ZEUS_ASSIGN_OR_RETURN(std::string body, Request(socket_path_, "GET", target));
    const std::string source = "zeusd at " + socket_path_ + ": " + target;
    // {"<index>": {"cpu_energy_uj": n | null, "dram_energy_uj": n | null}}
    StatusOr<uint64_t> energy_uj = [&]() -> StatusOr<uint64_t> {
      ZEUS_ASSIGN_OR_RETURN(auto doc, ParseJson(body, source, JsonLimits{1 << 20, 4}));
      ZEUS_ASSIGN_OR_RETURN(JsonFields top, JsonFields::Of(doc, source));
      ZEUS_ASSIGN_OR_RETURN(JsonFields cpu, top.Object(std::to_string(index_)));
      const char* field = dram ? kDramEnergyUj : kCpuEnergyUj;
      ZEUS_ASSIGN_OR_RETURN(std::optional<uint64_t> value, cpu.OptionalUint64(field));
      if (!value) return cpu.Error(field, "required");
      return *value;
    }();
    if (!energy_uj.ok())
      return UnavailableError("unexpected answer: " + energy_uj.status().message());
    return *energy_uj;
  }

  const std::string socket_path_;
  const int index_;
  const bool has_dram_;
};

}  // namespace

StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenZeusdCpus(const std::string& socket_path) {
  ZEUS_ASSIGN_OR_RETURN(std::string body, Request(socket_path, "GET", kDiscoverPath));
  const std::string source = "zeusd at " + socket_path + ": " + kDiscoverPath;
  // {"cpu_ids": [0, ...], "dram_available": [true, ...], ...}; other fields
  // (the original's and ours) are read by others.
  StatusOr<std::vector<std::unique_ptr<Cpu>>> cpus =
      [&]() -> StatusOr<std::vector<std::unique_ptr<Cpu>>> {
    ZEUS_ASSIGN_OR_RETURN(auto doc, ParseJson(body, source, JsonLimits{1 << 20, 8}));
    ZEUS_ASSIGN_OR_RETURN(JsonFields top, JsonFields::Of(doc, source));
    ZEUS_ASSIGN_OR_RETURN(std::vector<int64_t> ids, top.IntArray("cpu_ids", 0, 1 << 20));
    std::vector<bool> dram;
    if (top.Has("dram_available")) {
      ZEUS_ASSIGN_OR_RETURN(dram, top.BoolArray("dram_available"));
    }
    std::vector<std::unique_ptr<Cpu>> out;
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool has_dram = i < dram.size() && dram[i];
      out.push_back(std::make_unique<ZeusdCpu>(socket_path, static_cast<int>(ids[i]), has_dram));
    }
    return out;
  }();
  if (!cpus.ok()) return UnavailableError("unexpected answer: " + cpus.status().message());
  return cpus;
}

}  // namespace zeus::zeusd
