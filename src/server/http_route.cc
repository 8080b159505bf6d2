#include "zeus/server/http_route.h"

#include <strings.h>

#include <nlohmann/json.hpp>

namespace zeus {

std::optional<std::string> HttpRequest::Param(std::string_view name) const {
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return std::nullopt;
}

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), key.size()) == 0) {
      return value;
    }
  }
  return "";
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return 422;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kPermissionDenied:
      return 401;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

HttpResponse JsonResponse(int status, std::string json_text) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(json_text);
  return response;
}

HttpResponse ErrorResponse(int status, std::string_view message) {
  const nlohmann::json body{{"message", std::string(message)}};
  return JsonResponse(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace zeus
