#include "zeus/http/transport.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "src/http/transport_impl.h"
#include "src/http/worker_pool.h"

namespace zeus {

using namespace transport_detail;  // NOLINT(build/namespaces): the transport's own helpers.
using http_internal::EnsureAlternateSignalStack;
using http_internal::WorkerPool;

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
    StartConnection(this, std::move(socket), std::move(peer), address);
    AcceptTcp();
  });
}

void HttpTransport::Impl::AcceptUnix() {
  unix_acceptor->async_accept(asio::make_strand(ioc), [this](error_code ec, local::socket socket) {
    if (stopping || !unix_acceptor->is_open()) return;
    if (ec) return RetryAccept(ec, [this] { AcceptUnix(); });
    StatusOr<Peer> peer = PeerOfUnixSocket(socket.native_handle());
    if (peer.ok()) {
      StartConnection(this, std::move(socket), std::move(*peer), "");
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
