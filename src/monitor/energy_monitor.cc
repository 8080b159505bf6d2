#include "zeus/monitor/energy_monitor.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "zeus/monitor/power_monitor.h"
#include "zeus/monitor/reporter.h"
#include "zeus/util/units.h"

#include "src/monitor/counter_reader_pool.h"
#include "src/monitor/fork_guard.h"

namespace zeus {

double Measurement::TotalGpuEnergyJ() const {
  double total_j = 0.0;
  for (double j : gpu_energy_j) total_j += j;
  return total_j;
}

bool Measurement::AnyBelowCounterResolution() const {
  return std::any_of(gpu_below_counter_resolution.begin(), gpu_below_counter_resolution.end(),
                     [](bool b) { return b; });
}

StatusOr<WindowBegin> EnergyMonitor::BeginOf(std::string_view name) const {
  return NotSupportedError(
      fmt::format("energy monitor: window '{}': this monitor keeps no begin readings", name));
}

namespace {

// The device readings of one window boundary.
struct Boundary {
  std::chrono::nanoseconds time{0};
  double wall_time_s = 0.0;  // Clock::WallTimeS() at `time`.
  // Exact mode, GPUs with a counter: the counter value.
  std::vector<uint64_t> gpu_counter_mj;
  // Power-integrated GPUs, and every GPU in low-overhead mode: the
  // (estimated) cumulative energy at `time`, in J.
  std::vector<double> gpu_cumulative_j;
  // Exact mode with approximate_short_windows: instant power at `time`.
  std::vector<uint32_t> gpu_power_mw;
  std::vector<uint64_t> cpu_uj;
  std::vector<uint64_t> dram_uj;
};

// Low-overhead mode: the last counter value of one GPU and our estimate of
// the time at which the counter held it.
struct Anchor {
  bool valid = false;
  // True once the counter was seen to move between two reads, which times
  // the anchor to within a poll period (before that, within an update period).
  bool moved = false;
  std::chrono::nanoseconds time{0};
  uint64_t energy_mj = 0;
  std::chrono::nanoseconds last_read_time{0};
  uint64_t last_read_mj = 0;
  // Error of the last read; OK after a good read.
  Status error;
};

std::string WindowContext(std::string_view name, const char* what) {
  return fmt::format("energy monitor: window '{}' {}", name, what);
}

class EnergyMonitorImpl final : public EnergyMonitor {
 public:
  EnergyMonitorImpl(std::vector<Gpu*> gpus, std::vector<bool> has_counter, std::vector<Cpu*> cpus,
                    Clock* clock, EnergyMonitorOptions options)
      : gpus_(std::move(gpus)),
        has_counter_(std::move(has_counter)),
        cpus_(std::move(cpus)),
        clock_(clock),
        options_(std::move(options)),
        low_overhead_(options_.mode == EnergyMonitorMode::kLowOverhead),
        power_index_(gpus_.size(), -1),
        anchors_(gpus_.size()) {}

  ~EnergyMonitorImpl() override {
    if (getpid() != owner_pid_) {
      // A forked child: the pollers stayed in the parent (neither joinable
      // nor detachable here); their handles are left behind on purpose.
      new std::vector<std::thread>(std::move(pollers_));  // Intentionally leaked.
      // Destroying a condition variable the parent's pollers wait on would
      // block forever (glibc waits for its waiters): leaked too.
      static_cast<void>(poll_cv_.release());
      return;
    }
    {
      std::lock_guard<std::mutex> lock(poll_mu_);
      stop_polling_ = true;
    }
    poll_cv_->notify_all();
    for (std::thread& t : pollers_) t.join();
  }

  // Second construction phase; may fail.
  Status Init() {
    std::vector<Gpu*> sampled;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (low_overhead_ || !has_counter_[i]) {
        power_index_[i] = static_cast<int>(sampled.size());
        sampled.push_back(gpus_[i]);
      }
    }
    if (!sampled.empty()) {
      PowerMonitorOptions power_options;
      power_options.period = options_.power_sample_period;
      // Instant power where every sampled GPU has it (it follows bursts; the
      // ~1 s average lags them), else the average.
      for (Gpu* gpu : sampled) {
        StatusOr<uint32_t> instant_mw = gpu->DomainPowerMw(PowerDomain::kDeviceInstant);
        if (!instant_mw.ok() && instant_mw.status().code() == StatusCode::kNotSupported) {
          power_options.domains = {PowerDomain::kDeviceAverage};
          break;
        }
      }
      ZEUS_ASSIGN_OR_RETURN(power_monitor_,
                            PowerMonitor::Create(sampled, clock_, std::move(power_options)));
      ZEUS_RETURN_IF_ERROR(power_monitor_->SampleOnce().WithContext("energy monitor"));
    }
    created_time_ = clock_->Now();
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (has_counter_[i]) counter_gpus_.push_back(i);
    }
    if (low_overhead_) {
      for (size_t i : counter_gpus_) {
        ZEUS_RETURN_IF_ERROR(PollCounter(i).WithContext("energy monitor"));
      }
      if (options_.counter_poll_period.count() > 0) {
        for (size_t i : counter_gpus_) pollers_.emplace_back([this, i] { PollLoop(i); });
        WaitForCountersToMove();
      }
    } else if (counter_gpus_.size() > 1) {
      std::vector<Gpu*> counter_gpus;
      for (size_t i : counter_gpus_) counter_gpus.push_back(gpus_[i]);
      pool_ = std::make_unique<CounterReaderPool>(std::move(counter_gpus));
    }
    return Status::Ok();
  }

  Status Begin(std::string_view name) override {
    if (name.empty()) return InvalidArgumentError("energy monitor: empty window name");
    std::lock_guard<std::mutex> boundary_lock(boundary_mu_);
    if (IsOpen(name)) {
      return AlreadyExistsError(fmt::format("energy monitor: window '{}' is already open", name));
    }
    ZEUS_ASSIGN_OR_RETURN(Boundary begin, TakeBoundary(WindowContext(name, "begin")));
    std::lock_guard<std::mutex> lock(mu_);
    windows_.emplace(std::string(name), std::move(begin));
    return Status::Ok();
  }

  StatusOr<Measurement> End(std::string_view name) override {
    std::lock_guard<std::mutex> boundary_lock(boundary_mu_);
    if (!IsOpen(name)) {
      return NotFoundError(fmt::format("energy monitor: no open window '{}'", name));
    }
    StatusOr<Boundary> end = TakeBoundary(WindowContext(name, "end"));
    Boundary begin;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = windows_.find(name);
      if (it == windows_.end()) {  // Cancelled by another thread meanwhile.
        return NotFoundError(fmt::format("energy monitor: window '{}' was cancelled", name));
      }
      begin = std::move(it->second);
      windows_.erase(it);
    }
    if (!end.ok()) return end.status();
    ZEUS_ASSIGN_OR_RETURN(Measurement m, Measure(name, begin, *end));
    if (options_.window_reporter != nullptr) {
      std::lock_guard<std::mutex> lock(reporter_mu_);
      ZEUS_RETURN_IF_ERROR(
          options_.window_reporter->ReportWindow(m).WithContext(WindowContext(name, "end")));
    }
    return m;
  }

  Status Cancel(std::string_view name) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = windows_.find(name);
    if (it == windows_.end()) {
      return NotFoundError(
          fmt::format("energy monitor: cannot cancel '{}': no such open window", name));
    }
    windows_.erase(it);
    return Status::Ok();
  }

  StatusOr<WindowBegin> BeginOf(std::string_view name) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = windows_.find(name);
    if (it == windows_.end()) {
      return NotFoundError(fmt::format("energy monitor: no open window '{}'", name));
    }
    const Boundary& b = it->second;
    WindowBegin w;
    w.start_time_s = ToSeconds(b.time);
    w.start_wall_time_s = b.wall_time_s;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      w.gpu_energy_j.push_back(has_counter_[i] && !low_overhead_
                                   ? MjToJ(static_cast<double>(b.gpu_counter_mj[i]))
                                   : b.gpu_cumulative_j[i]);
    }
    for (size_t s = 0; s < cpus_.size(); ++s) {
      w.cpu_energy_j.push_back(UjToJ(static_cast<double>(b.cpu_uj[s])));
      w.dram_energy_j.push_back(UjToJ(static_cast<double>(b.dram_uj[s])));
    }
    return w;
  }

  bool IsOpen(std::string_view name) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return windows_.find(name) != windows_.end();
  }

  std::vector<bool> GpusIntegratingPower() const override {
    std::vector<bool> out(gpus_.size());
    for (size_t i = 0; i < gpus_.size(); ++i) out[i] = !has_counter_[i];
    return out;
  }

  Status SampleNow() override {
    Status first_error;
    if (power_monitor_ != nullptr) first_error = power_monitor_->SampleOnce();
    if (low_overhead_) {
      for (size_t i : counter_gpus_) {
        Status s = PollCounter(i);
        if (first_error.ok()) first_error = s;
      }
    }
    return first_error.WithContext("energy monitor");
  }

 private:
  // Reads one GPU's counter and updates its anchor (low-overhead mode).
  Status PollCounter(size_t gpu) {
    std::chrono::nanoseconds start = clock_->Now();
    StatusOr<uint64_t> energy_mj = gpus_[gpu]->TotalEnergyMj();
    std::chrono::nanoseconds end = clock_->Now();
    std::lock_guard<std::mutex> lock(anchor_mu_);
    Anchor& a = anchors_[gpu];
    if (!energy_mj.ok()) {
      a.error = energy_mj.status();  // Boundaries add the window and GPU.
      return a.error.WithContext(fmt::format("GPU {}", gpu));
    }
    a.error = Status::Ok();
    std::chrono::nanoseconds read_time = start + (end - start) / 2;
    const std::chrono::nanoseconds period = gpus_[gpu]->EnergyCounterUpdatePeriod();
    if (!a.valid || *energy_mj != a.last_read_mj) {
      // The counter moved since the previous read: with a periodic counter
      // the update happened in (previous read, this read], so take the
      // middle of that span; a continuous counter holds the read time.
      std::chrono::nanoseconds earliest = read_time - period;
      if (a.valid) earliest = std::max(earliest, a.last_read_time);
      a.time = std::max(created_time_, read_time - (read_time - earliest) / 2);
      a.energy_mj = *energy_mj;
      if (a.valid && !a.moved) {
        a.moved = true;
        anchor_cv_.notify_all();
      }
      a.valid = true;
    }
    a.last_read_time = read_time;
    a.last_read_mj = *energy_mj;
    return Status::Ok();
  }

  // Blocks (real time) until every polled counter has moved once, so that
  // the first windows get accurately timed anchors; gives up after two
  // update periods plus two polls (a counter that does not move, e.g. on
  // an idle fake clock, keeps the coarser anchor).
  void WaitForCountersToMove() {
    std::chrono::nanoseconds longest_period{0};
    for (size_t i : counter_gpus_) {
      longest_period = std::max(longest_period, gpus_[i]->EnergyCounterUpdatePeriod());
    }
    auto deadline =
        std::chrono::steady_clock::now() + 2 * longest_period + 2 * options_.counter_poll_period;
    std::unique_lock<std::mutex> lock(anchor_mu_);
    anchor_cv_.wait_until(lock, deadline, [this] {
      for (size_t i : counter_gpus_) {
        if (!anchors_[i].moved) return false;
      }
      return true;
    });
  }

  void PollLoop(size_t gpu) {
    std::unique_lock<std::mutex> lock(poll_mu_);
    while (!stop_polling_) {
      lock.unlock();
      // A failed read is kept in the anchor and reported by the next boundary.
      PollCounter(gpu).IgnoreError();
      lock.lock();
      poll_cv_->wait_for(lock, options_.counter_poll_period, [this] { return stop_polling_; });
    }
  }

  // REQUIRES: boundary_mu_ held.
  StatusOr<Boundary> TakeBoundary(const std::string& context) {
    if (options_.sync) options_.sync();
    Boundary b;
    b.time = clock_->Now();
    b.wall_time_s = clock_->WallTimeS();
    const size_t n = gpus_.size();
    b.gpu_counter_mj.assign(n, 0);
    b.gpu_cumulative_j.assign(n, 0.0);
    b.gpu_power_mw.assign(n, 0);
    if (power_monitor_ != nullptr) {
      ZEUS_RETURN_IF_ERROR(power_monitor_->SampleOnce().WithContext(context));
    }
    if (!low_overhead_ && options_.approximate_short_windows) {
      for (size_t i : counter_gpus_) {
        StatusOr<uint32_t> power_mw = gpus_[i]->PowerMw();
        if (!power_mw.ok())
          return power_mw.status().WithContext(fmt::format("{}: GPU {}", context, i));
        b.gpu_power_mw[i] = *power_mw;
      }
    }
    // CPU counters are quick sysfs reads: read them before the slow GPU ones
    // so they stay close to the timestamp.
    for (size_t s = 0; s < cpus_.size(); ++s) {
      StatusOr<uint64_t> package_uj = cpus_[s]->PackageEnergyUj();
      if (!package_uj.ok()) {
        return package_uj.status().WithContext(fmt::format("{}: CPU {}", context, s));
      }
      b.cpu_uj.push_back(*package_uj);
      uint64_t dram_uj = 0;
      if (cpus_[s]->HasDram()) {
        StatusOr<uint64_t> d = cpus_[s]->DramEnergyUj();
        if (!d.ok()) return d.status().WithContext(fmt::format("{}: CPU {} DRAM", context, s));
        dram_uj = *d;
      }
      b.dram_uj.push_back(dram_uj);
    }
    for (size_t i = 0; i < n; ++i) {
      if (has_counter_[i] && !low_overhead_) continue;
      StatusOr<double> cumulative_j = CumulativeJ(i, b.time);
      if (!cumulative_j.ok()) {
        return cumulative_j.status().WithContext(fmt::format("{}: GPU {}", context, i));
      }
      b.gpu_cumulative_j[i] = *cumulative_j;
    }
    if (!low_overhead_ && !counter_gpus_.empty()) {
      std::vector<StatusOr<uint64_t>> reads;
      if (pool_ != nullptr) {
        reads = pool_->ReadAll();
      } else {
        reads.push_back(gpus_[counter_gpus_[0]]->TotalEnergyMj());
      }
      for (size_t k = 0; k < counter_gpus_.size(); ++k) {
        size_t i = counter_gpus_[k];
        if (!reads[k].ok())
          return reads[k].status().WithContext(fmt::format("{}: GPU {}", context, i));
        b.gpu_counter_mj[i] = *reads[k];
      }
    }
    return b;
  }

  // Cumulative energy of GPU `gpu` at `time`, in J: power integration for
  // GPUs without a counter; in low-overhead mode, the counter anchor plus
  // power integrated since the anchor.
  StatusOr<double> CumulativeJ(size_t gpu, std::chrono::nanoseconds time) {
    size_t p = static_cast<size_t>(power_index_[gpu]);
    ZEUS_ASSIGN_OR_RETURN(double at_time_j, power_monitor_->CumulativeEnergyJ(p, time));
    if (!has_counter_[gpu]) return at_time_j;
    Anchor a;
    {
      std::lock_guard<std::mutex> lock(anchor_mu_);
      a = anchors_[gpu];
    }
    if (!a.error.ok()) return a.error;
    if (!a.valid) return UnavailableError("no energy counter read yet");
    ZEUS_ASSIGN_OR_RETURN(double at_anchor_j, power_monitor_->CumulativeEnergyJ(p, a.time));
    return MjToJ(static_cast<double>(a.energy_mj)) + (at_time_j - at_anchor_j);
  }

  StatusOr<Measurement> Measure(std::string_view name, const Boundary& begin,
                                const Boundary& end) const {
    Measurement m;
    m.name = std::string(name);
    m.start_time_s = ToSeconds(begin.time);
    m.start_wall_time_s = begin.wall_time_s;
    m.time_s = ToSeconds(end.time - begin.time);
    for (size_t i = 0; i < gpus_.size(); ++i) {
      const bool short_window = end.time - begin.time < gpus_[i]->EnergyCounterUpdatePeriod();
      double energy_j = 0.0;
      GpuEnergySource source = GpuEnergySource::kPowerIntegration;
      bool below_resolution = false;
      if (!has_counter_[i]) {
        energy_j = end.gpu_cumulative_j[i] - begin.gpu_cumulative_j[i];
      } else if (low_overhead_) {
        // Anchor changes may make a tiny window's estimate slightly negative.
        energy_j = std::max(0.0, end.gpu_cumulative_j[i] - begin.gpu_cumulative_j[i]);
        source = GpuEnergySource::kCounterPlusPower;
      } else if (short_window && options_.approximate_short_windows) {
        energy_j = 0.5 * (MwToW(begin.gpu_power_mw[i]) + MwToW(end.gpu_power_mw[i])) * m.time_s;
        source = GpuEnergySource::kInstantPowerApproximation;
      } else {
        if (end.gpu_counter_mj[i] < begin.gpu_counter_mj[i]) {
          return FailedPreconditionError(fmt::format(
              "energy monitor: window '{}': GPU {}: energy counter went backwards from {} to {} mJ "
              "(driver reloaded?)",
              name, i, begin.gpu_counter_mj[i], end.gpu_counter_mj[i]));
        }
        energy_j = MjToJ(static_cast<double>(end.gpu_counter_mj[i] - begin.gpu_counter_mj[i]));
        source = GpuEnergySource::kCounter;
        below_resolution = short_window;
      }
      m.gpu_energy_j.push_back(energy_j);
      m.gpu_energy_source.push_back(source);
      m.gpu_below_counter_resolution.push_back(below_resolution);
    }
    for (size_t s = 0; s < cpus_.size(); ++s) {
      if (end.cpu_uj[s] < begin.cpu_uj[s] || end.dram_uj[s] < begin.dram_uj[s]) {
        return FailedPreconditionError(fmt::format(
            "energy monitor: window '{}': CPU {}: RAPL counter went backwards", name, s));
      }
      m.cpu_energy_j.push_back(UjToJ(static_cast<double>(end.cpu_uj[s] - begin.cpu_uj[s])));
      m.dram_energy_j.push_back(UjToJ(static_cast<double>(end.dram_uj[s] - begin.dram_uj[s])));
    }
    return m;
  }

  const std::vector<Gpu*> gpus_;
  const std::vector<bool> has_counter_;
  const std::vector<Cpu*> cpus_;
  Clock* const clock_;
  const EnergyMonitorOptions options_;
  const bool low_overhead_;
  // Position of each GPU in power_monitor_, or -1.
  std::vector<int> power_index_;
  std::vector<size_t> counter_gpus_;
  std::chrono::nanoseconds created_time_{0};
  std::unique_ptr<PowerMonitor> power_monitor_;
  std::unique_ptr<CounterReaderPool> pool_;

  std::mutex boundary_mu_;  // Serialises boundaries.
  mutable std::mutex mu_;
  std::map<std::string, Boundary, std::less<>> windows_;  // Guarded by mu_.
  std::mutex anchor_mu_;
  std::vector<Anchor> anchors_;  // Guarded by anchor_mu_.
  std::condition_variable anchor_cv_;
  std::mutex reporter_mu_;  // Serialises window_reporter calls.

  std::mutex poll_mu_;
  std::unique_ptr<std::condition_variable> poll_cv_ = std::make_unique<std::condition_variable>();
  bool stop_polling_ = false;  // Guarded by poll_mu_.
  std::vector<std::thread> pollers_;
  const pid_t owner_pid_ = getpid();
  // Leaf locks held across fork(); boundary_mu_ is not one (held around the
  // sync callback, which may run arbitrary code).
  ForkGuard fork_guard_{{&mu_, &anchor_mu_, &reporter_mu_}};
};

}  // namespace

StatusOr<std::unique_ptr<EnergyMonitor>> EnergyMonitor::Create(std::vector<Gpu*> gpus,
                                                               std::vector<Cpu*> cpus, Clock* clock,
                                                               EnergyMonitorOptions options) {
  if (gpus.empty() && cpus.empty()) {
    return InvalidArgumentError("energy monitor: nothing to measure (no GPU and no CPU)");
  }
  if (clock == nullptr) return InvalidArgumentError("energy monitor: clock is null");
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] == nullptr) {
      return InvalidArgumentError(fmt::format("energy monitor: GPU at position {} is null", i));
    }
  }
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (cpus[i] == nullptr) {
      return InvalidArgumentError(fmt::format("energy monitor: CPU at position {} is null", i));
    }
  }
  if (options.power_sample_period.count() < 0 || options.counter_poll_period.count() < 0) {
    return InvalidArgumentError("energy monitor: periods must not be negative");
  }
  std::vector<bool> has_counter;
  for (size_t i = 0; i < gpus.size(); ++i) {
    StatusOr<uint64_t> energy_mj = gpus[i]->TotalEnergyMj();
    if (energy_mj.ok()) {
      has_counter.push_back(true);
    } else if (energy_mj.status().code() == StatusCode::kNotSupported) {
      spdlog::warn("energy monitor: GPU {} has no energy counter ({}); integrating power samples",
                   i, energy_mj.status().message());
      has_counter.push_back(false);
    } else {
      return energy_mj.status().WithContext(fmt::format("energy monitor: GPU {}", i));
    }
  }
  if (options.window_reporter != nullptr) {
    ZEUS_RETURN_IF_ERROR(
        options.window_reporter->Open(gpus.size()).WithContext("energy monitor: window reporter"));
  }
  auto monitor = std::make_unique<EnergyMonitorImpl>(std::move(gpus), std::move(has_counter),
                                                     std::move(cpus), clock, std::move(options));
  ZEUS_RETURN_IF_ERROR(monitor->Init());
  return std::unique_ptr<EnergyMonitor>(std::move(monitor));
}

}  // namespace zeus
