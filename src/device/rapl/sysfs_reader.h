// Reading small sysfs files, behind an interface so tests can inject
// failures the file system cannot produce for root (EACCES on energy_uj).
//
// Thread-safety: implementations must allow concurrent Read calls.

#ifndef ZEUS_SRC_DEVICE_RAPL_SYSFS_READER_H_
#define ZEUS_SRC_DEVICE_RAPL_SYSFS_READER_H_

#include <string>

#include "zeus/status.h"

namespace zeus::rapl {

class SysfsReader {
 public:
  virtual ~SysfsReader() = default;
  // The whole content of the file at `path`. kNotFound (ENOENT),
  // kPermissionDenied (EACCES, EPERM), kFailedPrecondition for a file that
  // is not a regular one (a FIFO, a device: never waited on) or holds more
  // than 4096 bytes, or kIoError, each naming the path.
  virtual StatusOr<std::string> Read(const std::string& path) = 0;
};

// Reads through open(2)/read(2). Stateless; never null; lives for the whole
// process.
SysfsReader* RealSysfsReader();

// The Status for a failed system call on `path` with errno `err`.
Status ErrnoStatus(const std::string& path, int err);

}  // namespace zeus::rapl

#endif  // ZEUS_SRC_DEVICE_RAPL_SYSFS_READER_H_
