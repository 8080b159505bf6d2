#include "zeus/monitor/power_monitor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zeus/util/units.h"

namespace zeus {
namespace {

double SpanS(std::chrono::nanoseconds a, std::chrono::nanoseconds b) { return ToSeconds(b - a); }

std::string TimeString(std::chrono::nanoseconds t) { return std::to_string(ToSeconds(t)) + " s"; }

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
  if (options.period.count() < 0) {
    return InvalidArgumentError("power monitor: negative sampling period " +
                                std::to_string(options.period.count()) + " ns");
  }
  std::unique_ptr<PowerMonitor> monitor(new PowerMonitor(std::move(gpus), clock, options));
  // A failing first sample is not fatal: the GPU may recover, and queries
  // report missing data precisely.
  monitor->SampleOnce().IgnoreError();
  if (options.period.count() > 0) monitor->thread_ = std::thread([m = monitor.get()] { m->Run(); });
  return monitor;
}

PowerMonitor::PowerMonitor(std::vector<Gpu*> gpus, Clock* clock, PowerMonitorOptions options)
    : gpus_(std::move(gpus)), clock_(clock), options_(options), timelines_(gpus_.size()) {}

PowerMonitor::~PowerMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PowerMonitor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_cv_.wait_for(lock, options_.period, [this] { return stop_; })) {
    lock.unlock();
    Status status = SampleOnce();
    lock.lock();
    last_error_ = std::move(status);
  }
}

Status PowerMonitor::SampleOnce() {
  // Reads are sub-microsecond; holding the lock keeps every timeline ordered
  // in time even when several threads sample.
  std::lock_guard<std::mutex> lock(mu_);
  Status first_error;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    std::chrono::nanoseconds now = clock_->Now();
    StatusOr<uint32_t> power_mw = gpus_[i]->PowerMw();
    if (!power_mw.ok()) {
      if (first_error.ok()) {
        first_error = power_mw.status().WithContext("power monitor: GPU " + std::to_string(i));
      }
      continue;
    }
    Record(i, now, *power_mw);
  }
  return first_error;
}

void PowerMonitor::Record(size_t gpu, std::chrono::nanoseconds time, uint32_t power_mw) {
  std::deque<Point>& points = timelines_[gpu];
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

StatusOr<double> PowerMonitor::CumulativeLocked(size_t gpu, std::chrono::nanoseconds time) const {
  const std::deque<Point>& points = timelines_[gpu];
  if (points.empty() || time < points.front().time) {
    return NotFoundError("power monitor: GPU " + std::to_string(gpu) + ": no power sample at or " +
                         "before " + TimeString(time) +
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

StatusOr<double> PowerMonitor::CumulativeEnergyJ(size_t gpu, std::chrono::nanoseconds time) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  std::lock_guard<std::mutex> lock(mu_);
  return CumulativeLocked(gpu, time);
}

StatusOr<double> PowerMonitor::EnergyJ(size_t gpu, std::chrono::nanoseconds start,
                                       std::chrono::nanoseconds end) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  if (end < start) {
    return InvalidArgumentError("power monitor: end " + TimeString(end) + " before start " +
                                TimeString(start));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ZEUS_ASSIGN_OR_RETURN(double start_j, CumulativeLocked(gpu, start));
  ZEUS_ASSIGN_OR_RETURN(double end_j, CumulativeLocked(gpu, end));
  return end_j - start_j;
}

StatusOr<std::vector<PowerSample>> PowerMonitor::Timeline(size_t gpu,
                                                          std::chrono::nanoseconds start,
                                                          std::chrono::nanoseconds end) const {
  ZEUS_RETURN_IF_ERROR(CheckGpu(gpu));
  if (end < start) {
    return InvalidArgumentError("power monitor: end " + TimeString(end) + " before start " +
                                TimeString(start));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PowerSample> out;
  for (const Point& p : timelines_[gpu]) {
    if (p.time >= start && p.time <= end) out.push_back(PowerSample{p.time, p.power_mw});
  }
  return out;
}

Status PowerMonitor::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace zeus
