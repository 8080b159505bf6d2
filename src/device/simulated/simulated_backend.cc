#include "src/device/simulated/simulated_backend.h"

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "src/device/cuda_visible_devices.h"
#include "src/device/dry_run_gpu.h"
#include "src/device/simulated/simulated_gpu.h"
#include "src/device/zeusd/zeusd_client.h"
#include "src/device/zeusd/zeusd_gpu.h"

namespace zeus::simulated {
namespace {

StatusOr<int> FakeGpuCount(const GpuOptions& options) {
  std::optional<std::string> value = options.GetEnv(kFakeGpusEnv);
  if (!value || value->empty()) {
    return UnavailableError(std::string(kFakeGpusEnv) + " is not set");
  }
  int count = -1;
  try {
    size_t used = 0;
    count = std::stoi(*value, &used);
    if (used != value->size()) count = -1;
  } catch (const std::exception&) {
    count = -1;
  }
  if (count < 0 || count > kMaxFakeGpus) {
    return InvalidArgumentError(std::string(kFakeGpusEnv) + "='" + *value +
                                "': expected the number of simulated GPUs, 0-" +
                                std::to_string(kMaxFakeGpus));
  }
  return count;
}

// The process's simulated devices, by physical index: created at their first
// open, shared by every later open so that settings persist in the process.
std::shared_ptr<SimulatedGpuState> DeviceState(int physical_index) {
  static std::mutex* const mu = new std::mutex;
  static auto* const states = new std::map<int, std::shared_ptr<SimulatedGpuState>>;
  std::lock_guard<std::mutex> lock(*mu);
  std::shared_ptr<SimulatedGpuState>& state = (*states)[physical_index];
  if (state == nullptr) {
    state = std::make_shared<SimulatedGpuState>(RealClock(), ModelForIndex(physical_index));
  }
  return state;
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenSimulatedGpus(const GpuOptions& options,
                                                              int first_index) {
  ZEUS_ASSIGN_OR_RETURN(int count, FakeGpuCount(options));
  std::vector<std::string> uuids;
  for (int j = 0; j < count; ++j) uuids.push_back(ModelForIndex(j).uuid);
  ZEUS_ASSIGN_OR_RETURN(std::vector<unsigned int> order,
                        ResolveCudaVisibleDevices(options.GetEnv("CUDA_VISIBLE_DEVICES"), uuids));
  std::optional<std::string> zeusd_socket = options.GetEnv(zeusd::kSockPathEnv);
  if (zeusd_socket && zeusd_socket->empty()) zeusd_socket.reset();
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (size_t i = 0; i < order.size(); ++i) {
    const int index = first_index + static_cast<int>(i);
    std::string context = "GPU " + std::to_string(index) + " (simulated";
    if (order[i] != static_cast<unsigned int>(index))
      context += " device " + std::to_string(order[i]);
    context += ")";
    std::unique_ptr<Gpu> gpu =
        std::make_unique<SimulatedGpu>(DeviceState(static_cast<int>(order[i])), index);
    if (zeusd_socket) {
      gpu = std::make_unique<zeusd::ZeusdGpu>(std::move(gpu), *zeusd_socket, order[i], context);
    }
    gpus.push_back(std::make_unique<DryRunGpu>(std::move(gpu), context));
  }
  return gpus;
}

GpuBackendDescription DescribeSimulated(const GpuOptions& options) {
  GpuBackendDescription d;
  d.name = "simulated";
  d.display_name = "Simulated GPUs";
  StatusOr<int> count = FakeGpuCount(options);
  if (!count.ok()) {
    d.status = count.status();
    return d;
  }
  d.loaded = true;
  d.versions = {{kFakeGpusEnv, std::to_string(*count)}};
  return d;
}

}  // namespace

bool Selected(const GpuOptions& options) {
  std::optional<std::string> value = options.GetEnv(kFakeGpusEnv);
  return value && !value->empty();
}

GpuBackend SimulatedBackend() {
  return GpuBackend{"simulated", "Simulated GPUs", &OpenSimulatedGpus, &DescribeSimulated,
                    &FakeGpuCount};
}

}  // namespace zeus::simulated
