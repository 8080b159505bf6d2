// The Zeus daemon's HTTP API on its Unix socket, for the device backends'
// relays (ZEUSD_SOCK_PATH), through HttpClient (zeus/http/client.h). One
// request per connection, so the daemon sees this process's credentials on
// every call and leases each change to it.
//
// Thread-safety: free functions; concurrent calls use separate connections.

#ifndef ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CLIENT_H_
#define ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CLIENT_H_

#include <string>

#include "zeus/status.h"

namespace zeus::zeusd {

// The environment variable naming the daemon's socket (as the original Zeus).
inline constexpr char kSockPathEnv[] = "ZEUSD_SOCK_PATH";
// The bearer token sent as `Authorization: Bearer` when set (as the original
// Zeus; needed when the daemon runs with --signing-key-path).
inline constexpr char kTokenEnv[] = "ZEUSD_TOKEN";

// Sends `method target` to the daemon at `socket_path` and returns the body of
// a 200 answer. Otherwise an error whose message is "zeusd at <socket>:
// <method target>: HTTP <status>: <daemon's error>" and whose code follows
// the HTTP status: 400 kInvalidArgument, 401 and 403 kPermissionDenied, 404
// kNotSupported, 409 kFailedPrecondition, anything else kUnavailable. No
// answer (no daemon on the socket, none within 10 s, an answer over 1 MiB):
// the client's error, "zeusd: <method> http://zeusd<target> via unix socket
// <socket>: <what failed>", kUnavailable (a missing daemon with a hint),
// kInvalidArgument for a socket path too long or a malformed ZEUSD_TOKEN.
StatusOr<std::string> Request(const std::string& socket_path, const std::string& method,
                              const std::string& target);

}  // namespace zeus::zeusd

#endif  // ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CLIENT_H_
