// LeaseTable: every change the daemon makes belongs to the client process
// that asked for it, and is undone when that process ends.
//
// A client's first change of a setting on a GPU records the value from before
// (durably, in the state file, BEFORE the device is touched), then changes
// the device; the GPU is then held by that client (pid and start time) until
// it ends (any signal, SIGKILL included: a pidfd per client, polled by one
// watcher thread), its lease times out, or it releases it. Then every setting
// it changed goes back to the recorded value within about 100 ms, and the
// record is dropped. A second client asking to change a held GPU gets
// kFailedPrecondition naming the holder; nothing is overridden. After a crash
// of the daemon itself, Recover() puts back whatever the state file lists.
//
// Thread-safety: all methods may be called concurrently; device calls and
// state-file writes are serialised by one mutex.

#ifndef ZEUS_SRC_DAEMON_LEASE_TABLE_H_
#define ZEUS_SRC_DAEMON_LEASE_TABLE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "zeus/device/gpu.h"
#include "zeus/http/peer.h"
#include "zeus/status.h"

#include "src/daemon/state_file.h"

namespace zeus::daemon {

enum class Setting { kPowerLimit, kPersistenceMode, kGpuLockedClocks, kMemLockedClocks };

struct Change {
  Setting setting = Setting::kPowerLimit;
  // mW for kPowerLimit; 0 or 1 for kPersistenceMode; the minimum MHz for the
  // locked clocks.
  uint32_t value = 0;
  // The maximum MHz for the locked clocks.
  uint32_t max_value = 0;
  // Locked clocks only: unlock instead of lock.
  bool reset = false;
  // With `reset`: where the backend cannot unlock one domain alone (AMD SMI),
  // lift the lock by the whole range instead (UnlockClocks), as a reset of
  // every domain (reset_locked_clocks) does; else such a reset fails.
  bool whole_range_if_needed = false;
};

struct LeaseTableOptions {
  // The durable record (see state_file.h). Required.
  std::string state_file;
  // A lease not renewed (by any request of its client) for this long is
  // released as if the client had ended. Zero: never. Default: zero.
  std::chrono::milliseconds lease_timeout{0};
  // Dry run: the devices log instead of changing (ZEUS_DRY_RUN must be set
  // for them), and the state file is neither written nor cleared.
  bool dry_run = false;
  // Test hook: "after_record" or "after_change" makes the first change stop
  // at that point forever (after creating `pause_marker`), so a test can
  // SIGKILL the daemon there. Empty: no pause. Default: empty.
  std::string pause_at;
  std::string pause_marker;
  // Test hook: called by the watcher thread with the number of pidfds it has
  // copied to poll, before it polls them. Empty: none. Default: empty.
  std::function<void(size_t pidfds)> before_watch_poll;
};

class LeaseTable {
 public:
  // `gpus[i]` is the daemon's GPU i; they must outlive the table.
  LeaseTable(std::vector<Gpu*> gpus, LeaseTableOptions options);
  ~LeaseTable();
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // Puts back every value the state file lists (left by a crashed daemon)
  // and clears it. A value that cannot be put back stays listed, its GPU
  // held by nobody (changes to it are refused) and retried by the watcher.
  // Fails only when the state file cannot be read or written.
  Status Recover();

  // Starts the watcher thread (client ends, lease timeouts, retries).
  void Start();
  // Stops the watcher and puts back everything still held.
  void Shutdown();

  // Applies `change` to every GPU in `gpus` for `peer`: a local peer, or a
  // TCP peer (pid 0), whose changes are held by the one lease of "the TCP
  // clients" (never ended by a process end; released by Release of a TCP
  // peer, a lease timeout, or Shutdown).
  // Either every GPU is free or held by `peer`, or nothing changes and each
  // held GPU's status is kFailedPrecondition naming its holder. kNotFound for
  // an unknown GPU, kInvalidArgument for a power limit outside the GPU's
  // constraints (naming the range), the device's error otherwise. Returns one
  // status per GPU of `gpus`, in order.
  std::vector<Status> Apply(const Peer& peer, const std::vector<int>& gpus, const Change& change);

  // Renews the leases of `peer` (any request counts).
  void Touch(const Peer& peer);

  // Puts back and drops every lease of `peer`; returns how many GPUs it held.
  int Release(const Peer& peer);

  // The current records, for the /leases route and tests.
  std::vector<LeaseRecord> Records();

  int gpu_count() const { return static_cast<int>(gpus_.size()); }

 private:
  struct Lease {
    LeaseRecord record;
    std::chrono::steady_clock::time_point last_seen;
    // The holder is gone but a value could not be put back yet.
    bool orphaned = false;
  };

  // REQUIRES: mu_ held.
  Status Persist();
  // Puts back the recorded values of `lease`; OK when all came back.
  // REQUIRES: mu_ held.
  Status RestoreLease(const Lease& lease);
  // Releases every lease of (pid, start_time); `why` is logged.
  // REQUIRES: mu_ held.
  void ReleaseLocked(pid_t pid, uint64_t start_time, const std::string& why);
  // REQUIRES: mu_ held.
  void WatchLocked(const Peer& peer);
  // REQUIRES: mu_ held.
  Status ApplyOne(const Peer& peer, int gpu, const Change& change);
  void PauseIfAsked(const std::string& point);
  void WatchLoop();
  // One pass of the watcher: ended clients, timeouts, retries. `ended` are
  // the clients whose pidfd was ready in the watcher's copy; each is
  // released only if its pidfd, as watched now, still says so.
  void Sweep(const std::vector<std::pair<pid_t, uint64_t>>& ended);
  // True when `key`'s pidfd in watched_ says its process has exited.
  // REQUIRES: mu_ held.
  bool PidfdSaysEndedLocked(const std::pair<pid_t, uint64_t>& key) const;

  const std::vector<Gpu*> gpus_;
  const LeaseTableOptions options_;
  std::mutex mu_;
  std::map<int, Lease> leases_;  // By GPU index.
  // Watched clients: (pid, start_time) -> pidfd (-1 when pidfd_open is
  // unavailable: polled through /proc instead).
  std::map<std::pair<pid_t, uint64_t>, int> watched_;
  int wake_fd_ = -1;  // eventfd: wakes the watcher when watched_ changes.
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_LEASE_TABLE_H_
