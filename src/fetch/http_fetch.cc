#include "zeus/fetch/http_fetch.h"

#include <httplib.h>

#include <chrono>
#include <memory>
#include <utility>

#include <openssl/evp.h>

namespace zeus {
namespace {

// Splits "scheme://host[:port]/path" into ("scheme://host[:port]", "/path").
StatusOr<std::pair<std::string, std::string>> SplitUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos || scheme_end == 0) {
    return InvalidArgumentError("fetch: '" + url + "' is not an http:// or https:// URL");
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return InvalidArgumentError("fetch: '" + url + "': unsupported scheme '" + scheme +
                                "' (expected http or https)");
  }
  const size_t path_start = url.find('/', scheme_end + 3);
  std::string origin = url.substr(0, path_start);
  std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (origin.size() == scheme_end + 3) {
    return InvalidArgumentError("fetch: '" + url + "' has no host");
  }
  return std::make_pair(std::move(origin), std::move(path));
}

}  // namespace

StatusOr<std::string> FetchUrl(const std::string& url, const FetchOptions& options) {
  ZEUS_ASSIGN_OR_RETURN(auto origin_and_path, SplitUrl(url));
  httplib::Client client(origin_and_path.first);
  if (!client.is_valid()) return InvalidArgumentError("fetch: '" + url + "' is not a valid URL");
  client.set_follow_location(true);
  auto to_duration = [](double s) {
    return std::chrono::microseconds(static_cast<int64_t>(s * 1e6));
  };
  client.set_connection_timeout(to_duration(options.connect_timeout_s));
  client.set_read_timeout(to_duration(options.read_timeout_s));
  httplib::Headers headers = {{"User-Agent", options.user_agent}};
  httplib::Result result =
      options.progress
          ? client.Get(origin_and_path.second, headers,
                       httplib::Progress([&options](uint64_t received, uint64_t total) {
                         options.progress(received, total);
                         return true;
                       }))
          : client.Get(origin_and_path.second, headers);
  if (!result) {
    return UnavailableError("download of " + url +
                            " failed: " + httplib::to_string(result.error()));
  }
  if (result->status != 200) {
    return UnavailableError("download of " + url + " failed: HTTP " +
                            std::to_string(result->status));
  }
  return std::move(result->body);
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

}  // namespace zeus
