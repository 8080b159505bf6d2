#include "zeus/daemon/token.h"

#include <jwt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

namespace zeus {
namespace {

using json = nlohmann::json;

struct JwtFree {
  void operator()(jwt_t* jwt) const { jwt_free(jwt); }
};
using JwtPtr = std::unique_ptr<jwt_t, JwtFree>;

struct CharFree {
  void operator()(char* p) const { std::free(p); }
};
using CharPtr = std::unique_ptr<char, CharFree>;

Status Invalid(const std::string& why) { return PermissionDeniedError("invalid token: " + why); }

}  // namespace

Status CheckApiGroup(const std::string& name, const std::string& what) {
  if (name == kApiGroupGpuControl || name == kApiGroupGpuRead || name == kApiGroupCpuRead) {
    return Status::Ok();
  }
  return InvalidArgumentError(what + ": unknown API group \"" + name.substr(0, 64) +
                              "\" (expected gpu-control, gpu-read or cpu-read)");
}

StatusOr<std::string> ReadSigningKey(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("signing key " + path + ": cannot open: " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return IoError("signing key " + path + ": read failed");
  std::string key = bytes.str();
  if (key.empty()) return InvalidArgumentError("signing key " + path + " is empty");
  return key;
}

StatusOr<std::string> IssueToken(const std::string& key, const TokenClaims& claims) {
  if (key.empty()) return InvalidArgumentError("the signing key is empty");
  if (claims.sub.empty()) return InvalidArgumentError("the token's subject (sub) is empty");
  for (const std::string& scope : claims.scopes) {
    ZEUS_RETURN_IF_ERROR(CheckApiGroup(scope, "scope"));
  }
  json body{{"sub", claims.sub}, {"scopes", claims.scopes}};
  if (claims.exp) body["exp"] = *claims.exp;
  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) return InternalError("jwt_new failed");
  JwtPtr jwt(raw);
  if (jwt_add_grants_json(jwt.get(), body.dump().c_str()) != 0) {
    return InternalError("jwt_add_grants_json failed");
  }
  if (jwt_set_alg(jwt.get(), JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(key.data()),
                  static_cast<int>(key.size())) != 0) {
    return InternalError("jwt_set_alg(HS256) failed");
  }
  CharPtr token(jwt_encode_str(jwt.get()));
  if (token == nullptr) return InternalError("jwt_encode_str failed");
  return std::string(token.get());
}

StatusOr<TokenClaims> VerifyToken(const std::string& key, const std::string& token, int64_t now_s) {
  if (token.empty()) return Invalid("empty");
  if (token.size() > 8192) return Invalid("longer than 8192 bytes");
  jwt_t* raw = nullptr;
  // With a key, libjwt checks the signature (and refuses "alg": "none").
  const int rc = jwt_decode(&raw, token.c_str(), reinterpret_cast<const unsigned char*>(key.data()),
                            static_cast<int>(key.size()));
  JwtPtr jwt(raw);
  if (rc != 0 || jwt == nullptr) {
    return Invalid("not a JWT signed with this daemon's key (" + std::string(std::strerror(rc)) +
                   ")");
  }
  if (jwt_get_alg(jwt.get()) != JWT_ALG_HS256) return Invalid("algorithm is not HS256");
  CharPtr grants(jwt_get_grants_json(jwt.get(), nullptr));
  if (grants == nullptr) return Invalid("no claims");
  json body = json::parse(grants.get(), nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return Invalid("claims are not a JSON object");
  TokenClaims claims;
  auto sub = body.find("sub");
  if (sub == body.end() || !sub->is_string()) return Invalid("no string claim 'sub'");
  claims.sub = sub->get<std::string>();
  auto scopes = body.find("scopes");
  if (scopes == body.end() || !scopes->is_array()) return Invalid("no array claim 'scopes'");
  for (const json& scope : *scopes) {
    if (!scope.is_string()) return Invalid("claim 'scopes' holds a non-string");
    claims.scopes.push_back(scope.get<std::string>());
  }
  auto exp = body.find("exp");
  if (exp != body.end() && !exp->is_null()) {
    if (!exp->is_number()) return Invalid("claim 'exp' is not a number");
    claims.exp = exp->get<int64_t>();
    if (*claims.exp <= now_s) {
      return PermissionDeniedError("token has expired (exp " + std::to_string(*claims.exp) +
                                   ", now " + std::to_string(now_s) + ")");
    }
  }
  return claims;
}

}  // namespace zeus
