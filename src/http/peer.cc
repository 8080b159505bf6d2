#include "zeus/http/peer.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include <sys/socket.h>
#include <sys/syscall.h>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus {

ProcessHandle::~ProcessHandle() {
  if (fd >= 0) close(fd);
}

bool Peer::Exited() const {
  if (!local) return false;
  if (gone_at_accept) return true;
  if (process != nullptr) {
    pollfd p{process->fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0;
  }
  StatusOr<uint64_t> now = ProcessStartTime(pid);
  return !now.ok() || (start_time != 0 && *now != start_time);
}

bool Peer::InGroup(gid_t group) const {
  return gid == group || std::find(groups.begin(), groups.end(), group) != groups.end();
}

StatusOr<uint64_t> ProcessStartTime(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  StatusOr<std::string> stat = ReadFileToString(path);
  if (!stat.ok()) return NotFoundError("process " + std::to_string(pid) + " is gone");
  // The command name (field 2) may hold spaces and parentheses: fields 3 and
  // on start after the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return NotFoundError(path + ": unexpected format");
  std::istringstream fields(stat->substr(close + 1));
  std::string field;
  // Field 3 is the state; 'Z' (zombie) and 'X' (dead) have exited.
  fields >> field;
  if (field == "Z" || field == "X") {
    return NotFoundError("process " + std::to_string(pid) + " has exited");
  }
  for (int i = 4; i <= 22; ++i) fields >> field;
  StatusOr<uint64_t> start = ParseUint64(field);
  if (!start.ok()) return NotFoundError(path + ": unexpected start time");
  return *start;
}

namespace {

std::vector<gid_t> SupplementaryGroups(pid_t pid) {
  std::vector<gid_t> groups;
  StatusOr<std::string> status = ReadFileToString("/proc/" + std::to_string(pid) + "/status");
  if (!status.ok()) return groups;
  std::istringstream lines(*status);
  std::string line;
  while (std::getline(lines, line)) {
    if (!StartsWith(line, "Groups:")) continue;
    std::istringstream ids(line.substr(7));
    uint64_t id = 0;
    while (ids >> id) groups.push_back(static_cast<gid_t>(id));
  }
  return groups;
}

}  // namespace

StatusOr<Peer> PeerOfUnixSocket(int fd) {
  ucred cred{};
  socklen_t length = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return IoError(std::string("getsockopt(SO_PEERCRED): ") + std::strerror(errno));
  }
  Peer peer;
  peer.local = true;
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.gid = cred.gid;
  // The pidfd first, then the start time: both then name the same process.
  int pidfd = -1;
#ifndef SO_PEERPIDFD
  constexpr int SO_PEERPIDFD = 77;  // Linux 6.5.
#endif
  socklen_t pidfd_length = sizeof(pidfd);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &pidfd_length) != 0) {
    pidfd = -1;
    if (errno == ESRCH) {
      peer.gone_at_accept = true;
    } else {
#ifdef SYS_pidfd_open
      pidfd = static_cast<int>(syscall(SYS_pidfd_open, cred.pid, 0));
      if (pidfd < 0 && errno == ESRCH) peer.gone_at_accept = true;
#endif
    }
  }
  if (pidfd >= 0) peer.process = std::make_shared<const ProcessHandle>(pidfd);
  StatusOr<uint64_t> start = ProcessStartTime(cred.pid);
  peer.start_time = start.ok() ? *start : 0;
  peer.groups = SupplementaryGroups(cred.pid);
  peer.description = "pid " + std::to_string(cred.pid) + " (uid " + std::to_string(cred.uid) + ")";
  return peer;
}

}  // namespace zeus
