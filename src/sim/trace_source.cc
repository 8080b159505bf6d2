#include "zeus/sim/trace_source.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include "zeus/sim/trace.h"
#include "zeus/util/env.h"
#include "zeus/util/file.h"

namespace zeus {

const char kDefaultTraceBaseUrl[] = "https://raw.githubusercontent.com/ml-energy/zeus/master/trace";

const std::vector<TraceFile>& PublicTraceFiles() {
  static const auto* files = new std::vector<TraceFile>{
      {"summary_train.csv", "076b35615349ee624403006e5ad67fd9ebda92af690c7750f8bb0c2ab92c0cf4"},
      {"summary_power_v100.csv",
       "f0b066dd1a451bd78f730e001ac3a7c411979bc7f0846f12c1a9fb604aa90628"},
      {"summary_power_a40.csv", "f4ec111fc9b06b353182faab9160ecb1236a486b2741ed93383b80497332031e"},
  };
  return *files;
}

const std::string& BundledJobsCsv() {
  // The six recurring jobs of the paper (NSDI'23, Table 3), as the original's
  // trace-driven examples define them.
  static const auto* jobs = new std::string(
      "dataset,network,optimizer,target_metric,max_epochs,default_batch_size\n"
      "cifar100,shufflenetv2,adadelta,0.6,100,1024\n"
      "imagenet,resnet50,adadelta,0.65,100,256\n"
      "squad,bert_base_uncased,adamw,84.0,6,32\n"
      "librispeech,deepspeech2,adamw,40.0,16,256\n"
      "movielens-1m,ncf,adam,0.41,100,1024\n"
      "sentiment140,bert_base_uncased,adamw,0.84,10,128\n");
  return *jobs;
}

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  ZEUS_CHECK(ctx != nullptr);
  ZEUS_CHECK(EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1);
  ZEUS_CHECK(EVP_DigestUpdate(ctx.get(), data.data(), data.size()) == 1);
  ZEUS_CHECK(EVP_DigestFinal_ex(ctx.get(), digest, &length) == 1);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
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

struct Transfer {
  std::string body;
  const DownloadProgress* progress = nullptr;
  const std::string* name = nullptr;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  static_cast<Transfer*>(user)->body.append(data, size * count);
  return size * count;
}

int OnProgress(void* user, curl_off_t total, curl_off_t received, curl_off_t, curl_off_t) {
  Transfer* transfer = static_cast<Transfer*>(user);
  if (*transfer->progress) {
    (*transfer->progress)(static_cast<uint64_t>(received), static_cast<uint64_t>(total),
                          *transfer->name);
  }
  return 0;
}

StatusOr<std::string> Fetch(const std::string& url, const std::string& name,
                            const DownloadProgress& progress) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) return InternalError("libcurl: curl_easy_init failed");
  Transfer transfer;
  transfer.progress = &progress;
  transfer.name = &name;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 15L);
  // Give up on a stalled transfer: under 1 KB/s for 30 s.
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "zeus-simulate/0.1");
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    return UnavailableError("download of " + url + " failed: " +
                            (error[0] != '\0' ? std::string(error) : curl_easy_strerror(rc)));
  }
  long http_code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &http_code);
  if (http_code != 200) {
    return UnavailableError("download of " + url + " failed: HTTP " + std::to_string(http_code));
  }
  return std::move(transfer.body);
}

}  // namespace

Status DownloadTraces(const std::string& base_url, const std::string& dir,
                      const DownloadProgress& progress) {
  ZEUS_RETURN_IF_ERROR(MakeDirs(dir));
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  for (const TraceFile& file : PublicTraceFiles()) {
    const std::string path = dir + "/" + file.name;
    if (FileExists(path)) {
      StatusOr<std::string> existing = ReadFileToString(path);
      if (existing.ok() && Sha256Hex(*existing) == file.sha256) continue;
    }
    ZEUS_ASSIGN_OR_RETURN(std::string body, Fetch(base + "/" + file.name, file.name, progress));
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

StatusOr<std::string> BundledTraceDir() {
  ZEUS_ASSIGN_OR_RETURN(std::string exe_dir, ExecutableDir());
  const std::string dir =
      std::filesystem::path(exe_dir + "/../share/zeus/traces/zeus-nsdi23").lexically_normal();
  if (!IsCompleteTraceDir(dir)) return NotFoundError("no bundled traces at '" + dir + "'");
  return dir;
}

StatusOr<std::string> DefaultTraceCacheDir() {
  std::optional<std::string> xdg = GetEnv("XDG_CACHE_HOME");
  if (xdg.has_value() && !xdg->empty()) return *xdg + "/zeus/traces";
  std::optional<std::string> home = GetEnv("HOME");
  if (home.has_value() && !home->empty()) return *home + "/.cache/zeus/traces";
  return NotFoundError("trace cache: neither XDG_CACHE_HOME nor HOME is set");
}

bool IsCompleteTraceDir(const std::string& dir) {
  return FileExists(dir + "/jobs.csv") && FileExists(dir + "/summary_train.csv") &&
         FindTraceGpus(dir).ok();
}

StatusOr<std::string> ResolveTraceDir(const TraceSourceOptions& options,
                                      const DownloadProgress& progress) {
  auto require_complete = [](const std::string& dir, const std::string& origin) -> Status {
    if (IsCompleteTraceDir(dir)) return Status::Ok();
    return NotFoundError(origin + " '" + dir +
                         "' is not a trace directory: it needs jobs.csv, summary_train.csv and "
                         "summary_power_<gpu>.csv");
  };
  if (!options.explicit_dir.empty()) {
    ZEUS_RETURN_IF_ERROR(require_complete(options.explicit_dir, "--traces"));
    return options.explicit_dir;
  }
  std::optional<std::string> env_dir = GetEnv("ZEUS_TRACE_DIR");
  if (env_dir.has_value() && !env_dir->empty()) {
    ZEUS_RETURN_IF_ERROR(require_complete(*env_dir, "$ZEUS_TRACE_DIR"));
    return *env_dir;
  }
  std::string bundled = options.bundled_dir;
  if (bundled.empty()) bundled = BundledTraceDir().value_or("");
  if (!options.allow_download && !bundled.empty() && IsCompleteTraceDir(bundled)) return bundled;
  std::string cache = options.cache_dir;
  if (cache.empty()) {
    ZEUS_ASSIGN_OR_RETURN(cache, DefaultTraceCacheDir());
  }
  if (IsCompleteTraceDir(cache)) return cache;
  if (!options.allow_download) {
    return NotFoundError(
        "no traces: the bundled ones are missing (" +
        (bundled.empty() ? std::string("no share/zeus beside the binary") : bundled) +
        ") and the cache '" + cache +
        "' is empty; pass --traces DIR, set ZEUS_TRACE_DIR, or --download");
  }
  std::string base_url = options.base_url;
  if (base_url.empty()) base_url = GetEnv("ZEUS_TRACE_BASE_URL").value_or(kDefaultTraceBaseUrl);
  const Status downloaded = DownloadTraces(base_url, cache, progress);
  if (!downloaded.ok()) {
    return Status(downloaded.code(),
                  downloaded.message() +
                      " (offline? pass --traces DIR or set ZEUS_TRACE_DIR to a directory with "
                      "jobs.csv, summary_train.csv and summary_power_<gpu>.csv)");
  }
  return cache;
}

}  // namespace zeus
