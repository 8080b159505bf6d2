#include "zeus/http/transport.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "zeus/http/query.h"

#include "src/http/worker_pool.h"

namespace zeus {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

// Named, not anonymous: HttpTransport::Impl holds these types, and a class
// with external linkage may not hold types of an anonymous namespace
// (-Wsubobject-linkage once files are compiled together).
namespace transport_detail {

// Bytes read while waiting for the next request on an idle connection.
constexpr size_t kIdleReadBytes = 1024;
// A connection's buffer larger than this is given back once it is idle.
constexpr size_t kKeptBufferBytes = 16 * 1024;
// After a refusal, what the client still sends is read and dropped, up to
// this much and for at most kMaxDrain, so that closing does not reset the
// connection before the client has read the answer.
constexpr size_t kMaxDrainBytes = 64 << 20;
constexpr std::chrono::milliseconds kMaxDrain{2000};
// Memory given back after bursts: answers of at least kLargeAnswerBytes are
// counted; once a second, when they add up to kTrimAfterBytes or more, a
// worker calls malloc_trim(0), returning the free pages of every malloc
// arena (each worker thread may have its own) to the system. Without it,
// glibc kept a burst's peak resident after the clients left.
constexpr size_t kLargeAnswerBytes = 64 * 1024;
constexpr size_t kTrimAfterBytes = 1 << 20;
constexpr std::chrono::seconds kTrimPeriod{1};

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

// What the transport does to one open connection, whatever its socket type.
class ConnectionBase {
 public:
  virtual ~ConnectionBase() = default;
  // Closes the connection unless a request is being handled or answered, or
  // a stream is being sent (those close when they are done). Posted to the
  // connection's strand.
  virtual void PostStopIfIdle() = 0;
};

}  // namespace transport_detail

using namespace transport_detail;  // NOLINT(build/namespaces): this file's own helpers.
using http_internal::EnsureAlternateSignalStack;
using http_internal::WorkerPool;

struct HttpTransport::Impl {
  HttpTransportOptions options;
  HttpRequestCallback on_request;
  HttpRefusalCallback on_refusal;

  // Declared before the io_context: a connection destroyed with it
  // unregisters here.
  mutable std::mutex mutex;
  std::condition_variable drained;
  std::unordered_map<ConnectionBase*, std::weak_ptr<ConnectionBase>> open;
  // Those of `open` on the Unix socket, with the budget each counts against
  // (HttpTransportOptions::unix_budget), and how many each budget holds. TCP
  // is one budget: the rest of `open`.
  std::unordered_map<ConnectionBase*, int> local_budget_of;
  std::unordered_map<int, size_t> local_budget_use;
  std::atomic<int> streams{0};

  std::atomic<bool> stopping{false};
  bool started = false;
  int tcp_port = -1;
  bool bound_unix = false;
  std::unique_ptr<WorkerPool> workers;
  // One thread for options.priority_paths.
  std::unique_ptr<WorkerPool> priority_worker;
  asio::io_context ioc;
  // The acceptors' and the trim timer's.
  asio::strand<asio::io_context::executor_type> strand{asio::make_strand(ioc)};
  std::optional<tcp::acceptor> tcp_acceptor;
  std::optional<local::acceptor> unix_acceptor;
  std::optional<asio::steady_timer> trim_timer;
  // Bytes of large answers written since the last malloc_trim.
  std::atomic<size_t> large_answer_bytes{0};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> io_threads;

  // Registers a new connection; false when it is one too many for its
  // budget (TCP, or its budget on the Unix socket: readers on TCP cannot take
  // the connections of the Unix socket, where changes are made, nor readers
  // there those of the peers who may change settings).
  bool Register(ConnectionBase* c, std::weak_ptr<ConnectionBase> weak, const Peer& peer) {
    const int budget = peer.local && options.unix_budget ? options.unix_budget(peer) : 0;
    std::lock_guard<std::mutex> lock(mutex);
    open.emplace(c, std::move(weak));
    size_t mine = 0;
    if (peer.local) {
      local_budget_of.emplace(c, budget);
      mine = ++local_budget_use[budget];
    } else {
      mine = open.size() - local_budget_of.size();
    }
    return options.max_connections <= 0 || mine <= static_cast<size_t>(options.max_connections);
  }
  void Unregister(ConnectionBase* c) {
    std::lock_guard<std::mutex> lock(mutex);
    open.erase(c);
    auto budget = local_budget_of.find(c);
    if (budget != local_budget_of.end()) {
      auto use = local_budget_use.find(budget->second);
      if (--use->second == 0) local_budget_use.erase(use);
      local_budget_of.erase(budget);
    }
    if (open.empty()) drained.notify_all();
  }
  Status BindTcp();
  Status BindUnix();
  void AcceptTcp();
  void AcceptUnix();
  void RetryAccept(const error_code& ec, std::function<void()> accept);
  void ScheduleTrim();
};

namespace transport_detail {

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

}  // namespace transport_detail

void HttpTransport::Impl::RetryAccept(const error_code& ec, std::function<void()> accept) {
  // Out of descriptors (EMFILE) or a connection reset while queued: try
  // again shortly rather than spin.
  auto retry = std::make_shared<asio::steady_timer>(
      strand, std::chrono::milliseconds(ec == asio::error::no_descriptors ? 100 : 1));
  retry->async_wait([this, retry, accept = std::move(accept)](error_code wait_ec) {
    if (!wait_ec && !stopping) accept();
  });
}

void HttpTransport::Impl::AcceptTcp() {
  tcp_acceptor->async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (stopping || !tcp_acceptor->is_open()) return;
    if (ec) return RetryAccept(ec, [this] { AcceptTcp(); });
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    Peer peer;
    std::string address;
    const tcp::endpoint remote = socket.remote_endpoint(ignored);
    if (!ignored) address = remote.address().to_string();
    peer.description = "a TCP client at " + address + ":" + std::to_string(remote.port());
    std::make_shared<Connection<tcp>>(this, std::move(socket), std::move(peer), address)->Start();
    AcceptTcp();
  });
}

void HttpTransport::Impl::AcceptUnix() {
  unix_acceptor->async_accept(asio::make_strand(ioc), [this](error_code ec, local::socket socket) {
    if (stopping || !unix_acceptor->is_open()) return;
    if (ec) return RetryAccept(ec, [this] { AcceptUnix(); });
    StatusOr<Peer> peer = PeerOfUnixSocket(socket.native_handle());
    if (peer.ok()) {
      std::make_shared<Connection<local>>(this, std::move(socket), std::move(*peer), "")->Start();
    } else {
      spdlog::warn("{}: dropping a connection: {}", options.name, peer.status().ToString());
    }
    AcceptUnix();
  });
}

void HttpTransport::Impl::ScheduleTrim() {
  trim_timer->expires_after(kTrimPeriod);
  trim_timer->async_wait([this](error_code ec) {
    if (ec || stopping) return;
    if (large_answer_bytes.load() >= kTrimAfterBytes) {
      large_answer_bytes = 0;
      workers->Post([] { malloc_trim(0); });
    }
    ScheduleTrim();
  });
}

namespace {

// "host:port", bracketing an IPv6 host.
std::string Address(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Status Errno(const std::string& what) { return IoError(what + ": " + std::strerror(errno)); }

}  // namespace

Status HttpTransport::Impl::BindTcp() {
  const HttpTransportOptions& o = options;
  const std::string address = Address(o.tcp_host, o.tcp_port);
  tcp::resolver resolver(ioc);
  error_code ec;
  auto endpoints =
      resolver.resolve(o.tcp_host, std::to_string(o.tcp_port), tcp::resolver::passive, ec);
  if (ec) {
    return UnavailableError("http: cannot bind " + address +
                            ": cannot resolve the host: " + ec.message());
  }
  std::string reason = "no usable address";
  for (const auto& entry : endpoints) {
    tcp::acceptor acceptor(strand);
    const tcp::endpoint endpoint = entry.endpoint();
    if (acceptor.open(endpoint.protocol(), ec); ec) {
      reason = ec.message();
      continue;
    }
    // Allows a restart while old connections linger in TIME_WAIT; never
    // SO_REUSEPORT, with which a second server would share the port.
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor.bind(endpoint, ec); ec) {
      reason = ec.message();
      if (ec == asio::error::address_in_use) {
        reason += " (another process already listens there; " + o.name + " never shares a port)";
        break;
      }
      continue;
    }
    if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
      reason = ec.message();
      continue;
    }
    tcp_port = acceptor.local_endpoint().port();
    tcp_acceptor.emplace(std::move(acceptor));
    return Status::Ok();
  }
  return UnavailableError("http: cannot bind " + address + ": " + reason);
}

Status HttpTransport::Impl::BindUnix() {
  const std::string& path = options.unix_socket_path;
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno(dir + ": mkdir");
  }
  if (options.claim_unix_socket) ZEUS_RETURN_IF_ERROR(options.claim_unix_socket(path));
  local::acceptor acceptor(strand);
  error_code ec;
  acceptor.open(local(), ec);
  if (!ec) acceptor.bind(local::endpoint(path), ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return IoError(path + ": cannot listen on the Unix socket: " + ec.message());
  unix_acceptor.emplace(std::move(acceptor));
  bound_unix = true;
  if (chmod(path.c_str(), options.unix_socket_mode) != 0) return Errno(path + ": chmod");
  if (options.unix_socket_group &&
      chown(path.c_str(), static_cast<uid_t>(-1), *options.unix_socket_group) != 0) {
    return Errno(path + ": chown to group " + std::to_string(*options.unix_socket_group));
  }
  return Status::Ok();
}

HttpTransport::HttpTransport(HttpTransportOptions options, HttpRequestCallback on_request,
                             HttpRefusalCallback on_refusal)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->on_request = std::move(on_request);
  impl_->on_refusal = std::move(on_refusal);
}

HttpTransport::~HttpTransport() { Stop(); }

Status HttpTransport::Start() {
  Impl& impl = *impl_;
  const HttpTransportOptions& o = impl.options;
  if (impl.started) return FailedPreconditionError("http: the server was started already");
  auto fail = [&impl](Status status) {
    error_code ignored;
    if (impl.unix_acceptor) impl.unix_acceptor->close(ignored);
    if (impl.tcp_acceptor) impl.tcp_acceptor->close(ignored);
    if (impl.bound_unix) unlink(impl.options.unix_socket_path.c_str());
    impl.bound_unix = false;
    return status;
  };
  if (!o.unix_socket_path.empty()) {
    if (Status s = impl.BindUnix(); !s.ok()) return fail(s);
  }
  if (o.tcp_port >= 0) {
    if (Status s = impl.BindTcp(); !s.ok()) return fail(s);
  }
  impl.trim_timer.emplace(impl.strand);
  impl.work.emplace(impl.ioc.get_executor());
  if (o.worker_threads > 0) {
    impl.workers = std::make_unique<WorkerPool>(o.worker_threads);
    impl.priority_worker = std::make_unique<WorkerPool>(1);
    impl.ScheduleTrim();
  }
  if (impl.unix_acceptor) impl.AcceptUnix();
  if (impl.tcp_acceptor) impl.AcceptTcp();
  for (int i = 0; i < std::max(1, o.io_threads); ++i) {
    impl.io_threads.emplace_back([&impl] {
      EnsureAlternateSignalStack();
      impl.ioc.run();
    });
  }
  impl.started = true;
  return Status::Ok();
}

int HttpTransport::tcp_port() const { return impl_->tcp_port; }

size_t HttpTransport::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->open.size();
}

int HttpTransport::open_streams() const { return impl_->streams.load(); }

void HttpTransport::Stop() {
  Impl& impl = *impl_;
  if (!impl.started) return;
  impl.started = false;
  impl.stopping = true;
  std::promise<void> closed;
  asio::post(impl.strand, [&impl, &closed] {
    error_code ignored;
    if (impl.tcp_acceptor) impl.tcp_acceptor->close(ignored);
    if (impl.unix_acceptor) impl.unix_acceptor->close(ignored);
    impl.trim_timer->cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  std::vector<std::shared_ptr<ConnectionBase>> alive;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    for (const auto& [c, weak] : impl.open) {
      // One being destroyed waits for the lock to unregister; its weak
      // pointer has expired already.
      if (std::shared_ptr<ConnectionBase> connection = weak.lock()) {
        alive.push_back(std::move(connection));
      }
    }
  }
  // Released outside the lock: the last reference unregisters.
  for (std::shared_ptr<ConnectionBase>& connection : alive) connection->PostStopIfIdle();
  alive.clear();
  std::unique_lock<std::mutex> lock(impl.mutex);
  impl.drained.wait_for(lock, impl.options.stop_grace, [&impl] { return impl.open.empty(); });
  lock.unlock();
  impl.work.reset();
  impl.ioc.stop();
  for (std::thread& t : impl.io_threads) t.join();
  impl.io_threads.clear();
  if (impl.workers) impl.workers->Stop();
  if (impl.priority_worker) impl.priority_worker->Stop();
  if (impl.bound_unix) unlink(impl.options.unix_socket_path.c_str());
  impl.bound_unix = false;
}

}  // namespace zeus
