#include "src/device/zeusd/zeusd_client.h"

#include <cstdlib>
#include <optional>

#include "zeus/http/client.h"
#include "zeus/util/json.h"

namespace zeus::zeusd {
namespace {

// The Host the daemon sees (it serves one host; the name is informative).
constexpr char kHostUrl[] = "http://zeusd";
// Longest wait for one answer (a blocking change included).
constexpr double kTimeoutS = 10.0;
// Largest answer read (/discover of a large machine is a few KiB).
constexpr uint64_t kMaxAnswerBytes = uint64_t{1} << 20;

// The daemon's {"error": "..."} message, or the body as it is.
std::string ErrorMessage(const std::string& body) {
  auto doc = ParseJson(body, "zeusd answer", JsonLimits{kMaxAnswerBytes, 8});
  if (doc.ok() && doc->is_object()) {
    StatusOr<JsonFields> fields = JsonFields::Of(*doc, "zeusd answer");
    if (fields.ok()) {
      StatusOr<std::optional<std::string>> error = fields->OptionalString("error");
      if (error.ok() && error->has_value()) return **error;
    }
  }
  return body.empty() ? "(no message)" : body.substr(0, 512);
}

}  // namespace

StatusOr<std::string> Request(const std::string& socket_path, const std::string& method,
                              const std::string& target) {
  const std::string context = "zeusd at " + socket_path + ": " + method + " " + target;
  HttpClientRequest request;
  request.method = method;
  request.url = kHostUrl + target;
  if (const char* token = std::getenv(kTokenEnv); token != nullptr && *token != '\0') {
    for (const char* c = token; *c != '\0'; ++c) {
      if (static_cast<unsigned char>(*c) <= ' ' || *c == 0x7f) {
        return InvalidArgumentError(context + ": " + kTokenEnv +
                                    " holds a space or control character; expected a JWT");
      }
    }
    request.headers.emplace_back("Authorization", std::string("Bearer ") + token);
  }
  HttpClientOptions options;
  options.unix_socket_path = socket_path;
  options.timeout_s = kTimeoutS;
  options.max_body_bytes = kMaxAnswerBytes;
  // A connection per request: the daemon reads this process's credentials
  // from each one (a forked child's requests carry the child's).
  options.keep_alive = false;
  options.user_agent.clear();
  StatusOr<HttpClientResponse> answer = HttpClient(options).Send(request);
  if (!answer.ok()) {
    const Status& failed = answer.status();
    // Nothing listens on the socket (no file, or a stale one).
    const bool no_daemon = failed.message().find(": cannot connect: ") != std::string::npos ||
                           failed.message().find(": connection refused") != std::string::npos;
    if (failed.code() == StatusCode::kUnavailable && no_daemon) {
      return UnavailableError("zeusd: " + failed.message() + " (is `zeus daemon` running? unset " +
                              kSockPathEnv + " to use the device directly)");
    }
    return Status(failed.code(), "zeusd: " + failed.message());
  }
  if (answer->status == 200) return std::move(answer->body);
  const std::string message =
      context + ": HTTP " + std::to_string(answer->status) + ": " + ErrorMessage(answer->body);
  switch (answer->status) {
    case 400:
      return InvalidArgumentError(message);
    case 401:
      return PermissionDeniedError(message + " (the daemon requires a bearer token: set " +
                                   kTokenEnv + ", e.g. from `zeus daemon token issue`)");
    case 403:
      return PermissionDeniedError(message);
    case 404:
      return NotSupportedError(message);
    case 409:
      return FailedPreconditionError(message);
    default:
      return UnavailableError(message);
  }
}

}  // namespace zeus::zeusd
