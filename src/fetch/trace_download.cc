#include "zeus/fetch/trace_download.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <sys/stat.h>

#include "zeus/fetch/http_fetch.h"
#include "zeus/util/file.h"

namespace zeus {
namespace {

// The pinned traces are under 200 KB each (their checksums fix their
// sizes): a body or a cached file beyond this is not one of them, and is
// refused before it is held whole in memory.
constexpr uint64_t kMaxTraceFileBytes = uint64_t{1} << 20;
constexpr double kTraceFileTimeoutS = 300.0;

// A regular file of at most kMaxTraceFileBytes at `path`.
bool CachedFileFits(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<uint64_t>(st.st_size) <= kMaxTraceFileBytes;
}

Status MakeDirs(const std::string& dir) {
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError("cannot create directory '" + prefix + "': " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace

Status DownloadTraces(const std::string& base_url, const std::string& dir,
                      const DownloadProgress& progress) {
  ZEUS_RETURN_IF_ERROR(MakeDirs(dir));
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  for (const TraceFile& file : PublicTraceFiles()) {
    const std::string path = dir + "/" + file.name;
    if (CachedFileFits(path)) {
      StatusOr<std::string> existing = ReadFileToString(path);
      if (existing.ok() && Sha256Hex(*existing) == file.sha256) continue;
    }
    FetchOptions options;
    options.user_agent = "zeus-simulate/0.1";
    options.max_bytes = kMaxTraceFileBytes;
    // 1 MiB at most: a server that drips it (a byte within every stall
    // limit) still ends here.
    options.total_timeout_s = kTraceFileTimeoutS;
    if (progress) {
      options.progress = [&progress, &file](uint64_t received, uint64_t total) {
        progress(received, total, file.name);
      };
    }
    ZEUS_ASSIGN_OR_RETURN(std::string body, FetchUrl(base + "/" + file.name, options));
    const std::string actual = Sha256Hex(body);
    if (actual != file.sha256) {
      return IoError("download of " + base + "/" + file.name + ": checksum mismatch: expected " +
                     "sha256 " + file.sha256 + ", got " + actual + " (" +
                     std::to_string(body.size()) + " bytes); nothing was written");
    }
    ZEUS_RETURN_IF_ERROR(WriteFileAtomically(path, body));
  }
  return WriteFileAtomically(dir + "/jobs.csv", BundledJobsCsv());
}

}  // namespace zeus
