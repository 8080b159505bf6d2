// One daemon per state file and per socket. Two daemons sharing either would
// undo each other: the second "recovers" the first's live leases as if it had
// crashed and rewrites the state file from its own table, so an original
// value is lost. The daemon therefore holds an exclusive lock beside its
// state file for its whole life, and never replaces a socket that a live
// process still answers on.
//
// Thread-safety: free functions and a move-only handle; no shared state.

#ifndef ZEUS_SRC_DAEMON_SINGLE_INSTANCE_H_
#define ZEUS_SRC_DAEMON_SINGLE_INSTANCE_H_

#include <string>

#include <sys/stat.h>

#include "zeus/status.h"

namespace zeus::daemon {

// An exclusive flock(2) on `<state file>.lock`, held until destruction (or
// the process's end, however it ends: the kernel drops the lock with the
// last descriptor). The file holds the holder's pid, for the messages of the
// daemons it turns away; it is left in place (removing it would race with a
// daemon opening it).
class StateFileLock {
 public:
  StateFileLock() = default;
  ~StateFileLock();
  StateFileLock(StateFileLock&& other) noexcept;
  StateFileLock& operator=(StateFileLock&& other) noexcept;
  StateFileLock(const StateFileLock&) = delete;
  StateFileLock& operator=(const StateFileLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  friend StatusOr<StateFileLock> LockStateFile(const std::string& state_file);
  int fd_ = -1;
  std::string path_;
};

// The lock path for `state_file`: the same directory, ".lock" appended.
std::string StateLockPath(const std::string& state_file);

// Takes the lock of `state_file`. kFailedPrecondition naming the other
// daemon's pid (when its lock file names one) while another process holds
// it; kIoError naming the path when the lock file cannot be opened (it is
// opened with O_NOFOLLOW: a symlink planted there is refused).
StatusOr<StateFileLock> LockStateFile(const std::string& state_file);

// Checks that the directory holding `state_file` can keep the daemon's state
// safely: owned by the daemon's effective user or root, and writable by
// nobody else (no group or other write bit), so nobody can plant a file or a
// symlink where the daemon writes. kFailedPrecondition naming the directory,
// its owner or mode and the fix; kIoError when it cannot be examined.
Status CheckStateDirectory(const std::string& state_file);
// The same check on the status `st` of directory `dir` (named in messages).
Status CheckStateDirectoryStat(const std::string& dir, const struct stat& st);

// Makes `socket_path` free to bind: nothing there, or a socket nobody
// listens on any more (connect() refused: left by a daemon that crashed),
// which is removed. kFailedPrecondition when a process answers there (naming
// its pid when the kernel reports it) or the path is not a socket; nothing is
// removed then.
Status ClaimSocketPath(const std::string& socket_path);

}  // namespace zeus::daemon

#endif  // ZEUS_SRC_DAEMON_SINGLE_INSTANCE_H_
