#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "zeus/http/query.h"

#include "src/http/transport_impl.h"

namespace zeus {
namespace transport_detail {

namespace beast = boost::beast;
namespace http = beast::http;
using http_internal::WorkerPool;

// Bytes read while waiting for the next request on an idle connection.
constexpr size_t kIdleReadBytes = 1024;
// A connection's buffer larger than this is given back once it is idle.
constexpr size_t kKeptBufferBytes = 16 * 1024;
// After a refusal, what the client still sends is read and dropped, up to
// this much and for at most kMaxDrain, so that closing does not reset the
// connection before the client has read the answer.
constexpr size_t kMaxDrainBytes = 64 << 20;
constexpr std::chrono::milliseconds kMaxDrain{2000};

// Method, target, path (percent-decoded when `decode_path`), query and
// headers of a parsed request head.
HttpRequest RequestHead(const http::request<http::string_body>& message, bool decode_path) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  std::string_view target(request.target);
  const size_t question = target.find('?');
  request.path = decode_path
                     ? PercentDecode(target.substr(0, question), false, BadEscape::kKeep).value()
                     : std::string(target.substr(0, question));
  if (question != std::string_view::npos) {
    request.query = std::string(target.substr(question + 1));
    request.params = ParseQuery(request.query).value();
  }
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return request;
}

bool IsParseError(const error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// One client connection, driven by completion handlers on its own strand.
// Deadlines are a timer that cancels the socket's pending operation (the
// socket stays open, so a 408 can still be written).
template <class Protocol>
class Connection : public ConnectionBase,
                   public std::enable_shared_from_this<Connection<Protocol>> {
 public:
  using Socket = typename Protocol::socket;

  Connection(HttpTransport::Impl* impl, Socket socket, Peer peer, std::string remote_addr)
      : impl_(impl),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        peer_(std::move(peer)),
        remote_addr_(std::move(remote_addr)) {}
  ~Connection() override {
    // The stream goes first: its producer forgets this reader.
    stream_.reset();
    if (streaming_) --impl_->streams;
    impl_->Unregister(this);
  }

  void Start() {
    if (!impl_->Register(this, this->weak_from_this(), peer_)) {
      return Refuse(HttpRefusal::kTooManyConnections, "");
    }
    WaitForRequest();
  }

  void PostStopIfIdle() override {
    asio::post(socket_.get_executor(), [self = this->shared_from_this()] {
      self->stop_requested_ = true;
      if (!self->busy_) self->Close();
    });
  }

 private:
  const HttpTransportOptions& options() const { return impl_->options; }
  bool Stopping() const { return stop_requested_ || impl_->stopping; }

  // Cancels the pending socket operation at `deadline` (its handler then
  // sees timed_out_).
  void ArmDeadline(SteadyClock::time_point deadline) {
    const uint64_t generation = ++deadline_generation_;
    timed_out_ = false;
    timer_.expires_at(deadline);
    timer_.async_wait([self = this->shared_from_this(), generation](error_code ec) {
      if (ec || generation != self->deadline_generation_) return;
      self->timed_out_ = true;
      error_code ignored;
      self->socket_.cancel(ignored);
    });
  }
  void DisarmDeadline() {
    ++deadline_generation_;
    timer_.cancel();
  }

  void WaitForRequest() {
    if (Stopping()) return Close();
    wait_started_ = SteadyClock::now();
    if (buffer_.size() > 0) return ReadHeader();  // Pipelined.
    if (buffer_.capacity() > kKeptBufferBytes) buffer_.shrink_to_fit();
    ArmDeadline(wait_started_ + options().idle_timeout);
    socket_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = this->shared_from_this()](error_code ec, size_t n) {
                              self->DisarmDeadline();
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(std::min<size_t>(options().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(options().max_body_bytes);
    // The whole request within the read timeout.
    ArmDeadline((options().read_deadline_includes_idle ? wait_started_ : SteadyClock::now()) +
                options().read_timeout);
    if (!options().answer_expect_continue) {
      http::async_read(socket_, buffer_, *parser_,
                       [self = this->shared_from_this()](error_code ec, size_t) {
                         if (ec) return self->OnReadError(ec);
                         self->headers_done_ = SteadyClock::now();
                         self->Dispatch();
                       });
      return;
    }
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = this->shared_from_this()](error_code ec, size_t) {
                              if (ec) return self->OnReadError(ec);
                              self->OnHeader();
                            });
  }

  void OnHeader() {
    headers_done_ = SteadyClock::now();
    if (parser_->is_done()) return Dispatch();
    const auto expect = parser_->get()[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                        [self = this->shared_from_this()](error_code ec, size_t) {
                          if (ec) return self->OnReadError(ec);
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(socket_, buffer_, *parser_,
                     [self = this->shared_from_this()](error_code ec, size_t) {
                       if (ec) return self->OnReadError(ec);
                       self->Dispatch();
                     });
  }

  void OnReadError(const error_code& ec) {
    if (timed_out_) {
      // A request begun but not complete in time (an idle connection closed
      // while waiting for its first byte).
      if (options().answer_read_timeout) return Refuse(HttpRefusal::kTimeout, "");
      return Close();
    }
    DisarmDeadline();
    if (ec == http::error::header_limit) return Refuse(HttpRefusal::kHeadTooLarge, "");
    if (ec == http::error::body_limit) return Refuse(HttpRefusal::kBodyTooLarge, "");
    if (IsParseError(ec)) return Refuse(HttpRefusal::kMalformed, ec.message());
    // End of stream, reset, stop.
    Close();
  }

  int Version() const {
    if (!options().echo_http_version || !parser_) return 11;
    return parser_->get().version() == 10 ? 10 : 11;
  }

  void Dispatch() {
    DisarmDeadline();
    HttpRequest request = RequestHead(parser_->get(), options().decode_path);
    request.body = std::move(parser_->get().body());
    request.remote_addr = remote_addr_;
    request.peer = peer_;
    request.headers_read_at = headers_done_;
    const bool keep_alive = parser_->get().keep_alive();
    const bool head = parser_->get().method() == http::verb::head && options().omit_body_for_head;
    const int version = Version();
    parser_.reset();
    busy_ = true;
    if (options().worker_threads <= 0) {
      HttpResponse response = Answer(request);
      return Write(std::move(response), keep_alive, head, version, /*drain=*/false);
    }
    const std::vector<std::string>& priority = options().priority_paths;
    const bool prioritised =
        std::find(priority.begin(), priority.end(), request.path) != priority.end();
    WorkerPool* pool = prioritised ? impl_->priority_worker.get() : impl_->workers.get();
    pool->Post([self = this->shared_from_this(), request = std::move(request), keep_alive, head,
                version]() {
      HttpResponse response = self->Answer(request);
      asio::post(self->socket_.get_executor(),
                 [self, response = std::move(response), keep_alive, head, version]() mutable {
                   self->Write(std::move(response), keep_alive, head, version, /*drain=*/false);
                 });
    });
  }

  HttpResponse Answer(const HttpRequest& request) {
    try {
      return impl_->on_request(request);
    } catch (...) {
      return HttpResponse(500, "{\"message\":\"internal error while handling the request\"}");
    }
  }

  void Refuse(HttpRefusal refusal, const std::string& detail) {
    HttpRequest request;
    if (parser_ && parser_->is_header_done())
      request = RequestHead(parser_->get(), options().decode_path);
    request.remote_addr = remote_addr_;
    request.peer = peer_;
    request.headers_read_at = SteadyClock::now();
    const int version = Version();
    parser_.reset();
    busy_ = true;
    const bool drain = options().drain_after_refusal && refusal != HttpRefusal::kTooManyConnections;
    Write(impl_->on_refusal(request, refusal, detail), /*keep_alive=*/false, /*head=*/false,
          version, drain);
  }

  void SetCommonFields(http::fields& message, const std::string& content_type) {
    if (!options().server_header.empty()) {
      message.set(http::field::server, options().server_header);
    }
    message.set(http::field::content_type, content_type);
  }

  void Write(HttpResponse response, bool keep_alive, bool head, int version, bool drain) {
    if (response.stream != nullptr) return StartStream(std::move(response), version);
    auto message = std::make_shared<http::response<http::string_body>>();
    message->version(version);
    message->result(static_cast<unsigned>(response.status));
    SetCommonFields(*message, response.content_type);
    for (const auto& [name, value] : response.headers) message->insert(name, value);
    keep_alive = keep_alive && !Stopping();
    message->keep_alive(keep_alive);
    message->content_length(response.body.size());
    const size_t body_bytes = response.body.size();
    if (!head) message->body() = std::move(response.body);
    // A client that does not read its answer is cut off too.
    ArmDeadline(SteadyClock::now() + options().write_timeout);
    http::async_write(socket_, *message,
                      [self = this->shared_from_this(), message, keep_alive, drain, body_bytes](
                          error_code ec, size_t) {
                        self->DisarmDeadline();
                        self->busy_ = false;
                        if (body_bytes >= kLargeAnswerBytes) {
                          self->impl_->large_answer_bytes += body_bytes;
                        }
                        if (ec) return self->Close();
                        if (drain) return self->Drain();
                        if (!keep_alive) return self->Close();
                        self->WaitForRequest();
                      });
  }

  // A streamed response: the header, then the stream's events as they come
  // (chunked for HTTP/1.1; for HTTP/1.0 the body ends when the connection
  // closes). At most one write is in flight; a write that does not complete
  // within write_timeout (a reader that stopped reading) closes the
  // connection. A read is kept pending to notice a client that leaves.
  void StartStream(HttpResponse response, int version) {
    stream_ = std::move(response.stream);
    streaming_ = true;
    ++impl_->streams;
    chunked_ = version == 11;
    auto header = std::make_shared<http::response<http::empty_body>>(http::status::ok, version);
    SetCommonFields(*header, response.content_type);
    header->set(http::field::cache_control, "no-cache");
    header->keep_alive(false);
    if (chunked_) header->chunked(true);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
    ArmDeadline(SteadyClock::now() + options().write_timeout);
    http::async_write_header(
        socket_, *serializer,
        [self = this->shared_from_this(), header, serializer](error_code ec, size_t) {
          self->DisarmDeadline();
          if (ec) return self->Close();
          self->WatchPeer();
          std::weak_ptr<Connection> weak = self;
          auto executor = self->socket_.get_executor();
          self->stream_->SetWake([weak, executor] {
            asio::post(executor, [weak] {
              if (auto connection = weak.lock()) connection->Pump();
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
    ArmDeadline(SteadyClock::now() + options().write_timeout);
    asio::async_write(socket_, asio::buffer(*data),
                      [self = this->shared_from_this(), data, ended](error_code ec, size_t) {
                        self->writing_ = false;
                        self->DisarmDeadline();
                        if (ec || ended) return self->Close();
                        self->Pump();
                      });
  }

  // Anything the client sends on a stream is discarded; its end (or an
  // error) closes the connection, which drops the stream.
  void WatchPeer() {
    socket_.async_read_some(asio::buffer(discard_),
                            [self = this->shared_from_this()](error_code ec, size_t) {
                              // The socket is cancelled for a write deadline too.
                              if (ec) return self->Close();
                              self->WatchPeer();
                            });
  }

  // Half-closes, then reads and drops what the client still sends.
  void Drain() {
    error_code ec;
    socket_.shutdown(Socket::shutdown_send, ec);
    ArmDeadline(SteadyClock::now() +
                std::min<std::chrono::milliseconds>(options().read_timeout, kMaxDrain));
    buffer_.clear();
    DrainSome(0);
  }

  void DrainSome(size_t drained) {
    socket_.async_read_some(buffer_.prepare(16 * 1024),
                            [self = this->shared_from_this(), drained](error_code ec, size_t n) {
                              if (ec || drained + n > kMaxDrainBytes) return self->Close();
                              self->DrainSome(drained + n);
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    DisarmDeadline();
    error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  HttpTransport::Impl* impl_;
  Socket socket_;
  asio::steady_timer timer_;
  uint64_t deadline_generation_ = 0;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const Peer peer_;
  const std::string remote_addr_;
  SteadyClock::time_point wait_started_;
  SteadyClock::time_point headers_done_;
  // From a complete request until its answer is written; while streaming.
  bool busy_ = false;
  bool stop_requested_ = false;
  bool closed_ = false;
  // Streamed responses.
  std::shared_ptr<HttpEventStream> stream_;
  bool streaming_ = false;
  bool chunked_ = false;
  bool writing_ = false;
  char discard_[512];
};

void StartConnection(HttpTransport::Impl* impl, tcp::socket socket, Peer peer,
                     std::string remote_addr) {
  std::make_shared<Connection<tcp>>(impl, std::move(socket), std::move(peer),
                                    std::move(remote_addr))
      ->Start();
}

void StartConnection(HttpTransport::Impl* impl, local::socket socket, Peer peer,
                     std::string remote_addr) {
  std::make_shared<Connection<local>>(impl, std::move(socket), std::move(peer),
                                      std::move(remote_addr))
      ->Start();
}

}  // namespace transport_detail
}  // namespace zeus
