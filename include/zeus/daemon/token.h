// The daemon's bearer tokens, compatible with the original zeusd: JWTs
// signed with HMAC-SHA256 (HS256) over a shared secret (the bytes of the
// signing-key file, used as they are), with claims `sub` (who), `scopes`
// (the API groups it may use: "gpu-control", "gpu-read", "cpu-read") and an
// optional `exp` (Unix seconds; absent: never expires). Signing and checking
// are libjwt's.
//
// Thread-safety: free functions, no shared state.

#ifndef ZEUS_DAEMON_TOKEN_H_
#define ZEUS_DAEMON_TOKEN_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// The API groups, as the wire spells them.
inline constexpr char kApiGroupGpuControl[] = "gpu-control";
inline constexpr char kApiGroupGpuRead[] = "gpu-read";
inline constexpr char kApiGroupCpuRead[] = "cpu-read";
// kInvalidArgument naming `what` and the accepted names unless `name` is one.
Status CheckApiGroup(const std::string& name, const std::string& what);

struct TokenClaims {
  std::string sub;
  std::vector<std::string> scopes;
  std::optional<int64_t> exp;  // Unix seconds.
};

// Bounds of a signing key's length, in bytes.
inline constexpr size_t kMinSigningKeyBytes = 32;
inline constexpr size_t kMaxSigningKeyBytes = 64 * 1024;

// The signing key: the file's bytes, as they are (the original reads them
// the same way, so one file serves both). kIoError when unreadable;
// kPermissionDenied when group or others may read or write it (anyone who
// reads it can sign tokens); kInvalidArgument when it is not a regular file
// (a FIFO, a directory, /dev/zero: refused without waiting or reading) or
// holds fewer than kMinSigningKeyBytes or more than kMaxSigningKeyBytes.
StatusOr<std::string> ReadSigningKey(const std::string& path);

// A signed token for `claims` (scopes checked with CheckApiGroup; sub
// non-empty). REQUIRES: key non-empty.
StatusOr<std::string> IssueToken(const std::string& key, const TokenClaims& claims);

// The claims of `token` when it is an HS256 JWT signed with `key`, with
// `sub` a string, `scopes` an array of strings, `exp` (when present) after
// `now_s` and `nbf` (when present) at or before it, both whole numbers of
// Unix seconds in [0, INT64_MAX]. kPermissionDenied with the reason
// otherwise ("token has expired", "token is not valid yet", "invalid token:
// ...").
StatusOr<TokenClaims> VerifyToken(const std::string& key, const std::string& token, int64_t now_s);

}  // namespace zeus

#endif  // ZEUS_DAEMON_TOKEN_H_
