#include "src/device/rapl/sysfs_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zeus::rapl {
namespace {

class PosixSysfsReader final : public SysfsReader {
 public:
  StatusOr<std::string> Read(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(path, errno);
    std::string contents;
    char buffer[256];
    while (true) {
      ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return ErrnoStatus(path, err);
      }
      if (n == 0) break;
      contents.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return contents;
  }
};

}  // namespace

SysfsReader* RealSysfsReader() {
  static PosixSysfsReader* const reader = new PosixSysfsReader();
  return reader;
}

Status ErrnoStatus(const std::string& path, int err) {
  std::string message = path + ": " + std::strerror(err);
  if (err == ENOENT) return NotFoundError(message);
  if (err == EACCES || err == EPERM) return PermissionDeniedError(message);
  return IoError(message);
}

}  // namespace zeus::rapl
