#include "src/daemon/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "zeus/util/file.h"
#include "zeus/util/json.h"

#include "src/daemon/single_instance.h"

namespace zeus::daemon {
namespace {

constexpr int kVersion = 1;

Status StateFileErrno(const std::string& what) {
  return IoError(what + ": " + std::strerror(errno));
}

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return StateFileErrno(path + ": write");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<LeaseRecord>> LoadLeaseRecords(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::vector<LeaseRecord>{};
    return text.status();
  }
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(*text, path));
  ZEUS_ASSIGN_OR_RETURN(JsonFields top, JsonFields::Of(doc, path, {"version", "leases"}));
  ZEUS_ASSIGN_OR_RETURN(int64_t version, top.Int("version", kVersion, kVersion));
  (void)version;
  ZEUS_ASSIGN_OR_RETURN(const nlohmann::json* leases, top.Array("leases"));
  std::vector<LeaseRecord> records;
  for (size_t i = 0; i < leases->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(JsonFields f, top.Element("leases", i));
    LeaseRecord r;
    ZEUS_ASSIGN_OR_RETURN(int64_t gpu, f.Int("gpu", 0, 1 << 20));
    ZEUS_ASSIGN_OR_RETURN(int64_t pid, f.Int("pid", 0, JsonFields::kMaxInt));
    ZEUS_ASSIGN_OR_RETURN(int64_t uid, f.Int("uid", 0, JsonFields::kMaxInt));
    ZEUS_ASSIGN_OR_RETURN(std::optional<uint64_t> start, f.OptionalUint64("start_time"));
    ZEUS_ASSIGN_OR_RETURN(std::optional<int64_t> limit,
                          f.OptionalInt("original_power_limit_mw", 0, UINT32_MAX));
    ZEUS_ASSIGN_OR_RETURN(r.original_persistence_mode, f.OptionalBool("original_persistence_mode"));
    ZEUS_ASSIGN_OR_RETURN(std::optional<bool> gpu_clocks,
                          f.OptionalBool("reset_gpu_locked_clocks"));
    ZEUS_ASSIGN_OR_RETURN(std::optional<bool> mem_clocks,
                          f.OptionalBool("reset_mem_locked_clocks"));
    r.reset_gpu_locked_clocks = gpu_clocks.value_or(false);
    r.reset_mem_locked_clocks = mem_clocks.value_or(false);
    r.gpu = static_cast<int>(gpu);
    r.pid = static_cast<pid_t>(pid);
    r.uid = static_cast<uid_t>(uid);
    r.start_time = start.value_or(0);
    if (limit) r.original_power_limit_mw = static_cast<uint32_t>(*limit);
    records.push_back(r);
  }
  return records;
}

Status SaveLeaseRecords(const std::string& path, const std::vector<LeaseRecord>& records) {
  nlohmann::json leases = nlohmann::json::array();
  for (const LeaseRecord& r : records) {
    nlohmann::json j = {
        {"gpu", r.gpu}, {"pid", r.pid}, {"uid", r.uid}, {"start_time", r.start_time}};
    if (r.original_power_limit_mw) j["original_power_limit_mw"] = *r.original_power_limit_mw;
    if (r.original_persistence_mode) j["original_persistence_mode"] = *r.original_persistence_mode;
    if (r.reset_gpu_locked_clocks) j["reset_gpu_locked_clocks"] = true;
    if (r.reset_mem_locked_clocks) j["reset_mem_locked_clocks"] = true;
    leases.push_back(j);
  }
  const std::string text = nlohmann::json{{"version", kVersion}, {"leases", leases}}.dump(2) + "\n";
  const std::string tmp = path + ".tmp";
  const size_t slash = path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp_base = base + ".tmp";
  // Every step below is relative to this descriptor: the directory checked
  // is the one written, whatever happens to the path meanwhile.
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return StateFileErrno("cannot write " + tmp + ": open " + dir);
  struct CloseDir {
    int fd;
    ~CloseDir() { close(fd); }
  } close_dir{dir_fd};
  struct stat st {};
  if (fstat(dir_fd, &st) != 0) return StateFileErrno(dir + ": fstat");
  ZEUS_RETURN_IF_ERROR(CheckStateDirectoryStat(dir, st));
  // O_EXCL|O_NOFOLLOW: never writes through a file or symlink someone else
  // put there. A leftover of an earlier crash (the directory is the daemon's
  // own, so only the daemon leaves one) is removed once, never followed.
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dir_fd, tmp_base.c_str(), flags, 0600);
  if (fd < 0 && errno == EEXIST) {
    struct stat left {};
    const bool is_link =
        fstatat(dir_fd, tmp_base.c_str(), &left, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(left.st_mode);
    spdlog::warn("zeus daemon: {}: removing a leftover {} (not following it)", tmp,
                 is_link ? "symlink" : "file");
    if (unlinkat(dir_fd, tmp_base.c_str(), 0) != 0 && errno != ENOENT) {
      return StateFileErrno(tmp + ": cannot remove the leftover temporary file");
    }
    fd = openat(dir_fd, tmp_base.c_str(), flags, 0600);
  }
  if (fd < 0) return StateFileErrno(tmp + ": open");
  Status written = WriteAll(fd, text, tmp);
  if (written.ok() && fsync(fd) != 0) written = StateFileErrno(tmp + ": fsync");
  close(fd);
  if (!written.ok()) {
    unlinkat(dir_fd, tmp_base.c_str(), 0);
    return written;
  }
  if (renameat(dir_fd, tmp_base.c_str(), dir_fd, base.c_str()) != 0) {
    return StateFileErrno(path + ": rename from " + tmp);
  }
  if (fsync(dir_fd) != 0) return StateFileErrno(dir + ": fsync");
  return Status::Ok();
}

}  // namespace zeus::daemon
