#include "src/daemon/lease_table.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

namespace zeus::daemon {
namespace {

// pidfd_open(2) (Linux 5.3); -1 with errno when unavailable or the process
// is gone (ESRCH).
int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

std::string GpuName(int gpu) { return "GPU " + std::to_string(gpu); }

// The holder of TCP clients' changes: pid 0 (no process of ours has it).
constexpr pid_t kTcpHolderPid = 0;

std::string HolderName(const LeaseRecord& r) {
  if (r.pid == kTcpHolderPid) return "the TCP clients";
  return "pid " + std::to_string(r.pid) + " (uid " + std::to_string(r.uid) + ")";
}

// True when (pid, start_time) no longer names a running process. The TCP
// clients' holder never ends so.
bool Ended(pid_t pid, uint64_t start_time) {
  if (pid == kTcpHolderPid) return false;
  StatusOr<uint64_t> now = ProcessStartTime(pid);
  return !now.ok() || (start_time != 0 && *now != start_time);
}

}  // namespace

LeaseTable::LeaseTable(std::vector<Gpu*> gpus, LeaseTableOptions options)
    : gpus_(std::move(gpus)), options_(std::move(options)) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

LeaseTable::~LeaseTable() {
  Shutdown();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status LeaseTable::Persist() {
  if (options_.dry_run) return Status::Ok();
  std::vector<LeaseRecord> records;
  for (const auto& [gpu, lease] : leases_) records.push_back(lease.record);
  return SaveLeaseRecords(options_.state_file, records).WithContext("state file");
}

Status LeaseTable::RestoreLease(const Lease& lease) {
  const LeaseRecord& r = lease.record;
  if (r.gpu < 0 || r.gpu >= gpu_count()) {
    return NotFoundError(GpuName(r.gpu) + " is not on this machine any more; dropping its record");
  }
  Gpu* gpu = gpus_[static_cast<size_t>(r.gpu)];
  Status result;
  if (r.original_power_limit_mw) {
    Status s = gpu->SetPowerLimitMw(*r.original_power_limit_mw);
    if (!s.ok()) result = s;
  }
  if (r.original_persistence_mode) {
    Status s = gpu->SetPersistenceMode(*r.original_persistence_mode);
    if (!s.ok()) result = s;
  }
  if (r.reset_gpu_locked_clocks) {
    Status s = UnlockClocks(*gpu, /*memory=*/false);
    if (!s.ok()) result = s;
  }
  if (r.reset_mem_locked_clocks) {
    Status s = UnlockClocks(*gpu, /*memory=*/true);
    if (!s.ok()) result = s;
  }
  return result;
}

Status LeaseTable::Recover() {
  ZEUS_ASSIGN_OR_RETURN(std::vector<LeaseRecord> records, LoadLeaseRecords(options_.state_file));
  std::lock_guard<std::mutex> lock(mu_);
  for (const LeaseRecord& r : records) {
    Lease lease{r, std::chrono::steady_clock::now(), true};
    Status restored = RestoreLease(lease);
    if (restored.ok()) {
      spdlog::warn(
          "zeus daemon: {} was left changed by {} (the daemon stopped uncleanly); put "
          "back{}{}",
          GpuName(r.gpu), HolderName(r),
          r.original_power_limit_mw
              ? " power limit " + std::to_string(*r.original_power_limit_mw) + " mW"
              : "",
          r.original_persistence_mode
              ? std::string(" persistence mode ") + (*r.original_persistence_mode ? "on" : "off")
              : "");
    } else if (restored.code() == StatusCode::kNotFound) {
      spdlog::error("zeus daemon: {}", restored.ToString());
    } else {
      spdlog::error("zeus daemon: cannot put back {} (left changed by {}): {}; will retry",
                    GpuName(r.gpu), HolderName(r), restored.ToString());
      leases_[r.gpu] = lease;
    }
  }
  if (options_.dry_run) {
    if (!records.empty()) spdlog::info("zeus daemon: dry run: state file left as it is");
    return Status::Ok();
  }
  return Persist();
}

void LeaseTable::Start() {
  if (watcher_.joinable()) return;
  stop_ = false;
  watcher_ = std::thread([this] { WatchLoop(); });
}

void LeaseTable::Shutdown() {
  if (watcher_.joinable()) {
    stop_ = true;
    uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) < 0) {
      // The watcher also wakes every 100 ms.
    }
    watcher_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<pid_t, uint64_t>> holders;
  for (const auto& [gpu, lease] : leases_) {
    holders.emplace_back(lease.record.pid, lease.record.start_time);
  }
  for (const auto& [pid, start] : holders) ReleaseLocked(pid, start, "the daemon is stopping");
  for (auto& [key, fd] : watched_) {
    if (fd >= 0) close(fd);
  }
  watched_.clear();
}

void LeaseTable::PauseIfAsked(const std::string& point) {
  if (options_.pause_at != point) return;
  spdlog::warn("zeus daemon: test hook: pausing forever {}", point);
  if (!options_.pause_marker.empty()) {
    int fd = open(options_.pause_marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  while (true) pause();
}

void LeaseTable::WatchLocked(const Peer& peer) {
  const pid_t pid = peer.pid;
  if (pid == kTcpHolderPid) return;  // No process to watch.
  const auto key = std::make_pair(pid, peer.start_time);
  if (watched_.count(key) > 0) return;
  // The connection's own pidfd names exactly the client; pidfd_open of its
  // pid is the fallback.
  int fd = peer.process != nullptr ? fcntl(peer.process->fd, F_DUPFD_CLOEXEC, 0) : -1;
  if (fd < 0) fd = PidfdOpen(pid);
  if (fd < 0 && errno != ENOSYS) {
    // Gone already (ESRCH): the watcher's /proc check releases it at once.
    fd = -1;
  }
  watched_[key] = fd;
  uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    // The watcher also wakes every 100 ms.
  }
}

Status LeaseTable::ApplyOne(const Peer& peer, int index, const Change& change) {
  Gpu* gpu = gpus_[static_cast<size_t>(index)];
  const std::string name = GpuName(index);
  if (change.setting == Setting::kPowerLimit) {
    ZEUS_ASSIGN_OR_RETURN(PowerLimitConstraints range, gpu->PowerLimitConstraintsMw());
    if (change.value < range.min_mw || change.value > range.max_mw) {
      return InvalidArgumentError(
          "power_limit_mw " + std::to_string(change.value) + " is outside " + name + "'s range [" +
          std::to_string(range.min_mw) + ", " + std::to_string(range.max_mw) + "] mW");
    }
  }
  auto it = leases_.find(index);
  const bool new_lease = it == leases_.end();
  Lease& lease = leases_[index];
  if (new_lease) {
    lease.record.gpu = index;
    lease.record.pid = peer.pid;
    lease.record.uid = peer.uid;
    lease.record.start_time = peer.start_time;
  }
  lease.last_seen = std::chrono::steady_clock::now();
  bool recorded_now = false;
  if (change.setting == Setting::kPowerLimit && !lease.record.original_power_limit_mw) {
    StatusOr<uint32_t> before = gpu->PowerLimitMw();
    if (!before.ok()) {
      if (new_lease) leases_.erase(index);
      return before.status().WithContext("reading the power limit to put back later");
    }
    lease.record.original_power_limit_mw = *before;
    recorded_now = true;
  }
  if (change.setting == Setting::kPersistenceMode && !lease.record.original_persistence_mode) {
    StatusOr<bool> before = gpu->PersistenceMode();
    if (!before.ok()) {
      if (new_lease) leases_.erase(index);
      return before.status().WithContext("reading the persistence mode to put back later");
    }
    lease.record.original_persistence_mode = *before;
    recorded_now = true;
  }
  if (change.setting == Setting::kGpuLockedClocks && !lease.record.reset_gpu_locked_clocks) {
    lease.record.reset_gpu_locked_clocks = true;
    recorded_now = true;
  }
  if (change.setting == Setting::kMemLockedClocks && !lease.record.reset_mem_locked_clocks) {
    lease.record.reset_mem_locked_clocks = true;
    recorded_now = true;
  }
  // Forgets what was recorded just now (nothing was changed).
  auto undo_record = [&] {
    if (new_lease) {
      leases_.erase(index);
    } else if (change.setting == Setting::kPowerLimit) {
      lease.record.original_power_limit_mw.reset();
    } else if (change.setting == Setting::kPersistenceMode) {
      lease.record.original_persistence_mode.reset();
    } else if (change.setting == Setting::kGpuLockedClocks) {
      lease.record.reset_gpu_locked_clocks = false;
    } else {
      lease.record.reset_mem_locked_clocks = false;
    }
  };
  if (recorded_now) {
    Status persisted = Persist();
    if (!persisted.ok()) {
      undo_record();
      return persisted;
    }
    PauseIfAsked("after_record");
  }
  Status changed;
  std::string what;
  switch (change.setting) {
    case Setting::kPowerLimit:
      changed = gpu->SetPowerLimitMw(change.value);
      what = "power limit " + std::to_string(change.value) + " mW";
      break;
    case Setting::kPersistenceMode:
      changed = gpu->SetPersistenceMode(change.value != 0);
      what = std::string("persistence mode ") + (change.value != 0 ? "on" : "off");
      break;
    case Setting::kGpuLockedClocks:
    case Setting::kMemLockedClocks: {
      const bool memory = change.setting == Setting::kMemLockedClocks;
      if (change.reset && change.whole_range_if_needed) {
        changed = UnlockClocks(*gpu, memory);
      } else if (change.reset) {
        changed = memory ? gpu->ResetMemoryLockedClocks() : gpu->ResetGpuLockedClocks();
      } else {
        changed = memory ? gpu->SetMemoryLockedClocksMhz(change.value, change.max_value)
                         : gpu->SetGpuLockedClocksMhz(change.value, change.max_value);
      }
      what = std::string(memory ? "memory" : "graphics") + " clocks " +
             (change.reset ? "unlocked"
                           : "locked to " + std::to_string(change.value) + "-" +
                                 std::to_string(change.max_value) + " MHz");
      break;
    }
  }
  if (!changed.ok()) {
    if (recorded_now) {
      undo_record();
      Status persisted = Persist();
      if (!persisted.ok()) spdlog::error("zeus daemon: {}", persisted.ToString());
    }
    return changed;
  }
  spdlog::info("zeus daemon: {}: {} for {}{}", name, what, peer.description,
               options_.dry_run ? " (dry run: logged only)" : "");
  PauseIfAsked("after_change");
  WatchLocked(peer);
  return Status::Ok();
}

std::vector<Status> LeaseTable::Apply(const Peer& peer, const std::vector<int>& gpus,
                                      const Change& change) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Status> results(gpus.size());
  bool refused = false;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int index = gpus[i];
    if (index < 0 || index >= gpu_count()) {
      results[i] = NotFoundError(GpuName(index) + " does not exist (this daemon has " +
                                 std::to_string(gpu_count()) + " GPUs)");
      refused = true;
      continue;
    }
    auto it = leases_.find(index);
    if (it == leases_.end()) continue;
    const LeaseRecord& held = it->second.record;
    if (!it->second.orphaned && (held.pid != peer.pid || held.start_time != peer.start_time) &&
        Ended(held.pid, held.start_time)) {
      // Ended since the watcher's last look: put its settings back now.
      ReleaseLocked(held.pid, held.start_time, "the process ended");
      it = leases_.find(index);
      if (it == leases_.end()) continue;
    }
    const LeaseRecord& holder = it->second.record;
    if (it->second.orphaned) {
      results[i] = FailedPreconditionError(GpuName(index) + " still has settings of ended " +
                                           HolderName(holder) +
                                           " that could not be put back yet; try again later");
      refused = true;
    } else if (holder.pid != peer.pid || holder.start_time != peer.start_time) {
      results[i] = FailedPreconditionError(
          GpuName(index) + " is held by " + HolderName(holder) +
          "; its settings come back when that process ends, then the GPU is free");
      refused = true;
    }
  }
  if (refused) {
    for (Status& s : results) {
      if (s.ok()) s = AbortedError("not applied: another GPU of the request was refused");
    }
    return results;
  }
  for (size_t i = 0; i < gpus.size(); ++i) results[i] = ApplyOne(peer, gpus[i], change);
  return results;
}

void LeaseTable::Touch(const Peer& peer) {
  // A TCP peer (pid 0) renews the TCP clients' lease.
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& [gpu, lease] : leases_) {
    if (lease.record.pid == peer.pid && lease.record.start_time == peer.start_time) {
      lease.last_seen = now;
    }
  }
}

int LeaseTable::Release(const Peer& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  int held = 0;
  for (const auto& [gpu, lease] : leases_) {
    if (lease.record.pid == peer.pid && lease.record.start_time == peer.start_time) ++held;
  }
  ReleaseLocked(peer.pid, peer.start_time, "it released its lease");
  return held;
}

void LeaseTable::ReleaseLocked(pid_t pid, uint64_t start_time, const std::string& why) {
  bool changed = false;
  for (auto it = leases_.begin(); it != leases_.end();) {
    Lease& lease = it->second;
    if (lease.record.pid != pid || lease.record.start_time != start_time) {
      ++it;
      continue;
    }
    Status restored = RestoreLease(lease);
    if (restored.ok() || restored.code() == StatusCode::kNotFound) {
      spdlog::info("zeus daemon: {}: put back the settings of {} ({})", GpuName(it->first),
                   HolderName(lease.record), why);
      it = leases_.erase(it);
      changed = true;
    } else {
      if (!lease.orphaned) {
        spdlog::error("zeus daemon: {}: cannot put back the settings of {} ({}): {}; will retry",
                      GpuName(it->first), HolderName(lease.record), why, restored.ToString());
      }
      lease.orphaned = true;
      ++it;
    }
  }
  if (changed) {
    Status persisted = Persist();
    if (!persisted.ok()) spdlog::error("zeus daemon: {}", persisted.ToString());
  }
  bool still_held = false;
  for (const auto& [gpu, lease] : leases_) {
    still_held |= lease.record.pid == pid && lease.record.start_time == start_time;
  }
  auto watched = watched_.find({pid, start_time});
  if (!still_held && watched != watched_.end()) {
    if (watched->second >= 0) close(watched->second);
    watched_.erase(watched);
  }
}

std::vector<LeaseRecord> LeaseTable::Records() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LeaseRecord> out;
  for (const auto& [gpu, lease] : leases_) out.push_back(lease.record);
  return out;
}

void LeaseTable::Sweep(const std::vector<std::pair<pid_t, uint64_t>>& ended) {
  std::lock_guard<std::mutex> lock(mu_);
  // The copy may be stale: a release closed the pidfd since (its number then
  // polls as invalid, or as whatever reused it) and the client may hold a
  // new lease already.
  for (const auto& key : ended) {
    if (PidfdSaysEndedLocked(key)) ReleaseLocked(key.first, key.second, "the process ended");
  }
  // Clients without a pidfd, and pidfds opened after the process ended.
  std::vector<std::pair<pid_t, uint64_t>> gone;
  for (const auto& [key, fd] : watched_) {
    if (fd < 0 && Ended(key.first, key.second)) gone.push_back(key);
  }
  for (const auto& [pid, start] : gone) ReleaseLocked(pid, start, "the process ended");
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<pid_t, uint64_t>> expired;
  std::vector<std::pair<pid_t, uint64_t>> orphans;
  for (const auto& [gpu, lease] : leases_) {
    const auto key = std::make_pair(lease.record.pid, lease.record.start_time);
    if (lease.orphaned) {
      orphans.push_back(key);
    } else if (options_.lease_timeout.count() > 0 &&
               now - lease.last_seen > options_.lease_timeout) {
      expired.push_back(key);
    }
  }
  for (const auto& [pid, start] : expired) {
    ReleaseLocked(pid, start,
                  "its lease timed out after " + std::to_string(options_.lease_timeout.count()) +
                      " ms without a request");
  }
  for (const auto& [pid, start] : orphans) ReleaseLocked(pid, start, "retry");
}

bool LeaseTable::PidfdSaysEndedLocked(const std::pair<pid_t, uint64_t>& key) const {
  auto it = watched_.find(key);
  if (it == watched_.end() || it->second < 0) return false;
  pollfd p{it->second, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

void LeaseTable::WatchLoop() {
  auto last_retry = std::chrono::steady_clock::now();
  while (!stop_) {
    std::vector<pollfd> fds;
    std::vector<std::pair<pid_t, uint64_t>> keys;
    fds.push_back({wake_fd_, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [key, fd] : watched_) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        keys.push_back(key);
      }
    }
    if (options_.before_watch_poll) options_.before_watch_poll(fds.size() - 1);
    const int ready = poll(fds.data(), fds.size(), 100);
    if (stop_) break;
    if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t value = 0;
      if (read(wake_fd_, &value, sizeof(value)) < 0) {
        // Nothing to drain.
      }
    }
    std::vector<std::pair<pid_t, uint64_t>> ended;
    for (size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        ended.push_back(keys[i - 1]);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!ended.empty() || options_.lease_timeout.count() > 0 ||
        now - last_retry > std::chrono::milliseconds(100)) {
      Sweep(ended);
      last_retry = now;
    }
  }
}

}  // namespace zeus::daemon
