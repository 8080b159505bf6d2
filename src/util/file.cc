#include "zeus/util/file.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <sys/stat.h>

namespace zeus {

namespace {

// Every failure to write is kIoError (callers report it as such).
Status ErrnoError(int err, const std::string& message) {
  return IoError(message + ": " + std::strerror(err));
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError(n < 0 ? errno : EIO, path + ": write failed");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return InvalidArgumentError(path + ": is a directory, expected a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string message = path + ": " + std::strerror(err);
    if (err == ENOENT) return NotFoundError(message);
    if (err == EACCES || err == EPERM) return PermissionDeniedError(message);
    return IoError(message);
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return buffer.str();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const size_t slash = path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) return InvalidArgumentError(path + ": names a directory, expected a file");
  // Every step is relative to this descriptor: the directory checked is the
  // one written, whatever happens to the path meanwhile.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError(errno, path + ": cannot open directory " + dir);
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_dir{dir_fd};
  // A name of this process's own (pid, a counter, random bits), created with
  // O_CREAT|O_EXCL|O_NOFOLLOW: never a file or symlink someone else put
  // there, and never the temporary of another writer of the same path.
  static std::atomic<uint64_t> counter{0};
  std::random_device entropy;
  std::string tmp_base;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp_base = "." + base + ".tmp." + std::to_string(::getpid()) + "." +
               std::to_string(counter.fetch_add(1)) + "." + std::to_string(entropy());
    fd = ::openat(dir_fd, tmp_base.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  const std::string tmp = dir + "/" + tmp_base;
  if (fd < 0) return ErrnoError(errno, tmp + ": cannot create for writing");
  Status written = WriteAll(fd, contents, tmp);
  if (written.ok() && ::fsync(fd) != 0) written = ErrnoError(errno, tmp + ": fsync failed");
  if (::close(fd) != 0 && written.ok()) written = ErrnoError(errno, tmp + ": close failed");
  if (written.ok() && ::renameat(dir_fd, tmp_base.c_str(), dir_fd, base.c_str()) != 0) {
    written = ErrnoError(errno, path + ": rename from " + tmp + " failed");
  }
  if (!written.ok()) ::unlinkat(dir_fd, tmp_base.c_str(), 0);
  return written;
}

StatusOr<std::string> ExecutableDir() {
  char buffer[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (length <= 0) return NotFoundError(std::string("/proc/self/exe: ") + std::strerror(errno));
  std::string path(buffer, static_cast<size_t>(length));
  return path.substr(0, path.find_last_of('/'));
}

}  // namespace zeus
