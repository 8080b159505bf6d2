// Who is on the other end of an HTTP connection: a TCP client's address, or
// the peer credentials the kernel records for a Unix socket (SO_PEERCRED),
// plus what /proc says about that process (start time, supplementary groups),
// taken by the transport when it accepts the connection.
//
// Thread-safety: free functions, no shared state.

#ifndef ZEUS_HTTP_PEER_H_
#define ZEUS_HTTP_PEER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/status.h"

namespace zeus {

// A pidfd (pidfd_open(2), Linux 5.3; SO_PEERPIDFD, Linux 6.5): names one
// process for as long as it is open, pid reuse or not, and polls readable
// once that process has exited. Closed on destruction.
struct ProcessHandle {
  explicit ProcessHandle(int pidfd) : fd(pidfd) {}
  ~ProcessHandle();
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  const int fd;
};

struct Peer {
  // False for a TCP client: the daemon does not know its process, and none of
  // the fields below are meaningful.
  bool local = false;
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  // /proc/<pid>/stat field 22 (clock ticks after boot): with the pid, names
  // one process even after its pid is reused. 0 when unknown.
  uint64_t start_time = 0;
  // Supplementary groups (/proc/<pid>/status "Groups:"), read at connect.
  std::vector<gid_t> groups;
  // "pid 1234 (uid 1000)" or "a TCP client at 127.0.0.1:5555".
  std::string description;
  // The process that opened the connection, taken when it was accepted
  // (shared by the copies of this Peer). Null for TCP, when the kernel has
  // no pidfds, or when that process was gone already (`gone_at_accept`).
  std::shared_ptr<const ProcessHandle> process;
  bool gone_at_accept = false;

  bool InGroup(gid_t group) const;
  // True when the process that opened the connection has exited (SIGKILL
  // and zombies included), so a request on it comes from a process that
  // inherited the connection and cannot hold a lease. Through the pidfd; without
  // one, by the start time in /proc (a reused pid has another). Cheap: one
  // poll(2) with a zero timeout. False for TCP peers.
  bool Exited() const;
};

// The credentials of the process that connected Unix socket `fd`, with a
// pidfd of that process (SO_PEERPIDFD where the kernel has it, which names
// exactly the connecting process; else pidfd_open of its pid).
// kIoError when getsockopt(SO_PEERCRED) fails.
StatusOr<Peer> PeerOfUnixSocket(int fd);

// The start time of `pid` (see Peer::start_time); kNotFound when the process
// is gone or a zombie (it has exited: its settings must come back).
StatusOr<uint64_t> ProcessStartTime(pid_t pid);

}  // namespace zeus

#endif  // ZEUS_HTTP_PEER_H_
