// Downloading the public NSDI'23 traces for `zeus simulate` (the simulator
// library only reads files; this is where they are fetched). Plug it into
// TraceSourceOptions::download.
//
// Thread-safety: reentrant; two processes filling one directory at once each
// write whole files atomically.

#ifndef ZEUS_FETCH_TRACE_DOWNLOAD_H_
#define ZEUS_FETCH_TRACE_DOWNLOAD_H_

#include <string>

#include "zeus/sim/trace_source.h"
#include "zeus/status.h"

namespace zeus {

// Downloads every PublicTraceFiles() entry from `base_url` + "/" + name into
// `dir` (created if needed) and writes BundledJobsCsv() as jobs.csv.
// kUnavailable when the server cannot be reached, answers non-200 or does
// not complete a file within 300 s; kIoError on a body larger than 1 MiB
// (the pinned files are under 200 KB; the transfer stops there), a checksum
// mismatch (naming the file, expected
// and actual sums; nothing is written) or a write failure. Files already present with
// the right checksum are not fetched again.
Status DownloadTraces(const std::string& base_url, const std::string& dir,
                      const DownloadProgress& progress = nullptr);

}  // namespace zeus

#endif  // ZEUS_FETCH_TRACE_DOWNLOAD_H_
