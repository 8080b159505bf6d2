// Where `zeus simulate` finds its traces, and how it fetches the public ones.
//
// Resolution order: an explicit directory (--traces), else $ZEUS_TRACE_DIR,
// else the traces bundled with Zeus (share/zeus/traces/zeus-nsdi23 beside the
// installed or built binary), else the cache directory
// ($XDG_CACHE_HOME/zeus/traces, else ~/.cache/zeus/traces) when it holds a
// complete trace set. Nothing is downloaded unless asked for: with
// allow_download, the public NSDI'23 traces of the ml-energy/zeus repository
// are fetched into the cache (skipping the bundled ones). This library does no
// network I/O: the download is the caller's TraceSourceOptions::download
// (zeus/fetch/trace_download.h checks every file against its SHA-256 before
// moving it into place, so the cache never holds a partial or altered file).
//
// Thread-safety: functions are reentrant; two processes filling one cache at
// once each write whole files atomically.

#ifndef ZEUS_SIM_TRACE_SOURCE_H_
#define ZEUS_SIM_TRACE_SOURCE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// raw.githubusercontent.com URL of the ml-energy/zeus repository's trace/
// directory (its master branch). $ZEUS_TRACE_BASE_URL overrides it.
extern const char kDefaultTraceBaseUrl[];

// One file of the public trace set.
struct TraceFile {
  std::string name;
  // Lower-case hex SHA-256 of the expected contents.
  std::string sha256;
};

// The files fetched from the repository: summary_train.csv and the power
// traces of the GPUs whose checksums we know (V100, A40).
const std::vector<TraceFile>& PublicTraceFiles();

// jobs.csv is not in the public repository (its job specs live in the
// original's example scripts); Zeus ships it and writes it beside the
// downloaded traces. These are its exact contents.
const std::string& BundledJobsCsv();

// (bytes received so far, bytes expected or 0 when unknown, file name).
using DownloadProgress =
    std::function<void(uint64_t received, uint64_t total, const std::string& name)>;

// Fills directory `dir` with the trace set found at `base_url` (e.g.
// DownloadTraces of zeus/fetch/trace_download.h); an error is returned by
// ResolveTraceDir with a hint.
using TraceDownloader = std::function<Status(const std::string& base_url, const std::string& dir,
                                             const DownloadProgress& progress)>;

// $XDG_CACHE_HOME/zeus/traces, else $HOME/.cache/zeus/traces; kNotFound
// when neither variable is set.
StatusOr<std::string> DefaultTraceCacheDir();

// True when `dir` holds jobs.csv, summary_train.csv and at least one
// summary_power_<gpu>.csv.
bool IsCompleteTraceDir(const std::string& dir);

// The bundled traces: <directory of this executable>/../share/zeus/traces/
// zeus-nsdi23 (an installed tree, or a build tree, whose share/zeus links the
// source's data/). kNotFound when that is not a complete trace directory.
StatusOr<std::string> BundledTraceDir();

struct TraceSourceOptions {
  // --traces; empty = not given.
  std::string explicit_dir;
  // The bundled traces; empty = BundledTraceDir().
  std::string bundled_dir;
  // Base URL for downloads; empty = $ZEUS_TRACE_BASE_URL, else
  // kDefaultTraceBaseUrl.
  std::string base_url;
  // Cache directory; empty = DefaultTraceCacheDir().
  std::string cache_dir;
  // Fetch the public traces into the cache (unless the cache already holds
  // them) instead of using the bundled ones. Default: never touch the network.
  bool allow_download = false;
  // How to download; empty = downloads are off.
  TraceDownloader download;
};

// The directory to read traces from, following the order above. An explicit
// directory or $ZEUS_TRACE_DIR that is not a complete trace set is
// kNotFound (never silently replaced by another source). No trace set at all
// is kNotFound naming the places looked at; a failed download is
// kUnavailable with a message saying how to pass --traces instead.
StatusOr<std::string> ResolveTraceDir(const TraceSourceOptions& options,
                                      const DownloadProgress& progress = nullptr);

}  // namespace zeus

#endif  // ZEUS_SIM_TRACE_SOURCE_H_
