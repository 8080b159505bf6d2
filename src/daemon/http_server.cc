#include "src/daemon/http_server.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "src/daemon/single_instance.h"

namespace zeus::daemon {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using UnixSocket = net::local::stream_protocol::socket;
using TcpSocket = net::ip::tcp::socket;

namespace {

std::string ErrorBody(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump();
}

// One connection: read a request (bounded in size and time), answer it,
// repeat while the client keeps the connection alive.
template <class Socket>
class Session : public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, Peer peer, const HttpServerOptions* options, const HttpHandler* handler,
          std::atomic<int>* open, std::atomic<int>* streams)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        peer_(std::move(peer)),
        options_(options),
        handler_(handler),
        open_(open),
        streams_(streams) {}
  ~Session() {
    // The stream goes first: its producer forgets this reader.
    stream_.reset();
    if (streaming_) --*streams_;
    --*open_;
  }

  void Start() { ReadRequest(); }

  // Answers `status` and closes, without reading a request.
  void Refuse(int status, const std::string& message) {
    WriteResponse(HttpResponse{status, ErrorBody(message)}, false, 11);
  }

 private:
  void ReadRequest() {
    parser_.emplace();
    parser_->body_limit(options_->max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(options_->max_header_bytes));
    timed_out_ = false;
    timer_.expires_after(options_->request_timeout);
    auto self = this->shared_from_this();
    timer_.async_wait([self](beast::error_code ec) {
      if (ec) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);
    });
    http::async_read(socket_, buffer_, *parser_,
                     [self](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    timer_.cancel();
    const int version = parser_->get().version() == 10 ? 10 : 11;
    if (timed_out_) {
      if (buffer_.size() == 0 && !parser_->got_some()) return Close();  // Idle keep-alive.
      return WriteResponse(
          HttpResponse{408, ErrorBody("request not received within " +
                                      std::to_string(options_->request_timeout.count()) + " ms")},
          false, version);
    }
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return Close();
    }
    if (ec == http::error::body_limit) {
      return WriteResponse(
          HttpResponse{413, ErrorBody("request body exceeds the limit of " +
                                      std::to_string(options_->max_body_bytes) + " bytes")},
          false, version);
    }
    if (ec == http::error::header_limit) {
      return WriteResponse(
          HttpResponse{431, ErrorBody("request line and headers exceed the limit of " +
                                      std::to_string(options_->max_header_bytes) + " bytes")},
          false, version);
    }
    if (ec) {
      return WriteResponse(HttpResponse{400, ErrorBody("malformed HTTP request: " + ec.message())},
                           false, version);
    }
    http::request<http::string_body> request = parser_->release();
    HttpRequest req{std::string(request.method_string()), std::string(request.target()),
                    std::move(request.body()), peer_,
                    std::string(request[http::field::authorization])};
    HttpResponse response;
    try {
      response = (*handler_)(req);
    } catch (const std::exception& e) {
      response = HttpResponse{500, ErrorBody(std::string("internal error: ") + e.what())};
    }
    WriteResponse(std::move(response), request.keep_alive(), request.version());
  }

  void WriteResponse(HttpResponse response, bool keep_alive, int version) {
    if (response.stream != nullptr) return StartStream(std::move(response), version);
    auto message = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version);
    message->set(http::field::server, "zeusd (zeus daemon)");
    message->set(http::field::content_type, response.content_type);
    if (!response.extra_header_name.empty()) {
      message->set(response.extra_header_name, response.extra_header_value);
    }
    message->keep_alive(keep_alive);
    message->body() = std::move(response.body);
    message->prepare_payload();
    auto self = this->shared_from_this();
    timer_.expires_after(options_->request_timeout);
    timer_.async_wait([self](beast::error_code ec) {
      if (ec) return;
      beast::error_code ignored;
      self->socket_.close(ignored);
    });
    http::async_write(socket_, *message,
                      [self, message, keep_alive](beast::error_code ec, std::size_t) {
                        self->timer_.cancel();
                        if (ec || !keep_alive) return self->Close();
                        self->ReadRequest();
                      });
  }

  // A streamed response: the header, then the stream's events as they come
  // (chunked for HTTP/1.1; for HTTP/1.0 the body ends when the connection
  // closes). At most one write is in flight; a write that does not complete
  // within the request timeout (a reader that stopped reading) closes the
  // connection. A read is kept pending to notice a client that leaves.
  void StartStream(HttpResponse response, int version) {
    stream_ = std::move(response.stream);
    streaming_ = true;
    ++*streams_;
    chunked_ = version == 11;
    auto header = std::make_shared<http::response<http::empty_body>>(http::status::ok, version);
    header->set(http::field::server, "zeusd (zeus daemon)");
    header->set(http::field::content_type, response.content_type);
    header->set(http::field::cache_control, "no-cache");
    header->keep_alive(false);
    if (chunked_) header->chunked(true);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
    auto self = this->shared_from_this();
    ArmWriteTimer();
    http::async_write_header(socket_, *serializer,
                             [self, header, serializer](beast::error_code ec, std::size_t) {
                               self->timer_.cancel();
                               if (ec) return self->Close();
                               self->WatchPeer();
                               std::weak_ptr<Session> weak = self;
                               auto executor = self->socket_.get_executor();
                               self->stream_->SetWake([weak, executor] {
                                 net::post(executor, [weak] {
                                   if (auto session = weak.lock()) session->Pump();
                                 });
                               });
                               self->Pump();
                             });
  }

  void Pump() {
    if (writing_ || closed_ || stream_ == nullptr) return;
    std::string events = stream_->TakeEvents();
    const bool ended = stream_->Ended();
    if (events.empty() && !ended) return;
    auto data = std::make_shared<std::string>();
    if (!chunked_) {
      *data = std::move(events);
    } else {
      if (!events.empty()) {
        char size[32];
        std::snprintf(size, sizeof(size), "%zx\r\n", events.size());
        *data = size + events + "\r\n";
      }
      if (ended) *data += "0\r\n\r\n";
    }
    writing_ = true;
    auto self = this->shared_from_this();
    ArmWriteTimer();
    net::async_write(socket_, net::buffer(*data),
                     [self, data, ended](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       self->timer_.cancel();
                       if (ec || ended) return self->Close();
                       self->Pump();
                     });
  }

  // Anything the client sends on a stream is discarded; its end (or an
  // error) closes the connection, which drops the stream.
  void WatchPeer() {
    auto self = this->shared_from_this();
    socket_.async_read_some(net::buffer(discard_), [self](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      self->WatchPeer();
    });
  }

  void ArmWriteTimer() {
    auto self = this->shared_from_this();
    timer_.expires_after(options_->request_timeout);
    timer_.async_wait([self](beast::error_code ec) {
      if (ec) return;
      self->Close();
    });
  }

  void Close() {
    closed_ = true;
    beast::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Socket socket_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Peer peer_;
  const HttpServerOptions* options_;
  const HttpHandler* handler_;
  std::atomic<int>* open_;
  std::atomic<int>* streams_;
  bool timed_out_ = false;
  // Streamed responses.
  std::shared_ptr<EventStream> stream_;
  bool streaming_ = false;
  bool chunked_ = false;
  bool writing_ = false;
  bool closed_ = false;
  char discard_[512];
};

Status Errno(const std::string& what) { return IoError(what + ": " + std::strerror(errno)); }

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        unix_acceptor_(io_),
        tcp_acceptor_(io_) {}

  Status Start() {
    ZEUS_RETURN_IF_ERROR(BindUnix());
    if (options_.tcp_port >= 0) ZEUS_RETURN_IF_ERROR(BindTcp());
    AcceptUnix();
    if (tcp_acceptor_.is_open()) AcceptTcp();
    for (int i = 0; i < std::max(1, options_.threads); ++i) {
      threads_.emplace_back([this] { io_.run(); });
    }
    return Status::Ok();
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    // Streams ended by their producers send their last chunk and close.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (streams_.load() > 0 && !threads_.empty() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    io_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    beast::error_code ignored;
    unix_acceptor_.close(ignored);
    tcp_acceptor_.close(ignored);
    if (bound_unix_) unlink(options_.socket_path.c_str());
  }

  int tcp_port() const { return tcp_port_; }
  int open_streams() const { return streams_.load(); }

 private:
  Status BindUnix() {
    const std::string& path = options_.socket_path;
    const size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = path.substr(0, slash);
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno(dir + ": mkdir");
    }
    // Removes only a socket nobody answers on (a crashed daemon's).
    ZEUS_RETURN_IF_ERROR(ClaimSocketPath(path));
    beast::error_code ec;
    unix_acceptor_.open(net::local::stream_protocol(), ec);
    if (!ec) unix_acceptor_.bind(net::local::stream_protocol::endpoint(path), ec);
    if (!ec) unix_acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return IoError(path + ": cannot listen on the Unix socket: " + ec.message());
    bound_unix_ = true;
    if (chmod(path.c_str(), options_.socket_mode) != 0) return Errno(path + ": chmod");
    if (options_.socket_group &&
        chown(path.c_str(), static_cast<uid_t>(-1), *options_.socket_group) != 0) {
      return Errno(path + ": chown to group " + std::to_string(*options_.socket_group));
    }
    return Status::Ok();
  }

  Status BindTcp() {
    beast::error_code ec;
    const auto address = net::ip::make_address(options_.tcp_host, ec);
    if (ec)
      return InvalidArgumentError("TCP address \"" + options_.tcp_host + "\": " + ec.message());
    const net::ip::tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.tcp_port));
    tcp_acceptor_.open(endpoint.protocol(), ec);
    if (!ec) tcp_acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) tcp_acceptor_.bind(endpoint, ec);
    if (!ec) tcp_acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return IoError("cannot listen on " + options_.tcp_host + ":" +
                     std::to_string(options_.tcp_port) + ": " + ec.message());
    }
    tcp_port_ = tcp_acceptor_.local_endpoint().port();
    return Status::Ok();
  }

  template <class Socket>
  void Serve(Socket socket, Peer peer) {
    const int open = ++open_;
    auto session = std::make_shared<Session<Socket>>(std::move(socket), std::move(peer), &options_,
                                                     &handler_, &open_, &streams_);
    if (open > options_.max_connections) {
      session->Refuse(503, "too many open connections (" +
                               std::to_string(options_.max_connections) + "); try again");
      return;
    }
    session->Start();
  }

  void AcceptUnix() {
    unix_acceptor_.async_accept(
        net::make_strand(io_), [this](beast::error_code ec, UnixSocket socket) {
          if (ec == net::error::operation_aborted) return;
          if (!ec) {
            StatusOr<Peer> peer = PeerOfUnixSocket(socket.native_handle());
            if (peer.ok()) {
              Serve(std::move(socket), std::move(*peer));
            } else {
              spdlog::warn("zeus daemon: dropping a connection: {}", peer.status().ToString());
            }
          }
          AcceptUnix();
        });
  }

  void AcceptTcp() {
    tcp_acceptor_.async_accept(
        net::make_strand(io_), [this](beast::error_code ec, TcpSocket socket) {
          if (ec == net::error::operation_aborted) return;
          if (!ec) {
            Peer peer;
            beast::error_code ignored;
            const auto remote = socket.remote_endpoint(ignored);
            peer.description = "a TCP client at " + remote.address().to_string() + ":" +
                               std::to_string(remote.port());
            Serve(std::move(socket), std::move(peer));
          }
          AcceptTcp();
        });
  }

  const HttpServerOptions options_;
  const HttpHandler handler_;
  // Before io_: sessions still queued in io_ decrement it when io_ is destroyed.
  std::atomic<int> open_{0};
  std::atomic<int> streams_{0};
  net::io_context io_;
  net::local::stream_protocol::acceptor unix_acceptor_;
  net::ip::tcp::acceptor tcp_acceptor_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  bool bound_unix_ = false;
  int tcp_port_ = -1;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
Status HttpServer::Start() { return impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
int HttpServer::tcp_port() const { return impl_->tcp_port(); }
int HttpServer::open_streams() const { return impl_->open_streams(); }

}  // namespace zeus::daemon
