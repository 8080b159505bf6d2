// The C ABI of the replaying monitor (zeus_monitor_create_replay): an
// EnergyMonitor whose windows take their time and energies from a callback.

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "python/zeus_c_internal.h"

namespace {

using zeus::Status;
using zeus::StatusOr;

// Windows are names only; End asks the callback for the measurement.
// Thread-safety: the set of open windows is guarded; the callback runs
// outside the lock.
class ReplayEnergyMonitor final : public zeus::EnergyMonitor {
 public:
  ReplayEnergyMonitor(size_t num_gpus, zeus_replay_end_fn end, void* user)
      : num_gpus_(num_gpus), end_(end), user_(user) {}

  Status Begin(std::string_view name) override {
    if (name.empty()) return zeus::InvalidArgumentError("replay monitor: empty window name");
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_.insert(std::string(name)).second) {
      return zeus::AlreadyExistsError("replay monitor: window '" + std::string(name) +
                                      "' is already open");
    }
    return Status::Ok();
  }

  StatusOr<zeus::Measurement> End(std::string_view name) override {
    ZEUS_RETURN_IF_ERROR(Cancel(name));
    zeus::Measurement m;
    m.name = std::string(name);
    m.gpu_energy_j.assign(num_gpus_, 0.0);
    m.gpu_energy_source.assign(num_gpus_, zeus::GpuEnergySource::kCounter);
    m.gpu_below_counter_resolution.assign(num_gpus_, false);
    if (end_(m.name.c_str(), &m.time_s, m.gpu_energy_j.data(), num_gpus_, user_) != 0) {
      return zeus::AbortedError("replay monitor: no measurement for window '" + m.name + "'");
    }
    return m;
  }

  Status Cancel(std::string_view name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_.erase(std::string(name)) == 0) {
      return zeus::NotFoundError("replay monitor: window '" + std::string(name) + "' is not open");
    }
    return Status::Ok();
  }

  bool IsOpen(std::string_view name) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return open_.count(std::string(name)) > 0;
  }

  std::vector<bool> GpusIntegratingPower() const override {
    return std::vector<bool>(num_gpus_, false);
  }

  Status SampleNow() override { return Status::Ok(); }

 private:
  const size_t num_gpus_;
  const zeus_replay_end_fn end_;
  void* const user_;
  mutable std::mutex mu_;
  std::set<std::string> open_;
};

Status CreateReplay(const char* options_json, zeus_replay_end_fn end, void* user,
                    zeus_monitor** out) {
  constexpr const char* kFn = "zeus_monitor_create_replay";
  if (out == nullptr) return zeus::InvalidArgumentError(std::string(kFn) + ": out is NULL");
  *out = nullptr;
  if (end == nullptr) return zeus::InvalidArgumentError(std::string(kFn) + ": end is NULL");
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                        zeus::c_api::ParseObject(kFn, options_json, {"gpu_indices"}));
  auto state = std::make_shared<zeus::c_api::MonitorState>();
  ZEUS_ASSIGN_OR_RETURN(state->gpus,
                        zeus::c_api::SelectGpus(kFn, j.value("gpu_indices", nlohmann::json())));
  state->monitor = std::make_unique<ReplayEnergyMonitor>(state->gpus.picked.size(), end, user);
  *out = new zeus_monitor{std::move(state)};
  return Status::Ok();
}

}  // namespace

extern "C" {

int32_t zeus_monitor_create_replay(const char* options_json, zeus_replay_end_fn end, void* user,
                                   zeus_monitor** out, char* message, size_t message_size) {
  return zeus::c_api::Guard([&] { return CreateReplay(options_json, end, user, out); }, message,
                            message_size);
}

}  // extern "C"
