#include "zeus/daemon/token.h"

#include <fcntl.h>
#include <jwt.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

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

std::string FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A NumericDate claim (`exp`, `nbf`): a whole number of Unix seconds from 0
// to INT64_MAX (a float only when it is integral and in that range).
StatusOr<std::optional<int64_t>> TimeClaim(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::optional<int64_t>();
  const std::string bad = std::string("claim '") + name + "' is not a whole number of seconds " +
                          "from 0 to " + std::to_string(INT64_MAX);
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return Invalid(bad);
    return std::optional<int64_t>(static_cast<int64_t>(it->get<uint64_t>()));
  }
  if (it->is_number_integer()) {
    if (it->get<int64_t>() < 0) return Invalid(bad);
    return std::optional<int64_t>(it->get<int64_t>());
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    // 2^63 is the first double past INT64_MAX.
    if (!std::isfinite(v) || v < 0 || v >= 9223372036854775808.0 || std::floor(v) != v) {
      return Invalid(bad);
    }
    return std::optional<int64_t>(static_cast<int64_t>(v));
  }
  return Invalid(bad);
}

}  // namespace

Status CheckApiGroup(const std::string& name, const std::string& what) {
  if (name == kApiGroupGpuControl || name == kApiGroupGpuRead || name == kApiGroupCpuRead) {
    return Status::Ok();
  }
  return InvalidArgumentError(what + ": unknown API group \"" + name.substr(0, 64) +
                              "\" (expected gpu-control, gpu-read or cpu-read)");
}

StatusOr<std::string> ReadSigningKey(const std::string& path) {
  const std::string what = "signing key " + path;
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused
  // below, as every file that is not a regular one).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return IoError(what + ": cannot open: " + std::strerror(errno));
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError(what + ": fstat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(what + " is not a regular file (" + FileTypeName(st.st_mode) + ")");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDeniedError(what + " is readable or writable by group or others (mode " +
                                 mode + "): anyone who reads it can sign tokens; chmod 600 " +
                                 path);
  }
  if (st.st_size > static_cast<off_t>(kMaxSigningKeyBytes)) {
    return InvalidArgumentError(what + " is " + std::to_string(st.st_size) +
                                " bytes; a key has at most " + std::to_string(kMaxSigningKeyBytes));
  }
  std::string key;
  char buffer[4096];
  while (key.size() <= kMaxSigningKeyBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(what + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    key.append(buffer, static_cast<size_t>(n));
  }
  if (key.size() > kMaxSigningKeyBytes) {
    return InvalidArgumentError(what + " holds more than " + std::to_string(kMaxSigningKeyBytes) +
                                " bytes");
  }
  if (key.empty()) return InvalidArgumentError(what + " is empty");
  if (key.size() < kMinSigningKeyBytes) {
    return InvalidArgumentError(
        what + " holds " + std::to_string(key.size()) + " bytes; a key needs at least " +
        std::to_string(kMinSigningKeyBytes) + " (e.g. head -c 32 /dev/urandom > " + path + ")");
  }
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
  ZEUS_ASSIGN_OR_RETURN(claims.exp, TimeClaim(body, "exp"));
  if (claims.exp && *claims.exp <= now_s) {
    return PermissionDeniedError("token has expired (exp " + std::to_string(*claims.exp) +
                                 ", now " + std::to_string(now_s) + ")");
  }
  ZEUS_ASSIGN_OR_RETURN(std::optional<int64_t> nbf, TimeClaim(body, "nbf"));
  if (nbf && now_s < *nbf) {
    return PermissionDeniedError("token is not valid yet (nbf " + std::to_string(*nbf) + ", now " +
                                 std::to_string(now_s) + ")");
  }
  return claims;
}

}  // namespace zeus
