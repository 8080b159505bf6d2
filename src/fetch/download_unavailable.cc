// DownloadTraces of a build without downloads (-DZEUS_BUILD_DOWNLOAD=OFF):
// it fails, saying how to get the traces instead.

#include "zeus/fetch/trace_download.h"

namespace zeus {

Status DownloadTraces(const std::string& base_url, const std::string& /*dir*/,
                      const DownloadProgress& /*progress*/) {
  return UnavailableError("cannot download " + base_url +
                          ": this zeus was built with -DZEUS_BUILD_DOWNLOAD=OFF (the README's "
                          "quick start); reconfigure with -DZEUS_BUILD_DOWNLOAD=ON, or fetch the "
                          "traces yourself and pass --traces DIR");
}

}  // namespace zeus
