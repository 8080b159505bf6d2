#include "zeus/util/file.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace zeus {

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
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(tmp + ": cannot open for writing: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) return IoError(tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return IoError(path + ": rename from " + tmp + " failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

StatusOr<std::string> ExecutableDir() {
  char buffer[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (length <= 0) return NotFoundError(std::string("/proc/self/exe: ") + std::strerror(errno));
  std::string path(buffer, static_cast<size_t>(length));
  return path.substr(0, path.find_last_of('/'));
}

}  // namespace zeus
