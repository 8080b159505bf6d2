// RaplCpu and OpenRaplCpus.

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "zeus/device/devices.h"
#include "zeus/util/env.h"

#include "src/device/rapl/rapl.h"
#include "src/device/zeusd/zeusd_client.h"
#include "src/device/zeusd/zeusd_cpu.h"

namespace zeus::rapl {
namespace {

// One wrapping counter file.
struct Counter {
  std::string path;
  WraparoundCounter counter;
};

StatusOr<Counter> OpenCounter(SysfsReader* reader, const RaplZone& zone) {
  ZEUS_ASSIGN_OR_RETURN(std::string range_text, reader->Read(zone.MaxEnergyRangePath()));
  ZEUS_ASSIGN_OR_RETURN(uint64_t max_range_uj, ParseCounter(zone.MaxEnergyRangePath(), range_text));
  if (max_range_uj == 0) {
    return InvalidArgumentError(zone.MaxEnergyRangePath() + ": expected a positive range, got 0");
  }
  Counter counter{zone.EnergyPath(), WraparoundCounter(max_range_uj)};
  return counter;
}

// Reads the raw counter and returns the corrected energy.
StatusOr<uint64_t> ReadCounter(SysfsReader* reader, Counter& counter) {
  StatusOr<std::string> text = reader->Read(counter.path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kPermissionDenied) {
      return RaplPermissionError(counter.path);
    }
    return text.status();
  }
  ZEUS_ASSIGN_OR_RETURN(uint64_t raw_uj, ParseCounter(counter.path, *text));
  return counter.counter.Update(raw_uj);
}

// Thread-safety: methods lock mu_; the tracker thread reads under the same
// lock.
class RaplCpu final : public Cpu {
 public:
  RaplCpu(int socket, SysfsReader* reader, Counter package, std::optional<Counter> dram,
          std::chrono::nanoseconds poll_period)
      : socket_(socket),
        reader_(reader),
        package_(std::move(package)),
        dram_(std::move(dram)),
        poll_period_(poll_period) {
    tracker_ = std::thread([this] { TrackWraparound(); });
  }

  ~RaplCpu() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    tracker_.join();
  }

  int index() const override { return socket_; }

  StatusOr<uint64_t> PackageEnergyUj() override {
    std::lock_guard<std::mutex> lock(mu_);
    return ReadCounter(reader_, package_);
  }

  StatusOr<uint64_t> DramEnergyUj() override {
    if (!dram_) {
      return NotSupportedError("CPU " + std::to_string(socket_) + ": no RAPL DRAM zone");
    }
    std::lock_guard<std::mutex> lock(mu_);
    return ReadCounter(reader_, *dram_);
  }

  bool HasDram() const override { return dram_.has_value(); }

  // Reads both counters once (as the tracker does), for the first reading.
  Status Prime() {
    std::lock_guard<std::mutex> lock(mu_);
    ZEUS_RETURN_IF_ERROR(ReadCounter(reader_, package_).status());
    if (dram_) ZEUS_RETURN_IF_ERROR(ReadCounter(reader_, *dram_).status());
    return Status::Ok();
  }

 private:
  void TrackWraparound() {
    std::unique_lock<std::mutex> lock(mu_);
    bool logged = false;
    while (!stop_cv_.wait_for(lock, poll_period_, [this] { return stop_; })) {
      Status status = ReadCounter(reader_, package_).status();
      if (status.ok() && dram_) status = ReadCounter(reader_, *dram_).status();
      if (!status.ok() && !logged) {
        spdlog::warn("RAPL tracker of CPU {}: {}", socket_, status.ToString());
        logged = true;
      }
    }
  }

  const int socket_;
  SysfsReader* const reader_;
  std::mutex mu_;
  Counter package_;              // Guarded by mu_.
  std::optional<Counter> dram_;  // Guarded by mu_ (presence is const).
  const std::chrono::nanoseconds poll_period_;
  bool stop_ = false;  // Guarded by mu_.
  std::condition_variable stop_cv_;
  std::thread tracker_;
};

std::chrono::nanoseconds TrackerPeriod(const RaplOptions& options, uint64_t min_range_uj) {
  if (options.poll_period.count() > 0) return options.poll_period;
  const double max_power_w = options.max_power_w > 0 ? options.max_power_w : 1000.0;
  // 1 W = 1e6 uJ/s; read twice per fastest possible wrap.
  const double wrap_s = static_cast<double>(min_range_uj) / (max_power_w * 1e6);
  const double period_s = std::max(wrap_s / 2.0, 1e-3);
  return std::chrono::nanoseconds(static_cast<int64_t>(period_s * 1e9));
}

}  // namespace

StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenRaplCpus(const RaplOptions& options) {
  SysfsReader* reader = options.reader != nullptr ? options.reader : RealSysfsReader();
  const std::string root =
      ChoosePowercapRoot(options.powercap_root, options.container_powercap_root, reader);
  ZEUS_ASSIGN_OR_RETURN(std::vector<RaplPackage> packages, FindRaplPackages(root, reader));
  std::vector<std::unique_ptr<Cpu>> cpus;
  for (const RaplPackage& package : packages) {
    ZEUS_ASSIGN_OR_RETURN(Counter package_counter, OpenCounter(reader, package.package));
    std::optional<Counter> dram_counter;
    uint64_t min_range_uj = package_counter.counter.max_range_uj();
    if (package.dram) {
      ZEUS_ASSIGN_OR_RETURN(dram_counter, OpenCounter(reader, *package.dram));
      min_range_uj = std::min(min_range_uj, dram_counter->counter.max_range_uj());
    }
    auto cpu =
        std::make_unique<RaplCpu>(package.socket, reader, std::move(package_counter),
                                  std::move(dram_counter), TrackerPeriod(options, min_range_uj));
    ZEUS_RETURN_IF_ERROR(cpu->Prime());
    cpus.push_back(std::move(cpu));
  }
  return cpus;
}

}  // namespace zeus::rapl

namespace zeus {

StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenCpus(const std::string& powercap_root) {
  // ZEUSD_SOCK_PATH: the Zeus daemon reads the root-only counters for us.
  if (std::optional<std::string> socket = GetEnv(zeusd::kSockPathEnv); socket && !socket->empty()) {
    return zeusd::OpenZeusdCpus(*socket);
  }
  rapl::RaplOptions options;
  options.powercap_root = powercap_root;
  if (powercap_root == kDefaultPowercapRoot)
    options.container_powercap_root = kContainerPowercapRoot;
  return rapl::OpenRaplCpus(options);
}

}  // namespace zeus
