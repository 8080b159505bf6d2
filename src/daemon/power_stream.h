// Live power for GET /{gpu,cpu}/get_power and the Server-Sent Event streams
// GET /{gpu,cpu}/stream_power: one PowerHub per device kind, whose single
// poller thread reads every device of that kind at a fixed rate and hands
// each snapshot to every subscriber. The poller reads only while someone
// subscribes (it sleeps on a condition variable otherwise), and its rate
// does not depend on the number of subscribers.
//
// A Subscription is one stream's view: a bounded queue of framed events in
// zeusd v0.5's shape, one event per device per sample, filtered to the
// stream's device ids: `data: {"timestamp_ms": N, "gpu_id": I, "power_mw": P}`
// for a GPU (a number in the snapshot), `data: {"timestamp_ms": N, "cpu_id": I,
// "cpu_mw": P, "dram_mw": P|null}` for a CPU (an object in the snapshot, whose
// fields are copied), each followed by a blank line. The queue holds one entry
// per sample (all of its devices' events); when it is full the oldest sample
// is dropped (a slow reader skips samples; memory never grows). Destroying a
// Subscription unsubscribes it.
//
// Thread-safety: every method may be called from any thread.

#ifndef ZEUS_SRC_DAEMON_POWER_STREAM_H_
#define ZEUS_SRC_DAEMON_POWER_STREAM_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/http/message.h"
#include "zeus/status.h"

namespace zeus::daemon {

// The wall clock as Unix time in ms: the `timestamp_ms` of every zeusd
// snapshot (get_power, stream_power, /time).
int64_t UnixTimeMs();

// One poll of every device of a kind: {"timestamp_ms", "power_mw": {"<id>":
// ...}} (the value of /gpu/get_power or /cpu/get_power for all devices).
using PowerSnapshot = std::shared_ptr<const nlohmann::json>;

// Reads one snapshot of every device. Called only from the poller thread.
// A device error fails the whole poll (the poller logs it and tries again at
// the next period).
class PowerSampler {
 public:
  virtual ~PowerSampler() = default;
  // Called when polling starts after a pause (e.g. to take a baseline of
  // energy counters); the first Sample follows one period later.
  virtual Status Begin() { return Status::Ok(); }
  virtual StatusOr<nlohmann::json> Sample() = 0;
};

class PowerHub;

// One subscriber's bounded queue of framed SSE events.
class Subscription : public HttpEventStream {
 public:
  ~Subscription() override;
  void SetWake(std::function<void()> wake) override;
  std::string TakeEvents() override;
  bool Ended() const override;
  // Samples dropped because the queue was full.
  uint64_t skipped() const;

 private:
  friend class PowerHub;
  // `id_key` names the device id field of each event ("gpu_id", "cpu_id").
  Subscription(PowerHub* hub, std::string id_key, std::vector<std::string> ids, size_t capacity);
  // From the poller: queue `snapshot` (filtered), waking the reader.
  void Push(const nlohmann::json& snapshot);
  void End();

  PowerHub* const hub_;
  const std::string id_key_;
  const std::vector<std::string> ids_;  // Empty: every device.
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<std::string> events_;
  std::function<void()> wake_;
  bool ended_ = false;
  uint64_t skipped_ = 0;
};

struct PowerHubStats {
  int subscribers = 0;
  uint64_t polls = 0;  // Successful polls since the daemon started.
  bool polling = false;
};

class PowerHub {
 public:
  // `name` ("GPU"/"CPU") names the poller in logs and, in lower case, the id
  // field of each streamed event (`gpu_id`); `period` between polls;
  // `queue_capacity` events per subscriber. Starts the (idle) poller thread.
  PowerHub(std::string name, std::unique_ptr<PowerSampler> sampler,
           std::chrono::microseconds period, size_t queue_capacity = 16);
  ~PowerHub();
  PowerHub(const PowerHub&) = delete;
  PowerHub& operator=(const PowerHub&) = delete;

  // A new subscriber to snapshots filtered to `ids` (device ids as the JSON
  // keys; empty: all). After Shutdown the subscription is ended at once.
  std::unique_ptr<Subscription> Subscribe(std::vector<std::string> ids);
  // The next snapshot polled after this call (subscribing for it).
  // kUnavailable when none comes within `timeout` or the hub is shut down.
  StatusOr<PowerSnapshot> NextSnapshot(std::chrono::milliseconds timeout);
  // A one-shot read (GET /cpu/get_power): the latest snapshot when the
  // poller is running and took it in its current run (at most about one
  // period old), at once; else as NextSnapshot. Either way the poller keeps
  // polling for Linger() after the call, so that a burst of one-shot reads
  // costs one wait for the first of them, not one per read.
  StatusOr<PowerSnapshot> RecentSnapshot(std::chrono::milliseconds timeout);
  // How long the poller keeps running after a one-shot read: 10 periods,
  // and at least 5 s.
  std::chrono::microseconds Linger() const;
  // Ends every subscription (their streams close) and stops the poller;
  // later subscriptions end at once. Idempotent.
  void Shutdown();
  PowerHubStats Stats() const;
  std::chrono::microseconds period() const { return period_; }

 private:
  friend class Subscription;
  void Unsubscribe(Subscription* s);
  void Run();
  // REQUIRES: mu_ held. Whether anyone wants polls now: a subscriber, a
  // waiter, or a one-shot read within Linger().
  bool WantedLocked() const;

  const std::string name_;
  const std::unique_ptr<PowerSampler> sampler_;
  const std::chrono::microseconds period_;
  const size_t queue_capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<Subscription*> subscribers_;
  // One-shot waiters of NextSnapshot.
  int waiters_ = 0;
  uint64_t generation_ = 0;
  PowerSnapshot latest_;
  // The poller's run (0: none yet) that took latest_, and the current one.
  uint64_t latest_run_ = 0;
  uint64_t run_ = 0;
  std::chrono::steady_clock::time_point linger_until_{};
  uint64_t polls_ = 0;
  bool polling_ = false;
  bool shutdown_ = false;
  std::thread thread_;
};

// Samplers of the two kinds. `gpus`/`cpus` must outlive the sampler.
std::unique_ptr<PowerSampler> MakeGpuPowerSampler(std::vector<Gpu*> gpus);
std::unique_ptr<PowerSampler> MakeCpuPowerSampler(std::vector<Cpu*> cpus);

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_POWER_STREAM_H_
