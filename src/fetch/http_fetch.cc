#include "zeus/fetch/http_fetch.h"

#include <memory>
#include <utility>

#include <openssl/evp.h>

#include "zeus/http/client.h"

namespace zeus {

StatusOr<std::string> FetchUrl(const std::string& url, const FetchOptions& options) {
  HttpClientOptions http;
  // By default no deadline for the whole transfer: a large file on a slow
  // link keeps going while bytes arrive; the connect and stall limits end a
  // dead one.
  http.timeout_s = options.total_timeout_s;
  http.connect_timeout_s = options.connect_timeout_s;
  http.idle_timeout_s = options.read_timeout_s;
  http.max_body_bytes = options.max_bytes;
  http.max_redirects = options.max_redirects;
  http.progress = options.progress;
  http.user_agent = options.user_agent;
  http.keep_alive = false;
  // https, also when a plain http:// URL redirects there.
  StatusOr<std::shared_ptr<TlsContext>> tls = SystemTlsContext();
  if (!tls.ok()) return tls.status().WithContext("download of " + url + " failed");
  http.tls = *tls;
  StatusOr<HttpClientResponse> answer = HttpClient(http).Get(url);
  if (!answer.ok()) {
    if (answer.status().code() == StatusCode::kInvalidArgument) {
      return answer.status().WithContext("fetch");
    }
    return answer.status().WithContext("download failed");
  }
  if (answer->status != 200) {
    return UnavailableError("download of " + url + " failed: HTTP " +
                            std::to_string(answer->status) +
                            (answer->url != url ? " from " + answer->url : ""));
  }
  return std::move(answer->body);
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
