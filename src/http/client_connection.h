// Private to HttpClient (src/http/client.cc, client_tls.cc): one open
// connection over TCP, a Unix socket or TLS, driven synchronously on the
// client's io_context with a deadline on every operation, and the TLS door.
//
// Every asynchronous operation here runs on a Beast basic_stream whose
// expiry is set first, so it completes (with beast::error::timeout at the
// latest) and RunOperation returns.
//
// Thread-safety: as HttpClient, one thread at a time.

#ifndef ZEUS_SRC_HTTP_CLIENT_CONNECTION_H_
#define ZEUS_SRC_HTTP_CLIENT_CONNECTION_H_

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "zeus/status.h"

namespace zeus {
namespace http_client {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

using WireRequest = beast::http::request<beast::http::string_body>;
using WireParser = beast::http::response_parser<beast::http::string_body>;

// The time limits of one Send() (see HttpClientOptions); seconds kept for
// messages.
struct Limits {
  // Clock::time_point::max() when there is none.
  Clock::time_point deadline = Clock::time_point::max();
  double timeout_s = 0;
  double connect_timeout_s = 0;
  double idle_timeout_s = 0;
  uint64_t max_body_bytes = 0;
  uint32_t max_header_bytes = 0;

  // The expiry of a connect (or handshake) starting now, of a write, and of
  // the next read: the deadline, or sooner when a phase limit is set.
  Clock::time_point ConnectExpiry() const;
  Clock::time_point WriteExpiry() const;
  Clock::time_point ReadExpiry() const;
  // "timed out after 2 s <doing>" when the deadline passed, else the phase
  // limit that did: the connect limit while `connecting` ("timed out after
  // 1 s connecting"), the idle limit otherwise ("stalled: no data for 30 s
  // waiting for the answer").
  std::string TimeoutMessage(const char* doing, bool connecting) const;
};

// Runs `ioc` until the operation that `start(handler)` begins has called its
// handler; returns the handler's error. REQUIRES: the operation completes on
// its own (an expiry is set).
template <class Start>
error_code RunOperation(asio::io_context& ioc, Start&& start) {
  bool done = false;
  error_code result;
  start([&done, &result](error_code ec, auto&&...) {
    done = true;
    result = ec;
  });
  ioc.restart();
  while (!done && ioc.run_one() > 0) {
  }
  return done ? result : error_code(asio::error::operation_aborted);
}

// Sets `stream`'s expiry to `at` (none for time_point::max()).
template <class Stream>
void ExpireAt(Stream& stream, Clock::time_point at) {
  if (at == Clock::time_point::max()) {
    stream.expires_never();
  } else {
    stream.expires_at(at);
  }
}

// The Status of a failed operation: kIoError for the size limits, else
// kUnavailable; the message says what failed while `doing` (no context).
Status TransportError(const error_code& ec, const Limits& limits, const char* doing);

// One open connection that carries requests in turn.
class ClientConnection {
 public:
  virtual ~ClientConnection() = default;

  // Sends `request` and reads its answer into `parser`, calling `on_body`
  // after every read. On failure the connection is unusable;
  // `*peer_closed_first` tells whether the peer closed it before any byte
  // of an answer arrived (a stale keep-alive connection).
  virtual Status Exchange(WireRequest& request, WireParser& parser, const Limits& limits,
                          const std::function<void()>& on_body, bool* peer_closed_first) = 0;

  // Whether another request may follow on this connection: the last answer
  // allowed it, and the idle connection has nothing to read (a peer that
  // closed it shows as readable end of file).
  virtual bool Reusable() = 0;
};

// A connection over `Stream` (a beast::basic_stream, or an SSL stream over a
// beast::tcp_stream).
template <class Stream>
class StreamConnection final : public ClientConnection {
 public:
  StreamConnection(asio::io_context& ioc, Stream stream) : ioc_(ioc), stream_(std::move(stream)) {}

  Status Exchange(WireRequest& request, WireParser& parser, const Limits& limits,
                  const std::function<void()>& on_body, bool* peer_closed_first) override {
    reusable_ = false;
    *peer_closed_first = false;
    auto& lowest = beast::get_lowest_layer(stream_);
    ExpireAt(lowest, limits.WriteExpiry());
    error_code ec = RunOperation(ioc_, [&](auto handler) {
      beast::http::async_write(stream_, request, std::move(handler));
    });
    if (ec) {
      *peer_closed_first = IsPeerClosed(ec);
      Close();
      return TransportError(ec, limits, "sending the request");
    }
    while (!parser.is_done()) {
      ExpireAt(lowest, limits.ReadExpiry());
      ec = RunOperation(ioc_, [&](auto handler) {
        beast::http::async_read_some(stream_, buffer_, parser, std::move(handler));
      });
      if (ec) {
        *peer_closed_first = !parser.got_some() && IsPeerClosed(ec);
        Close();
        return TransportError(ec, limits, "waiting for the answer");
      }
      if (on_body) on_body();
    }
    // Bytes beyond the answer would be read as the next one: not reused.
    reusable_ = parser.get().keep_alive() && buffer_.size() == 0;
    if (!reusable_) Close();
    return Status::Ok();
  }

  bool Reusable() override {
    if (!reusable_) return false;
    pollfd idle{beast::get_lowest_layer(stream_).socket().native_handle(), POLLIN, 0};
    if (poll(&idle, 1, 0) == 0) return true;
    Close();  // End of file, an error, or bytes nobody asked for.
    return false;
  }

 private:
  static bool IsPeerClosed(const error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::broken_pipe || ec == beast::http::error::end_of_stream;
  }

  void Close() {
    reusable_ = false;
    error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  asio::io_context& ioc_;
  Stream stream_;
  beast::flat_buffer buffer_;
  bool reusable_ = false;
};

// A TCP connection to host:port (name resolved, TCP_NODELAY set) by the
// connect expiry; the message of an error says what failed (no context).
StatusOr<beast::tcp_stream> OpenTcp(asio::io_context& ioc, const std::string& host,
                                    unsigned short port, const Limits& limits);

}  // namespace http_client

// The TLS door (src/http/client_tls.cc, which alone includes Boost.Asio SSL
// and so alone needs libssl): HttpClient reaches it only through this
// virtual call on a context a caller created.
class TlsContext {
 public:
  virtual ~TlsContext() = default;

  // A verified TLS connection to host:port (see TlsContext in
  // zeus/http/client.h); the message of an error says what failed.
  virtual StatusOr<std::unique_ptr<http_client::ClientConnection>> Connect(
      http_client::asio::io_context& ioc, const std::string& host, unsigned short port,
      const http_client::Limits& limits) const = 0;
};

}  // namespace zeus

#endif  // ZEUS_SRC_HTTP_CLIENT_CONNECTION_H_
