// The batch-size service's routes over the HTTP layer's route table
// (zeus/http/router.h: HttpRoute, HttpRequest, HttpResponse): a module adds
// its own with HttpServer::AddRoutes() before Start(), for example
//
//   std::vector<HttpRoute> DashboardRoutes(BatchSizeService* service);
//   ...
//   ZEUS_RETURN_IF_ERROR(server.AddRoutes(DashboardRoutes(&service)));
//
// The server answers around the table: 404 for a path no route matches, 405
// with an `Allow` header for a known path with another method, HEAD with the
// GET handler (the body dropped), 401 without the bearer token (when one is
// configured) unless the route is public, 500 when a handler throws; every
// answer is counted in /metrics and the access log.
//
// Thread-safety: handlers run concurrently on the server's worker threads
// (where database work may block) and must be safe to call so.

#ifndef ZEUS_SERVER_HTTP_ROUTE_H_
#define ZEUS_SERVER_HTTP_ROUTE_H_

#include <string_view>

#include "zeus/http/message.h"
#include "zeus/http/router.h"
#include "zeus/status.h"

namespace zeus {

// The HTTP status a library Status maps to in the service: 422 invalid
// argument, 404 not found, 409 conflict (already exists, aborted, failed
// precondition), 401 permission denied, 503 unavailable, else 500 (the
// HTTP layer's HttpStatusMap with the service's overrides).
int HttpStatusOf(StatusCode code);
// `{"message": message}` with `status` (the service's error body).
HttpResponse ErrorResponse(int status, std::string_view message);

}  // namespace zeus

#endif  // ZEUS_SERVER_HTTP_ROUTE_H_
