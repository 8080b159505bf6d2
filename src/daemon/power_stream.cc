#include "src/daemon/power_stream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>

#include "zeus/util/strings.h"

namespace zeus::daemon {

using json = nlohmann::json;

int64_t UnixTimeMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

class GpuPowerSampler : public PowerSampler {
 public:
  explicit GpuPowerSampler(std::vector<Gpu*> gpus) : gpus_(std::move(gpus)) {}

  StatusOr<json> Sample() override {
    json power = json::object();
    for (size_t i = 0; i < gpus_.size(); ++i) {
      ZEUS_ASSIGN_OR_RETURN(uint32_t mw, gpus_[i]->PowerMw());
      power[std::to_string(i)] = mw;
    }
    return json{{"timestamp_ms", UnixTimeMs()}, {"power_mw", power}};
  }

 private:
  const std::vector<Gpu*> gpus_;
};

// CPU power from two RAPL energy reads: (energy now - energy at the previous
// read) / elapsed time. uJ per ms is mW.
class CpuPowerSampler : public PowerSampler {
 public:
  explicit CpuPowerSampler(std::vector<Cpu*> cpus) : cpus_(std::move(cpus)) {}

  Status Begin() override {
    ZEUS_ASSIGN_OR_RETURN(last_, Read());
    return Status::Ok();
  }

  StatusOr<json> Sample() override {
    ZEUS_ASSIGN_OR_RETURN(Reading now, Read());
    const double elapsed_us = static_cast<double>(
        std::chrono::duration_cast<std::chrono::microseconds>(now.time - last_.time).count());
    json power = json::object();
    for (size_t i = 0; i < cpus_.size(); ++i) {
      auto mw = [&](uint64_t before, uint64_t after) {
        const uint64_t delta_uj = after >= before ? after - before : 0;
        return elapsed_us > 0
                   ? static_cast<uint64_t>(static_cast<double>(delta_uj) * 1e3 / elapsed_us + 0.5)
                   : 0;
      };
      json entry{{"cpu_mw", mw(last_.package_uj[i], now.package_uj[i])}, {"dram_mw", nullptr}};
      if (now.dram_uj[i] && last_.dram_uj[i]) {
        entry["dram_mw"] = mw(*last_.dram_uj[i], *now.dram_uj[i]);
      }
      power[std::to_string(i)] = entry;
    }
    last_ = std::move(now);
    return json{{"timestamp_ms", UnixTimeMs()}, {"power_mw", power}};
  }

 private:
  struct Reading {
    std::chrono::steady_clock::time_point time;
    std::vector<uint64_t> package_uj;
    std::vector<std::optional<uint64_t>> dram_uj;
  };

  StatusOr<Reading> Read() {
    Reading r;
    r.time = std::chrono::steady_clock::now();
    for (Cpu* cpu : cpus_) {
      ZEUS_ASSIGN_OR_RETURN(uint64_t package, cpu->PackageEnergyUj());
      r.package_uj.push_back(package);
      std::optional<uint64_t> dram;
      if (cpu->HasDram()) {
        ZEUS_ASSIGN_OR_RETURN(dram, cpu->DramEnergyUj());
      }
      r.dram_uj.push_back(dram);
    }
    return r;
  }

  const std::vector<Cpu*> cpus_;
  Reading last_;
};

}  // namespace

std::unique_ptr<PowerSampler> MakeGpuPowerSampler(std::vector<Gpu*> gpus) {
  return std::make_unique<GpuPowerSampler>(std::move(gpus));
}

std::unique_ptr<PowerSampler> MakeCpuPowerSampler(std::vector<Cpu*> cpus) {
  return std::make_unique<CpuPowerSampler>(std::move(cpus));
}

Subscription::Subscription(PowerHub* hub, std::string id_key, std::vector<std::string> ids,
                           size_t capacity)
    : hub_(hub),
      id_key_(std::move(id_key)),
      ids_(std::move(ids)),
      capacity_(std::max<size_t>(1, capacity)) {}

Subscription::~Subscription() { hub_->Unsubscribe(this); }

void Subscription::SetWake(std::function<void()> wake) {
  bool ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = std::move(wake);
    ready = !events_.empty() || ended_;
  }
  if (ready && wake_) wake_();
}

std::string Subscription::TakeEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (std::string& e : events_) out += e;
  events_.clear();
  return out;
}

bool Subscription::Ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

uint64_t Subscription::skipped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

void Subscription::Push(const json& snapshot) {
  const json& all = snapshot.at("power_mw");
  std::vector<std::string> ids = ids_;
  if (ids.empty()) {
    for (auto it = all.begin(); it != all.end(); ++it) ids.push_back(it.key());
    // Device order, not the keys' lexical order ("10" after "9").
    std::sort(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
  }
  // zeusd v0.5's shape: one event per device per sample, the device's
  // fields beside its id and the sample's time.
  std::string event;
  for (const std::string& id : ids) {
    auto it = all.find(id);
    if (it == all.end()) continue;
    json one{{"timestamp_ms", snapshot.at("timestamp_ms")},
             {id_key_, std::strtoll(id.c_str(), nullptr, 10)}};
    if (it->is_object()) {
      for (auto field = it->begin(); field != it->end(); ++field) one[field.key()] = field.value();
    } else {
      one["power_mw"] = *it;
    }
    event += "data: " + one.dump() + "\n\n";
  }
  if (event.empty()) return;
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    if (events_.size() >= capacity_) {
      events_.pop_front();
      ++skipped_;
    }
    events_.push_back(std::move(event));
    // One wake per batch: the reader takes every queued event at once.
    if (events_.size() == 1) wake = wake_;
  }
  if (wake) wake();
}

void Subscription::End() {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    wake = wake_;
  }
  if (wake) wake();
}

PowerHub::PowerHub(std::string name, std::unique_ptr<PowerSampler> sampler,
                   std::chrono::microseconds period, size_t queue_capacity)
    : name_(std::move(name)),
      sampler_(std::move(sampler)),
      period_(std::max(period, std::chrono::microseconds(1000))),
      queue_capacity_(queue_capacity) {
  thread_ = std::thread([this] { Run(); });
}

PowerHub::~PowerHub() {
  Shutdown();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<Subscription> PowerHub::Subscribe(std::vector<std::string> ids) {
  std::unique_ptr<Subscription> s(
      new Subscription(this, ToLower(name_) + "_id", std::move(ids), queue_capacity_));
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) {
    s->ended_ = true;
  } else {
    subscribers_.insert(s.get());
    cv_.notify_all();
  }
  return s;
}

void PowerHub::Unsubscribe(Subscription* s) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(s);
}

StatusOr<PowerSnapshot> PowerHub::NextSnapshot(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (shutdown_) return UnavailableError("the daemon is stopping");
  ++waiters_;
  cv_.notify_all();
  const uint64_t seen = generation_;
  const bool got = cv_.wait_for(lock, timeout, [&] { return generation_ != seen || shutdown_; });
  --waiters_;
  if (!got || shutdown_ || latest_ == nullptr) {
    return UnavailableError("no " + name_ + " power reading within " +
                            std::to_string(timeout.count()) + " ms" +
                            (shutdown_ ? " (the daemon is stopping)" : ""));
  }
  return latest_;
}

std::chrono::microseconds PowerHub::Linger() const {
  return std::max<std::chrono::microseconds>(10 * period_, std::chrono::seconds(5));
}

StatusOr<PowerSnapshot> PowerHub::RecentSnapshot(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return UnavailableError("the daemon is stopping");
    linger_until_ = std::max(linger_until_, std::chrono::steady_clock::now() + Linger());
    if (polling_ && latest_ != nullptr && latest_run_ == run_) return latest_;
  }
  return NextSnapshot(timeout);
}

bool PowerHub::WantedLocked() const {
  return !subscribers_.empty() || waiters_ > 0 || std::chrono::steady_clock::now() < linger_until_;
}

void PowerHub::Shutdown() {
  std::set<Subscription*> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    ended = subscribers_;
    // Ended under the lock: a subscription cannot unsubscribe (and be freed)
    // meanwhile.
    for (Subscription* s : ended) s->End();
    cv_.notify_all();
  }
}

PowerHubStats PowerHub::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PowerHubStats{static_cast<int>(subscribers_.size()), polls_, polling_};
}

void PowerHub::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutdown_) {
    if (!WantedLocked()) {
      polling_ = false;
      cv_.wait(lock, [&] { return shutdown_ || WantedLocked(); });
      continue;
    }
    // Someone listens: poll at a fixed rate, the first poll one period after
    // the baseline (Begin).
    polling_ = true;
    ++run_;
    lock.unlock();
    Status begun = sampler_->Begin();
    if (!begun.ok()) spdlog::warn("zeus daemon: {} power: {}", name_, begun.ToString());
    auto next = std::chrono::steady_clock::now() + period_;
    lock.lock();
    while (!shutdown_ && WantedLocked()) {
      if (cv_.wait_until(lock, next, [&] { return shutdown_; })) break;
      if (!WantedLocked()) break;  // The last one left.
      next += period_;
      // A poll that overran (a slow device) does not cause a burst of
      // catch-up polls.
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + period_;
      lock.unlock();
      StatusOr<json> sample = sampler_->Sample();
      lock.lock();
      if (!sample.ok()) {
        spdlog::warn("zeus daemon: {} power: {}", name_, sample.status().ToString());
        continue;
      }
      ++polls_;
      ++generation_;
      latest_ = std::make_shared<const json>(std::move(*sample));
      latest_run_ = run_;
      for (Subscription* s : subscribers_) s->Push(*latest_);
      cv_.notify_all();
    }
  }
  polling_ = false;
}

}  // namespace zeus::daemon
