#include "zeus/monitor/power_monitor.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "zeus/util/units.h"

#include "src/monitor/fork_guard.h"

namespace zeus {
namespace {

double SpanS(std::chrono::nanoseconds a, std::chrono::nanoseconds b) { return ToSeconds(b - a); }

std::string TimeString(std::chrono::nanoseconds t) { return std::to_string(ToSeconds(t)) + " s"; }

// kInvalidArgument naming both ends when `end` precedes `start`.
Status CheckInterval(std::chrono::nanoseconds start, std::chrono::nanoseconds end) {
  if (end >= start) return Status::Ok();
  return InvalidArgumentError("power monitor: end " + TimeString(end) + " before start " +
                              TimeString(start));
}

std::string GpuContext(size_t gpu) { return "power monitor: GPU " + std::to_string(gpu); }

// Threads of a process we were forked from do not exist here: they can be
// neither joined nor detached, so their handles are left behind on purpose.
void AbandonThreads(std::vector<std::thread> threads) {
  new std::vector<std::thread>(std::move(threads));  // Intentionally leaked.
}

}  // namespace

StatusOr<std::unique_ptr<PowerMonitor>> PowerMonitor::Create(std::vector<Gpu*> gpus, Clock* clock,
                                                             PowerMonitorOptions options) {
  if (gpus.empty()) return InvalidArgumentError("power monitor: no GPUs to sample");
  if (clock == nullptr) return InvalidArgumentError("power monitor: clock is null");
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] == nullptr) {
      return InvalidArgumentError("power monitor: GPU at position " + std::to_string(i) +
                                  " is null");
    }
  }
  if (options.max_points_per_gpu < 4) {
    return InvalidArgumentError("power monitor: max_points_per_gpu " +
                                std::to_string(options.max_points_per_gpu) + " is below 4");
  }
  if (options.period.count() < 0 || options.counter_period.count() < 0) {
    return InvalidArgumentError(
        "power monitor: negative sampling period " +
        std::to_string(std::min(options.period, options.counter_period).count()) + " ns");
  }
  std::vector<PowerDomain> domains;
  if (options.domains.empty()) {
    // Every domain the first GPU answers.
    for (PowerDomain domain : kAllPowerDomains) {
      StatusOr<uint32_t> power_mw = gpus[0]->DomainPowerMw(domain);
      if (power_mw.ok()) {
        domains.push_back(domain);
      } else if (power_mw.status().code() != StatusCode::kNotSupported) {
        return power_mw.status().WithContext(GpuContext(0) + ": " + PowerDomainName(domain));
      }
    }
    if (domains.empty()) {
      return NotSupportedError(GpuContext(0) + ": supports no power domain");
    }
  } else {
    for (PowerDomain domain : options.domains) {
      if (std::find(domains.begin(), domains.end(), domain) != domains.end()) {
        return InvalidArgumentError(std::string("power monitor: power domain ") +
                                    PowerDomainName(domain) + " given twice");
      }
      domains.push_back(domain);
    }
    for (size_t i = 0; i < gpus.size(); ++i) {
      for (PowerDomain domain : domains) {
        StatusOr<uint32_t> power_mw = gpus[i]->DomainPowerMw(domain);
        if (!power_mw.ok() && power_mw.status().code() == StatusCode::kNotSupported) {
          return power_mw.status().WithContext(GpuContext(i) + ": power domain " +
                                               PowerDomainName(domain));
        }
      }
    }
  }
  std::vector<bool> has_counter(gpus.size(), false);
  if (options.sample_energy_counters) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      StatusOr<uint64_t> energy_mj = gpus[i]->TotalEnergyMj();
      if (energy_mj.ok()) {
        has_counter[i] = true;
      } else if (energy_mj.status().code() != StatusCode::kNotSupported) {
        return energy_mj.status().WithContext(GpuContext(i) + ": energy counter");
      }
    }
  }
  std::unique_ptr<PowerMonitor> monitor(
      new PowerMonitor(std::move(gpus), clock, options, std::move(domains), has_counter));
  // A failing first sample is not fatal: the GPU may recover, and queries
  // report missing data precisely.
  monitor->SampleOnce().IgnoreError();
  if (options.period.count() > 0) monitor->thread_ = std::thread([m = monitor.get()] { m->Run(); });
  if (options.counter_period.count() > 0) {
    for (size_t i = 0; i < has_counter.size(); ++i) {
      if (has_counter[i]) {
        monitor->counter_threads_.emplace_back([m = monitor.get(), i] { m->RunCounter(i); });
      }
    }
  }
  return monitor;
}

PowerMonitor::PowerMonitor(std::vector<Gpu*> gpus, Clock* clock, PowerMonitorOptions options,
                           std::vector<PowerDomain> domains, std::vector<bool> has_counter)
    : gpus_(std::move(gpus)),
      clock_(clock),
      options_(std::move(options)),
      domains_(std::move(domains)),
      timelines_(gpus_.size(), std::vector<Points>(domains_.size())),
      counters_(gpus_.size()),
      owner_pid_(static_cast<int>(getpid())),
      fork_guard_(std::make_shared<ForkGuard>(std::vector<std::mutex*>{&mu_})) {
  for (size_t d = 0; d < domains_.size(); ++d) {
    if (domains_[d] == PowerDomain::kDeviceInstant) instant_slot_ = d;
  }
  for (size_t i = 0; i < gpus_.size(); ++i) counters_[i].has_counter = has_counter[i];
}

PowerMonitor::~PowerMonitor() {
  std::vector<std::thread> threads = std::move(counter_threads_);
  if (thread_.joinable()) threads.push_back(std::move(thread_));
  if (static_cast<int>(getpid()) != owner_pid_) {
    // A forked child: the threads (and whoever held mu_) stayed in the parent.
    AbandonThreads(std::move(threads));
    static_cast<void>(stop_cv_.release());  // Intentionally leaked (see the member's comment).
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_->notify_all();
  for (std::thread& t : threads) t.join();
}

void PowerMonitor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_cv_->wait_for(lock, options_.period, [this] { return stop_; })) {
    last_error_ = SampleDomainsLocked();
  }
}

Status PowerMonitor::SampleDomainsLocked() {
  // Reads are sub-millisecond; holding the lock keeps every timeline ordered
  // in time even when several threads sample.
  Status first_error;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    for (size_t d = 0; d < domains_.size(); ++d) {
      std::chrono::nanoseconds now = clock_->Now();
      StatusOr<uint32_t> power_mw = gpus_[i]->DomainPowerMw(domains_[d]);
      if (!power_mw.ok()) {
        if (first_error.ok()) first_error = power_mw.status().WithContext(GpuContext(i));
        continue;
      }
      Record(timelines_[i][d], now, *power_mw);
    }
  }
  return first_error;
}

void PowerMonitor::RunCounter(size_t gpu) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_cv_->wait_for(lock, options_.counter_period, [this] { return stop_; })) {
    lock.unlock();
    Status status = SampleCounter(gpu);
    lock.lock();
    if (!status.ok()) last_error_ = std::move(status);
  }
}

Status PowerMonitor::SampleCounter(size_t gpu) {
  const std::chrono::nanoseconds start = clock_->Now();
  StatusOr<uint64_t> energy_mj = gpus_[gpu]->TotalEnergyMj();
  const std::chrono::nanoseconds end = clock_->Now();
  if (!energy_mj.ok()) return energy_mj.status().WithContext(GpuContext(gpu) + ": energy counter");
  const std::chrono::nanoseconds read_time = start + (end - start) / 2;
  const bool continuous = gpus_[gpu]->EnergyCounterUpdatePeriod().count() == 0;
  std::lock_guard<std::mutex> lock(mu_);
  CounterState& c = counters_[gpu];
  if (c.read_once && read_time < c.last_read_time) return Status::Ok();  // Raced; stale.
  if (!c.read_once) {
    // When a periodic counter last moved before its first read is unknown
    // (up to one update period before): provisional, replaced by the first
    // observed move.
    c.moves.push_back(CounterMove{read_time, *energy_mj});
    c.provisional = !continuous;
  } else if (*energy_mj != c.last_read_mj) {
    if (c.provisional) c.moves.clear();
    c.provisional = false;
    // The move happened between the previous read and this one.
    const std::chrono::nanoseconds move_time =
        continuous ? read_time : c.last_read_time + (read_time - c.last_read_time) / 2;
    c.moves.push_back(CounterMove{move_time, *energy_mj});
    if (c.moves.size() > options_.max_points_per_gpu) c.moves.pop_front();
  }
  c.read_once = true;
  c.last_read_time = read_time;
  c.last_read_mj = *energy_mj;
  return Status::Ok();
}

Status PowerMonitor::SampleOnce() {
  Status first_error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_error = SampleDomainsLocked();
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (!counters_[i].has_counter) continue;  // Constant after construction.
    Status status = SampleCounter(i);
    if (first_error.ok()) first_error = std::move(status);
  }
  return first_error;
}

void PowerMonitor::Record(Points& points, std::chrono::nanoseconds time, uint32_t power_mw) {
  if (!points.empty() && time < points.back().time) time = points.back().time;
  size_t n = points.size();
  if (n >= 2 && points[n - 1].power_mw == power_mw && points[n - 2].power_mw == power_mw) {
    // Extend the run of equal values: move its last point.
    Point& last = points[n - 1];
    last.cumulative_j += MwToW(power_mw) * SpanS(last.time, time);
    last.time = time;
    return;
  }
  double cumulative_j = 0.0;
  if (n > 0) {
    const Point& last = points.back();
    cumulative_j =
        last.cumulative_j + 0.5 * (MwToW(last.power_mw) + MwToW(power_mw)) * SpanS(last.time, time);
  }
  points.push_back(Point{time, power_mw, cumulative_j});
  if (points.size() > options_.max_points_per_gpu) points.pop_front();
}

Status PowerMonitor::CheckGpu(size_t gpu) const {
  if (gpu >= gpus_.size()) {
    return InvalidArgumentError("power monitor: GPU position " + std::to_string(gpu) +
                                " out of range (monitoring " + std::to_string(gpus_.size()) +
                                " GPUs)");
  }
  return Status::Ok();
}

StatusOr<size_t> PowerMonitor::DomainSlot(PowerDomain domain) const {
  for (size_t d = 0; d < domains_.size(); ++d) {
    if (domains_[d] == domain) return d;
  }
  std::string sampled;
  for (PowerDomain s : domains_)
    sampled += (sampled.empty() ? "" : ", ") + std::string(PowerDomainName(s));
  return InvalidArgumentError(std::string("power monitor: power domain ") +
                              PowerDomainName(domain) + " is not sampled (sampled: " + sampled +
                              ")");
}

bool PowerMonitor::Samples(PowerDomain domain) const { return DomainSlot(domain).ok(); }

bool PowerMonitor::HasCounter(size_t gpu) const {
  return gpu < counters_.size() && counters_[gpu].has_counter;
}

StatusOr<double> PowerMonitor::CumulativeLocked(size_t gpu, size_t domain,
                                                std::chrono::nanoseconds time) const {
  const Points& points = timelines_[gpu][domain];
  if (points.empty() || time < points.front().time) {
    return NotFoundError(GpuContext(gpu) + ": no " + PowerDomainName(domains_[domain]) +
                         " power sample at or before " + TimeString(time) +
                         (points.empty()
                              ? std::string(" (none recorded yet)")
                              : " (oldest kept: " + TimeString(points.front().time) + ")"));
  }
  // The last point at or before `time`.
  auto next =
      std::upper_bound(points.begin(), points.end(), time,
                       [](std::chrono::nanoseconds t, const Point& p) { return t < p.time; });
  const Point& p = *(next - 1);
  double p_w = MwToW(p.power_mw);
  if (next == points.end()) return p.cumulative_j + p_w * SpanS(p.time, time);
  double span_s = SpanS(p.time, next->time);
  double frac = span_s > 0 ? SpanS(p.time, time) / span_s : 0.0;
  double at_time_w = p_w + frac * (MwToW(next->power_mw) - p_w);
  return p.cumulative_j + 0.5 * (p_w + at_time_w) * SpanS(p.time, time);
}

StatusOr<double> PowerMonitor::CounterCumulativeLocked(size_t gpu,
                                                       std::chrono::nanoseconds time) const {
  const CounterState& c = counters_[gpu];
  if (c.moves.empty()) {
    return NotFoundError(GpuContext(gpu) + ": no energy counter sample yet");
  }
  // The shape of the power between counter moves: instant power when
  // sampled (it follows bursts), else the first sampled domain.
  const size_t shape = instant_slot_.value_or(0);
  auto power_j = [&](std::chrono::nanoseconds a, std::chrono::nanoseconds b) -> StatusOr<double> {
    ZEUS_ASSIGN_OR_RETURN(double at_a, CumulativeLocked(gpu, shape, a));
    ZEUS_ASSIGN_OR_RETURN(double at_b, CumulativeLocked(gpu, shape, b));
    return at_b - at_a;
  };
  auto next =
      std::upper_bound(c.moves.begin(), c.moves.end(), time,
                       [](std::chrono::nanoseconds t, const CounterMove& m) { return t < m.time; });
  if (next == c.moves.begin()) {
    // Before the first kept move: the power integral back from it.
    const CounterMove& first = c.moves.front();
    StatusOr<double> back_j = power_j(time, first.time);
    if (!back_j.ok()) {
      return NotFoundError(GpuContext(gpu) + ": no energy counter sample or power sample at or " +
                           "before " + TimeString(time) + " (" + back_j.status().message() + ")");
    }
    return MjToJ(static_cast<double>(first.energy_mj)) - *back_j;
  }
  const CounterMove& before = *(next - 1);
  const double before_j = MjToJ(static_cast<double>(before.energy_mj));
  if (next == c.moves.end()) {
    // Past the last move: carried forward by the power integral.
    ZEUS_ASSIGN_OR_RETURN(double forward_j, power_j(before.time, time));
    return before_j + forward_j;
  }
  const double delta_j = MjToJ(static_cast<double>(next->energy_mj)) - before_j;
  double frac = SpanS(before.time, time) / SpanS(before.time, next->time);
  if (instant_slot_.has_value()) {
    StatusOr<double> part_j = power_j(before.time, time);
    StatusOr<double> whole_j = power_j(before.time, next->time);
    if (part_j.ok() && whole_j.ok() && *whole_j > 0) frac = *part_j / *whole_j;
  }
  return before_j + delta_j * std::clamp(frac, 0.0, 1.0);
}

StatusOr<double> PowerMonitor::CumulativeEnergyJ(size_t gpu, std::chrono::nanoseconds time) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  std::lock_guard<std::mutex> lock(mu_);
  return CumulativeLocked(gpu, 0, time);
}

StatusOr<double> PowerMonitor::EnergyJ(size_t gpu, PowerDomain domain,
                                       std::chrono::nanoseconds start,
                                       std::chrono::nanoseconds end) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  ZEUS_ASSIGN_OR_RETURN(size_t slot, DomainSlot(domain));
  ZEUS_RETURN_IF_ERROR(CheckInterval(start, end));
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_ASSIGN_OR_RETURN(double start_j, CumulativeLocked(gpu, slot, start));
  ZEUS_ASSIGN_OR_RETURN(double end_j, CumulativeLocked(gpu, slot, end));
  return end_j - start_j;
}

StatusOr<double> PowerMonitor::EnergyJ(size_t gpu, std::chrono::nanoseconds start,
                                       std::chrono::nanoseconds end) const {
  return EnergyJ(gpu, domains_.front(), start, end);
}

StatusOr<double> PowerMonitor::CounterEnergyJ(size_t gpu, std::chrono::nanoseconds start,
                                              std::chrono::nanoseconds end) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  if (!counters_[gpu].has_counter) {
    return FailedPreconditionError(GpuContext(gpu) +
                                   ": energy counter not sampled (no counter, or counter "
                                   "sampling off)");
  }
  ZEUS_RETURN_IF_ERROR(CheckInterval(start, end));
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_ASSIGN_OR_RETURN(double start_j, CounterCumulativeLocked(gpu, start));
  ZEUS_ASSIGN_OR_RETURN(double end_j, CounterCumulativeLocked(gpu, end));
  return std::max(0.0, end_j - start_j);
}

StatusOr<std::vector<PowerSample>> PowerMonitor::Timeline(size_t gpu, PowerDomain domain,
                                                          std::chrono::nanoseconds start,
                                                          std::chrono::nanoseconds end) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  ZEUS_ASSIGN_OR_RETURN(size_t slot, DomainSlot(domain));
  ZEUS_RETURN_IF_ERROR(CheckInterval(start, end));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PowerSample> out;
  for (const Point& p : timelines_[gpu][slot]) {
    if (p.time >= start && p.time <= end) out.push_back(PowerSample{p.time, p.power_mw});
  }
  return out;
}

StatusOr<std::vector<PowerSample>> PowerMonitor::Timeline(size_t gpu,
                                                          std::chrono::nanoseconds start,
                                                          std::chrono::nanoseconds end) const {
  return Timeline(gpu, domains_.front(), start, end);
}

Status PowerMonitor::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace zeus
