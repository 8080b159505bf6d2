// zeusd's access rules for every route: API groups, bearer tokens and their
// scopes, and the peer credentials that may read or change settings.

#include <grp.h>

#include <algorithm>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "zeus/daemon/token.h"
#include "zeus/util/strings.h"

#include "src/daemon/routes.h"
#include "src/device/zeusd/zeusd_api.h"

namespace zeus::daemon {
namespace {

std::string GroupName(gid_t gid) {
  group* g = getgrgid(gid);
  return g != nullptr ? "'" + std::string(g->gr_name) + "' (gid " + std::to_string(gid) + ")"
                      : "gid " + std::to_string(gid);
}

// The API group a route belongs to (the original's mapping): GPU changes
// (POST /gpu/set_*, /gpu/reset_*, and the legacy /gpu/<id>/...) gpu-control,
// other /gpu/ routes gpu-read, /cpu/ routes cpu-read. Ours: POST
// /lease/release gpu-control, GET /leases gpu-read. "" for the rest
// (/discover, /time, /auth/whoami, /streams, unknown routes).
std::string GroupOf(const std::string& path) {
  if (StartsWith(path, "/gpu/set_") || StartsWith(path, "/gpu/reset_")) return kApiGroupGpuControl;
  if (StartsWith(path, "/gpu/")) {
    const std::string rest = path.substr(5);
    return rest.find('/') != std::string::npos ? kApiGroupGpuControl : kApiGroupGpuRead;
  }
  if (StartsWith(path, "/cpu/")) return kApiGroupCpuRead;
  if (path == "/lease/release") return kApiGroupGpuControl;
  if (path == "/leases") return kApiGroupGpuRead;
  return "";
}

HttpResponse Unauthorized(const std::string& message) {
  HttpResponse r = ErrorAnswer(401, message);
  r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"zeusd\"");
  return r;
}

}  // namespace

bool Routes::GroupEnabled(const std::string& group) const {
  const auto& groups = options_->enabled_api_groups;
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

bool MayControl(const Peer& peer, const std::optional<gid_t>& control_group) {
  return peer.local && (peer.uid == 0 || (control_group && peer.InGroup(*control_group)));
}

Status Routes::Authorize(const Peer& peer, bool write) const {
  if (!write && !options_->restrict_reads) return Status::Ok();
  const std::string what = write ? "change GPU settings" : "read (this daemon restricts reads)";
  if (!peer.local) {
    // With tokens, Guarded has checked the gpu-control scope already.
    if (write && options_->tcp_changes) return Status::Ok();
    return PermissionDeniedError(
        peer.description + " may not " + what + ": " +
        (write ? "changes are accepted only on the Unix socket " + options_->socket_path +
                     ", where the daemon knows the client process and can lease the change to "
                     "it (start the daemon with --tcp-changes to accept them over TCP)"
               : "only root and the control group may, over the Unix socket " +
                     options_->socket_path));
  }
  if (MayControl(peer, options_->control_group)) return Status::Ok();
  return PermissionDeniedError(peer.description + " may not " + what + ": only root" +
                               (options_->control_group
                                    ? " and members of group " + GroupName(*options_->control_group)
                                    : std::string(" (the daemon was started without --group)")) +
                               " may");
}

std::optional<HttpResponse> Routes::Check(const HttpRequest& request, bool open,
                                          Checked* checked) const {
  leases_->Touch(request.peer);
  const std::string& path = request.path;
  StatusOr<Params> params = ParseQuery(request.query);
  if (!params.ok()) return ErrorAnswerOf(params.status());
  checked->params = std::move(*params);
  if (open) return std::nullopt;
  // API groups, then tokens (the original's order): a disabled group is 404
  // whoever asks; with a signing key, a missing or invalid token is 401 and
  // a token without the route's group 403. The peer-credential rules of each
  // route apply as well.
  const std::string group = GroupOf(path);
  if (!group.empty() && !GroupEnabled(group)) {
    return ErrorAnswer(404, "API group '" + group + "' is not enabled on this daemon (" +
                                path.substr(0, 128) + "; see /discover's enabled_api_groups)");
  }
  if (options_->signing_key.empty()) return std::nullopt;
  static const char kBearer[] = "Bearer ";
  const std::string authorization = request.Header("Authorization");
  if (!StartsWith(authorization, kBearer)) {
    return Unauthorized(
        authorization.empty()
            ? "authentication required: send an Authorization: Bearer <token> header (tokens "
              "come from `zeus daemon token issue`)"
            : "the Authorization header is not \"Bearer <token>\"");
  }
  const int64_t now_s = UnixTimeMs() / 1000;
  StatusOr<TokenClaims> verified =
      VerifyToken(options_->signing_key, authorization.substr(sizeof(kBearer) - 1), now_s);
  if (!verified.ok()) return Unauthorized(verified.status().message());
  checked->claims = std::move(*verified);
  const TokenClaims& claims = *checked->claims;
  if (!group.empty() &&
      std::find(claims.scopes.begin(), claims.scopes.end(), group) == claims.scopes.end()) {
    std::string scopes;
    for (const std::string& scope : claims.scopes) {
      scopes += (scopes.empty() ? "'" : ", '") + scope.substr(0, 32) + "'";
    }
    return ErrorAnswer(403, "token for user '" + claims.sub.substr(0, 64) +
                                "' lacks required scope '" + group + "' for " +
                                path.substr(0, 128) + " (token scopes: [" + scopes + "])");
  }
  return std::nullopt;
}

HttpHandler Routes::Guarded(bool open, Body body) {
  return [this, open, body = std::move(body)](const HttpRequest& request) {
    Checked checked;
    if (std::optional<HttpResponse> refused = Check(request, open, &checked)) {
      return std::move(*refused);
    }
    return body(request, checked);
  };
}

}  // namespace zeus::daemon
