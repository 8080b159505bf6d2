#include "src/daemon/single_instance.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "zeus/util/strings.h"

namespace zeus::daemon {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string OctalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned int>(mode & 07777));
  return text;
}

// The pid written in the lock file at `fd`, or "" when it names none.
std::string PidInLockFile(int fd) {
  char buffer[32] = {};
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  StatusOr<uint64_t> pid = ParseUint64(Trim(std::string(buffer, static_cast<size_t>(n))));
  return pid.ok() && *pid > 0 ? std::to_string(*pid) : "";
}

}  // namespace

StateFileLock::~StateFileLock() {
  if (fd_ >= 0) close(fd_);
}

StateFileLock::StateFileLock(StateFileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

StateFileLock& StateFileLock::operator=(StateFileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::string StateLockPath(const std::string& state_file) { return state_file + ".lock"; }

StatusOr<StateFileLock> LockStateFile(const std::string& state_file) {
  StateFileLock lock;
  lock.path_ = StateLockPath(state_file);
  lock.fd_ = open(lock.path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock.fd_ < 0) {
    return IoError(
        lock.path_ + ": cannot open the daemon's lock file: " + ErrnoText() +
        (errno == ELOOP ? " (it is a symlink; the daemon does not follow one there)" : ""));
  }
  struct stat st {};
  if (fstat(lock.fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    return FailedPreconditionError(lock.path_ + ": the daemon's lock file is not a regular file");
  }
  if (flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return IoError(lock.path_ + ": flock: " + ErrnoText());
    const std::string pid = PidInLockFile(lock.fd_);
    return FailedPreconditionError(
        "another zeus daemon" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
        " holds the state file " + state_file + " (lock " + lock.path_ +
        "); refusing to start: two daemons on one state file would undo each other's records. "
        "Stop that daemon first, or give this one its own --state-file and --socket");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(lock.fd_, 0) != 0 ||
      pwrite(lock.fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return IoError(lock.path_ + ": cannot write the daemon's pid: " + ErrnoText());
  }
  return lock;
}

Status CheckStateDirectory(const std::string& state_file) {
  const std::string dir = DirectoryOf(state_file);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    return IoError(dir + ": the state file's directory: " + ErrnoText());
  }
  return CheckStateDirectoryStat(dir, st);
}

Status CheckStateDirectoryStat(const std::string& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(dir + ": not a directory");
  const uid_t self = geteuid();
  if (st.st_uid != self && st.st_uid != 0) {
    return FailedPreconditionError(
        dir + ": the state file's directory is owned by uid " + std::to_string(st.st_uid) +
        ", not by the daemon's user (uid " + std::to_string(self) +
        ") or root; refusing to keep the daemon's state where another user can replace it");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return FailedPreconditionError(
        dir + ": the state file's directory is writable by " +
        ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " + OctalMode(st.st_mode) +
        "); refusing to keep the daemon's state where others can plant files or symlinks "
        "(chmod go-w " +
        dir + ", or choose another --state-file)");
  }
  return Status::Ok();
}

Status ClaimSocketPath(const std::string& socket_path) {
  struct stat st {};
  if (lstat(socket_path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(socket_path + ": " + ErrnoText());
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPreconditionError(socket_path + ": exists and is not a socket; not replacing it");
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) {
    return InvalidArgumentError(socket_path + ": longer than a Unix socket path may be (" +
                                std::to_string(sizeof(address.sun_path) - 1) + " bytes)");
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError("socket(AF_UNIX): " + ErrnoText());
  const int rc = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int connect_errno = rc == 0 ? 0 : errno;
  std::string holder;
  if (rc == 0) {
    ucred cred{};
    socklen_t length = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 && cred.pid > 0) {
      holder = " (pid " + std::to_string(cred.pid) + ")";
    }
  }
  close(fd);
  if (connect_errno == ECONNREFUSED) {
    // Nobody listens: a socket left by a daemon that did not stop cleanly.
    if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
      return IoError(socket_path + ": cannot remove the stale socket: " + ErrnoText());
    }
    return Status::Ok();
  }
  if (connect_errno == ENOENT) return Status::Ok();  // Removed meanwhile.
  if (connect_errno == 0 || connect_errno == EAGAIN) {
    return FailedPreconditionError(
        "another daemon" + holder + " answers on " + socket_path +
        "; refusing to start (replacing its socket would take over its clients). Stop it "
        "first, or choose another --socket");
  }
  return FailedPreconditionError(socket_path + ": cannot tell whether a daemon answers there (" +
                                 std::strerror(connect_errno) + "); not replacing it");
}

}  // namespace zeus::daemon
