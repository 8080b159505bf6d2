// The daemon's durable record of what it changed: for every GPU a client
// holds, who holds it and the values from before that client's first change.
// Written before any device changes (so a crash at any point leaves enough to
// put the device back) and read at start-up.
//
// Thread-safety: free functions; callers serialise writes to one path.

#ifndef ZEUS_SRC_DAEMON_STATE_FILE_H_
#define ZEUS_SRC_DAEMON_STATE_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/status.h"

namespace zeus::daemon {

// One GPU held by one client.
struct LeaseRecord {
  // The daemon's GPU index.
  int gpu = 0;
  // The holder (see Peer).
  pid_t pid = 0;
  uid_t uid = 0;
  uint64_t start_time = 0;
  // The values before the holder's first change of each setting; nullopt for
  // a setting it has not changed.
  std::optional<uint32_t> original_power_limit_mw;
  std::optional<bool> original_persistence_mode;
  // The holder locked (or reset) the graphics / memory clocks: they are reset
  // (unlocked) when it ends. NVML cannot report a locked range to restore.
  bool reset_gpu_locked_clocks = false;
  bool reset_mem_locked_clocks = false;
};

// Reads the records at `path`. A missing file is an empty list; a malformed
// one is kInvalidArgument naming the file and the problem (the daemon then
// refuses to start rather than forget what it changed).
StatusOr<std::vector<LeaseRecord>> LoadLeaseRecords(const std::string& path);

// Replaces the file at `path` with `records`, durably: a temporary file
// `<path>.tmp` is created with O_CREAT|O_EXCL|O_NOFOLLOW (never written
// through a file or symlink found there: a leftover is removed, not
// followed), written and fsync'ed, renamed over `path`, and the directory
// fsync'ed. A crash leaves either the old or the new list. The directory must
// pass CheckStateDirectory (owned by the daemon's user or root, writable by
// nobody else): kFailedPrecondition naming it otherwise; kIoError naming the
// step that failed.
Status SaveLeaseRecords(const std::string& path, const std::vector<LeaseRecord>& records);

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_STATE_FILE_H_
