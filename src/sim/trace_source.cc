#include "zeus/sim/trace_source.h"

#include <filesystem>

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

namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

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
  if (!options.allow_download || !options.download) {
    return NotFoundError(
        "no traces: the bundled ones are missing (" +
        (bundled.empty() ? std::string("no share/zeus beside the binary") : bundled) +
        ") and the cache '" + cache +
        "' is empty; pass --traces DIR, set ZEUS_TRACE_DIR, or --download");
  }
  std::string base_url = options.base_url;
  if (base_url.empty()) base_url = GetEnv("ZEUS_TRACE_BASE_URL").value_or(kDefaultTraceBaseUrl);
  const Status downloaded = options.download(base_url, cache, progress);
  if (!downloaded.ok()) {
    return Status(downloaded.code(),
                  downloaded.message() +
                      " (offline? pass --traces DIR or set ZEUS_TRACE_DIR to a directory with "
                      "jobs.csv, summary_train.csv and summary_power_<gpu>.csv)");
  }
  return cache;
}

}  // namespace zeus
