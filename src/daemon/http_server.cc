#include "src/daemon/http_server.h"

#include <utility>

#include "zeus/http/transport.h"

#include "src/daemon/routes.h"
#include "src/daemon/single_instance.h"

namespace zeus::daemon {
namespace {

// Largest accepted request line plus headers.
constexpr size_t kMaxHeaderBytes = 8 * 1024;
constexpr int kIoThreads = 4;

// The daemon's refusals before routing, as zeusd words them.
HttpResponse Refusal(const DaemonOptions& o, HttpRefusal refusal, const std::string& detail) {
  switch (refusal) {
    case HttpRefusal::kTimeout:
      return ErrorAnswer(
          408, "request not received within " + std::to_string(o.request_timeout.count()) + " ms");
    case HttpRefusal::kBodyTooLarge:
      return ErrorAnswer(
          413, "request body exceeds the limit of " + std::to_string(o.max_body_bytes) + " bytes");
    case HttpRefusal::kHeadTooLarge:
      return ErrorAnswer(431, "request line and headers exceed the limit of " +
                                  std::to_string(kMaxHeaderBytes) + " bytes");
    case HttpRefusal::kTooManyConnections:
      return ErrorAnswer(
          503, "too many open connections (" + std::to_string(o.max_connections) + "); try again");
    case HttpRefusal::kMalformed:
      break;
  }
  return ErrorAnswer(400, "malformed HTTP request: " + detail);
}

HttpRouterOptions RouterOptions(HttpHandler not_found) {
  HttpRouterOptions o;
  o.not_found = std::move(not_found);
  o.error = [](int status, std::string_view message) {
    return ErrorAnswer(status, std::string(message));
  };
  o.refuse_repeated_params = false;
  o.on_exception = [](const std::exception* e) {
    return ErrorAnswer(500, std::string("internal error: ") + (e ? e->what() : "unknown"));
  };
  return o;
}

}  // namespace

struct HttpServer::Impl {
  Impl(const DaemonOptions& daemon_options, std::vector<HttpRoute> routes, HttpHandler not_found)
      : options(daemon_options), router(RouterOptions(std::move(not_found))) {
    added = router.Add(std::move(routes));
  }

  const DaemonOptions& options;
  HttpRouter router;
  Status added;
  std::unique_ptr<HttpTransport> transport;
};

HttpServer::HttpServer(const DaemonOptions& options, std::vector<HttpRoute> routes,
                       HttpHandler not_found)
    : impl_(std::make_unique<Impl>(options, std::move(routes), std::move(not_found))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  ZEUS_RETURN_IF_ERROR(impl_->added);
  const DaemonOptions& o = impl_->options;
  HttpTransportOptions t;
  t.name = "zeus daemon";
  t.unix_socket_path = o.socket_path;
  // Removes only a socket nobody answers on (a crashed daemon's).
  t.claim_unix_socket = ClaimSocketPath;
  t.unix_socket_mode = o.socket_mode;
  t.unix_socket_group = o.socket_group;
  t.tcp_host = o.tcp_host;
  t.tcp_port = o.tcp_port;
  t.max_header_bytes = kMaxHeaderBytes;
  t.max_body_bytes = o.max_body_bytes;
  // One deadline from waiting for a request to its last byte: 408 when it
  // began, a silent close when it never did.
  t.idle_timeout = o.request_timeout;
  t.read_timeout = o.request_timeout;
  t.read_deadline_includes_idle = true;
  t.answer_read_timeout = true;
  t.write_timeout = o.request_timeout;
  t.max_connections = o.max_connections;
  // On the Unix socket, those who may change settings (root and the control
  // group) and everyone else each have max_connections: local readers cannot
  // lock out a change, and root is limited like anyone.
  t.unix_budget = [&o](const Peer& peer) { return MayControl(peer, o.control_group) ? 1 : 0; };
  // zeusd matches and names paths as sent.
  t.decode_path = false;
  t.io_threads = kIoThreads;
  t.worker_threads = 0;
  // zeusd's wire.
  t.server_header = "zeusd (zeus daemon)";
  t.echo_http_version = true;
  // A HEAD answer carries no body (its Content-Length says what GET would
  // send), and a client waiting on Expect: 100-continue is told to send.
  t.omit_body_for_head = true;
  t.answer_expect_continue = true;
  t.drain_after_refusal = false;
  t.stop_grace = std::chrono::seconds(1);
  const HttpRouter* router = &impl_->router;
  auto transport = std::make_unique<HttpTransport>(
      t,
      [router](const HttpRequest& request) {
        std::string pattern;
        return router->Route(request, &pattern);
      },
      [&o](const HttpRequest&, HttpRefusal refusal, const std::string& detail) {
        return Refusal(o, refusal, detail);
      });
  ZEUS_RETURN_IF_ERROR(transport->Start());
  impl_->transport = std::move(transport);
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->transport) impl_->transport->Stop();
}

int HttpServer::tcp_port() const { return impl_->transport ? impl_->transport->tcp_port() : -1; }

int HttpServer::open_streams() const {
  return impl_->transport ? impl_->transport->open_streams() : 0;
}

}  // namespace zeus::daemon
