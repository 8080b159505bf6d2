// Fetching files over HTTP(S) with the project's one HTTP client
// (zeus/http/client.h): https:// URLs are verified against the system's CA
// store, redirects are followed.
//
// Thread-safety: functions are reentrant.

#ifndef ZEUS_FETCH_HTTP_FETCH_H_
#define ZEUS_FETCH_HTTP_FETCH_H_

#include <cstdint>
#include <functional>
#include <string>

#include "zeus/status.h"

namespace zeus {

// (bytes received so far, bytes expected or 0 when unknown).
using FetchProgress = std::function<void(uint64_t received, uint64_t total)>;

struct FetchOptions {
  // Connect timeout (TLS handshake included), in s. Default: 15.
  double connect_timeout_s = 15.0;
  // Longest wait for the next bytes of the answer, in s (a stalled transfer
  // fails after it; a slow one that keeps arriving does not). Default: 30.
  double read_timeout_s = 30.0;
  // Deadline of the whole transfer (redirects included), in s, however the
  // bytes arrive; 0: none (only the two limits above). Default: 0.
  double total_timeout_s = 0.0;
  // Largest body accepted, in bytes. Default: 1 GiB.
  uint64_t max_bytes = uint64_t{1} << 30;
  // Redirects followed. Default: 10.
  int max_redirects = 10;
  // Sent as User-Agent. Default: "zeus/0.1".
  std::string user_agent = "zeus/0.1";
  // Called as the body arrives. Default: none.
  FetchProgress progress;
};

// The body of `url` (http:// or https://, redirects followed). kInvalidArgument
// naming the URL when it is malformed; kUnavailable naming the URL when the
// server cannot be reached, the transfer fails or the answer is not 200;
// kIoError when the body exceeds max_bytes.
StatusOr<std::string> FetchUrl(const std::string& url, const FetchOptions& options = {});

// Lower-case hex SHA-256 of `data` (OpenSSL EVP).
std::string Sha256Hex(const std::string& data);

}  // namespace zeus

#endif  // ZEUS_FETCH_HTTP_FETCH_H_
