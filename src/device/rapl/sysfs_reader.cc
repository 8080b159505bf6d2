#include "src/device/rapl/sysfs_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/stat.h>

namespace zeus::rapl {
namespace {

// A sysfs attribute is one page at most.
constexpr size_t kMaxBytes = 4096;

class PosixSysfsReader final : public SysfsReader {
 public:
  StatusOr<std::string> Read(const std::string& path) override {
    // O_NONBLOCK: a FIFO planted in the tree does not make open wait for a
    // writer; it is refused below with every file that is not a regular one
    // (/dev/zero too), and a regular one is read up to kMaxBytes only.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ErrnoStatus(path, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return FailedPreconditionError(path + ": not a regular file (" +
                                     (S_ISFIFO(st.st_mode)  ? "a FIFO"
                                      : S_ISDIR(st.st_mode) ? "a directory"
                                      : S_ISCHR(st.st_mode) ? "a character device"
                                                            : "another kind of file") +
                                     "); a powercap attribute is one");
    }
    std::string contents;
    char buffer[256];
    while (contents.size() <= kMaxBytes) {
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
    if (contents.size() > kMaxBytes) {
      return FailedPreconditionError(path + ": more than " + std::to_string(kMaxBytes) +
                                     " bytes; a powercap attribute holds one number or name");
    }
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
