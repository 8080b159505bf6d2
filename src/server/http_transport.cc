#include "src/server/http_transport.h"

#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace zeus::server_internal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
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
// this much and for at most kMaxDrainS, so that closing does not reset the
// connection before the client has read the answer.
constexpr size_t kMaxDrainBytes = 64 << 20;
constexpr double kMaxDrainS = 2.0;
// How long Stop() waits for in-flight requests.
constexpr std::chrono::seconds kStopGrace{10};
// Memory given back after bursts: answers of at least kLargeAnswerBytes are
// counted; once a second, when they add up to kTrimAfterBytes or more, a
// worker calls malloc_trim(0), returning the free pages of every malloc
// arena (each worker thread may have its own) to the system. Without it,
// glibc kept a burst's peak resident after the clients left.
constexpr size_t kLargeAnswerBytes = 64 * 1024;
constexpr size_t kTrimAfterBytes = 1 << 20;
constexpr std::chrono::seconds kTrimPeriod{1};

SteadyClock::duration Seconds(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

// Gives each calling thread an alternate signal stack, once, so that a
// handler of SIGSEGV can run after the thread overflowed its stack.
void EnsureAlternateSignalStack() {
  struct AltStack {
    std::vector<char> memory;
    AltStack() : memory(std::max<size_t>(SIGSTKSZ, 64 * 1024)) {
      stack_t stack{};
      stack.ss_sp = memory.data();
      stack.ss_size = memory.size();
      if (sigaltstack(&stack, nullptr) != 0) memory.clear();
    }
    ~AltStack() {
      if (memory.empty()) return;
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
  };
  thread_local AltStack alt_stack;
}

// A fixed set of threads running posted tasks in order of posting.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        EnsureAlternateSignalStack();
        Run();
      });
    }
  }
  ~WorkerPool() { Stop(); }

  void Post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    ready_.notify_one();
  }
  // Runs what was posted, then joins.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ready_.notify_all();
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; '+' as a space when `plus_is_space` (query strings).
std::string DecodeUrl(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = HexValue(text[i + 1]);
      const int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += plus_is_space && text[i] == '+' ? ' ' : text[i];
  }
  return out;
}

HttpFields ParseQuery(std::string_view query) {
  HttpFields params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    params.emplace_back(DecodeUrl(key, true), DecodeUrl(value, true));
  }
  return params;
}

// Method, path, query and headers of a parsed request head.
HttpRequest RequestHead(const http::request<http::string_body>& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  std::string_view target(message.target().data(), message.target().size());
  const size_t question = target.find('?');
  request.path = DecodeUrl(target.substr(0, question), false);
  if (question != std::string_view::npos) {
    request.query = std::string(target.substr(question + 1));
    request.params = ParseQuery(request.query);
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

}  // namespace transport_detail

using namespace transport_detail;  // NOLINT(build/namespaces): this file's own helpers.

class Connection;

struct HttpTransport::Impl {
  HttpTransportOptions options;
  RequestCallback on_request;
  RefusalCallback on_refusal;

  // Declared before the io_context: a connection destroyed with it
  // unregisters here.
  mutable std::mutex mutex;
  std::condition_variable drained;
  std::unordered_set<Connection*> open;

  std::atomic<bool> stopping{false};
  bool started = false;
  int port = 0;
  std::unique_ptr<WorkerPool> workers;
  // One thread for options.priority_paths.
  std::unique_ptr<WorkerPool> priority_worker;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::steady_timer> accept_retry;
  std::optional<asio::steady_timer> trim_timer;
  // Bytes of large answers written since the last malloc_trim.
  std::atomic<size_t> large_answer_bytes{0};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> io_threads;

  void Register(Connection* c) {
    std::lock_guard<std::mutex> lock(mutex);
    open.insert(c);
  }
  void Unregister(Connection* c) {
    std::lock_guard<std::mutex> lock(mutex);
    open.erase(c);
    if (open.empty()) drained.notify_all();
  }
  void Accept();
  void ScheduleTrim();
};

// One client connection, driven by completion handlers on its own strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpTransport::Impl* impl, tcp::socket socket)
      : impl_(impl), stream_(std::move(socket)) {
    error_code ec;
    tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_addr_ = peer.address().to_string();
    impl_->Register(this);
  }
  ~Connection() { impl_->Unregister(this); }

  void Start() { WaitForRequest(); }

  asio::any_io_executor executor() { return stream_.get_executor(); }

  // Closes the connection unless a request is being handled or answered
  // (that one closes after its answer). Runs on the connection's strand.
  void StopIfIdle() {
    stop_requested_ = true;
    if (!busy_) stream_.close();
  }

 private:
  const HttpTransportOptions& options() const { return impl_->options; }
  bool Stopping() const { return stop_requested_ || impl_->stopping; }

  void WaitForRequest() {
    if (Stopping()) return Close();
    if (buffer_.size() > 0) return ReadHeader();  // Pipelined.
    if (buffer_.capacity() > kKeptBufferBytes) buffer_.shrink_to_fit();
    stream_.expires_after(Seconds(options().idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = shared_from_this()](error_code ec, size_t n) {
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
    // The whole request, from its first byte, within the read timeout.
    stream_.expires_after(Seconds(options().read_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) {
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
      asio::async_write(stream_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                        [self = shared_from_this()](error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) {
                       if (ec) return self->OnReadError(ec);
                       self->Dispatch();
                     });
  }

  void OnReadError(const error_code& ec) {
    if (ec == http::error::header_limit) {
      return Refuse(431, fmt::format("request header fields too large: more than {} bytes",
                                     options().max_header_bytes));
    }
    if (ec == http::error::body_limit) {
      return Refuse(
          413, fmt::format("request body too large: more than {} bytes", options().max_body_bytes));
    }
    if (IsParseError(ec)) return Refuse(400, "bad request: " + ec.message());
    // End of stream, a deadline passed (idle or slow sender), reset, stop.
    Close();
  }

  void Dispatch() {
    HttpRequest request = RequestHead(parser_->get());
    request.body = std::move(parser_->get().body());
    request.remote_addr = remote_addr_;
    request.headers_read_at = headers_done_;
    const bool keep_alive = parser_->get().keep_alive();
    const bool head = parser_->get().method() == http::verb::head;
    parser_.reset();
    busy_ = true;
    stream_.expires_never();
    const std::vector<std::string>& priority = options().priority_paths;
    const bool prioritised =
        std::find(priority.begin(), priority.end(), request.path) != priority.end();
    WorkerPool* pool = prioritised ? impl_->priority_worker.get() : impl_->workers.get();
    pool->Post([self = shared_from_this(), request = std::move(request), keep_alive, head]() {
      HttpResponse response;
      try {
        response = self->impl_->on_request(request);
      } catch (...) {
        response = ErrorResponse(500, "internal error while handling the request");
      }
      asio::post(self->executor(),
                 [self, response = std::move(response), keep_alive, head]() mutable {
                   self->Write(std::move(response), keep_alive, head, /*drain=*/false);
                 });
    });
  }

  void Refuse(int status, const std::string& reason) {
    HttpRequest request;
    if (parser_ && parser_->is_header_done()) request = RequestHead(parser_->get());
    request.remote_addr = remote_addr_;
    request.headers_read_at = SteadyClock::now();
    parser_.reset();
    busy_ = true;
    Write(impl_->on_refusal(request, status, reason), /*keep_alive=*/false, /*head=*/false,
          /*drain=*/true);
  }

  void Write(HttpResponse response, bool keep_alive, bool head, bool drain) {
    auto message = std::make_shared<http::response<http::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    message->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message->insert(name, value);
    keep_alive = keep_alive && !Stopping();
    message->keep_alive(keep_alive);
    message->content_length(response.body.size());
    const size_t body_bytes = response.body.size();
    if (!head) message->body() = std::move(response.body);
    // A client that does not read its answer is cut off too.
    stream_.expires_after(Seconds(options().read_timeout_s));
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message, keep_alive, drain, body_bytes](error_code ec, size_t) {
          self->busy_ = false;
          if (body_bytes >= kLargeAnswerBytes) self->impl_->large_answer_bytes += body_bytes;
          if (ec) return self->Close();
          if (drain) return self->Drain();
          if (!keep_alive) return self->Close();
          self->WaitForRequest();
        });
  }

  // Half-closes, then reads and drops what the client still sends.
  void Drain() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(Seconds(std::min(options().read_timeout_s, kMaxDrainS)));
    buffer_.clear();
    DrainSome(0);
  }

  void DrainSome(size_t drained) {
    stream_.async_read_some(buffer_.prepare(16 * 1024),
                            [self = shared_from_this(), drained](error_code ec, size_t n) {
                              if (ec || drained + n > kMaxDrainBytes) return self->Close();
                              self->DrainSome(drained + n);
                            });
  }

  void Close() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  HttpTransport::Impl* impl_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string remote_addr_;
  SteadyClock::time_point headers_done_;
  // From a complete request until its answer is written.
  bool busy_ = false;
  bool stop_requested_ = false;
};

void HttpTransport::Impl::Accept() {
  acceptor->async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (stopping || !acceptor->is_open()) return;
    if (ec) {
      // Out of descriptors (EMFILE) or a connection reset while queued: try
      // again shortly rather than spin.
      accept_retry->expires_after(
          std::chrono::milliseconds(ec == asio::error::no_descriptors ? 100 : 1));
      accept_retry->async_wait([this](error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<Connection>(this, std::move(socket))->Start();
    Accept();
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

HttpTransport::HttpTransport(HttpTransportOptions options, RequestCallback on_request,
                             RefusalCallback on_refusal)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->on_request = std::move(on_request);
  impl_->on_refusal = std::move(on_refusal);
}

HttpTransport::~HttpTransport() { Stop(); }

namespace {

// "host:port", bracketing an IPv6 host.
std::string Address(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

Status HttpTransport::Start() {
  Impl& impl = *impl_;
  const HttpTransportOptions& o = impl.options;
  const std::string address = Address(o.host, o.port);
  tcp::resolver resolver(impl.ioc);
  error_code ec;
  auto endpoints = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
  if (ec) {
    return UnavailableError("http: cannot bind " + address +
                            ": cannot resolve the host: " + ec.message());
  }
  std::string reason = "no usable address";
  for (const auto& entry : endpoints) {
    tcp::acceptor acceptor(asio::make_strand(impl.ioc));
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
        reason += " (another process already listens there; zeus serve never shares a port)";
        break;
      }
      continue;
    }
    if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
      reason = ec.message();
      continue;
    }
    impl.port = acceptor.local_endpoint().port();
    impl.acceptor.emplace(std::move(acceptor));
    break;
  }
  if (!impl.acceptor) return UnavailableError("http: cannot bind " + address + ": " + reason);
  impl.accept_retry.emplace(impl.acceptor->get_executor());
  impl.trim_timer.emplace(impl.acceptor->get_executor());
  impl.work.emplace(impl.ioc.get_executor());
  impl.workers = std::make_unique<WorkerPool>(std::max(1, o.worker_threads));
  impl.priority_worker = std::make_unique<WorkerPool>(1);
  impl.Accept();
  impl.ScheduleTrim();
  for (int i = 0; i < std::max(1, o.io_threads); ++i) {
    impl.io_threads.emplace_back([&impl] {
      EnsureAlternateSignalStack();
      impl.ioc.run();
    });
  }
  impl.started = true;
  return Status::Ok();
}

int HttpTransport::port() const { return impl_->port; }

size_t HttpTransport::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->open.size();
}

void HttpTransport::Stop() {
  Impl& impl = *impl_;
  if (!impl.started) return;
  impl.started = false;
  impl.stopping = true;
  asio::post(impl.acceptor->get_executor(), [&impl] {
    error_code ignored;
    impl.acceptor->close(ignored);
    impl.accept_retry->cancel();
    impl.trim_timer->cancel();
  });
  std::vector<std::shared_ptr<Connection>> alive;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    for (Connection* c : impl.open) {
      // One being destroyed waits for the lock to unregister; its weak
      // pointer has expired already.
      if (std::shared_ptr<Connection> connection = c->weak_from_this().lock()) {
        alive.push_back(std::move(connection));
      }
    }
  }
  // Released outside the lock: the last reference unregisters.
  for (std::shared_ptr<Connection>& connection : alive) {
    asio::post(connection->executor(), [connection] { connection->StopIfIdle(); });
  }
  alive.clear();
  std::unique_lock<std::mutex> lock(impl.mutex);
  impl.drained.wait_for(lock, kStopGrace, [&impl] { return impl.open.empty(); });
  lock.unlock();
  impl.work.reset();
  impl.ioc.stop();
  for (std::thread& t : impl.io_threads) t.join();
  impl.io_threads.clear();
  impl.workers->Stop();
  impl.priority_worker->Stop();
}

}  // namespace zeus::server_internal
