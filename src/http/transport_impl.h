// HttpTransport's internals, shared by transport.cc (accepting, binding,
// starting and stopping) and transport_connection.cc (one connection's
// reads, deadlines and answers). Not a public header.
//
// Thread-safety: HttpTransport::Impl's mutex guards its connection tables;
// the counters are atomic; everything else is set before Start() returns.

#ifndef ZEUS_SRC_HTTP_TRANSPORT_IMPL_H_
#define ZEUS_SRC_HTTP_TRANSPORT_IMPL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>

#include "zeus/http/peer.h"
#include "zeus/http/transport.h"

#include "src/http/worker_pool.h"

namespace zeus {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

// Named, not anonymous: HttpTransport::Impl holds these types, and a class
// with external linkage may not hold types of an anonymous namespace
// (-Wsubobject-linkage once files are compiled together).
namespace transport_detail {

// Memory given back after bursts: answers of at least kLargeAnswerBytes are
// counted; once a second, when they add up to kTrimAfterBytes or more, a
// worker calls malloc_trim(0), returning the free pages of every malloc
// arena (each worker thread may have its own) to the system. Without it,
// glibc kept a burst's peak resident after the clients left.
constexpr size_t kLargeAnswerBytes = 64 * 1024;
constexpr size_t kTrimAfterBytes = 1 << 20;
constexpr std::chrono::seconds kTrimPeriod{1};

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

struct HttpTransport::Impl {
  HttpTransportOptions options;
  HttpRequestCallback on_request;
  HttpRefusalCallback on_refusal;

  // Declared before the io_context: a connection destroyed with it
  // unregisters here.
  mutable std::mutex mutex;
  std::condition_variable drained;
  std::unordered_map<transport_detail::ConnectionBase*,
                     std::weak_ptr<transport_detail::ConnectionBase>>
      open;
  // Those of `open` on the Unix socket, with the budget each counts against
  // (HttpTransportOptions::unix_budget), and how many each budget holds. TCP
  // is one budget: the rest of `open`.
  std::unordered_map<transport_detail::ConnectionBase*, int> local_budget_of;
  std::unordered_map<int, size_t> local_budget_use;
  std::atomic<int> streams{0};

  std::atomic<bool> stopping{false};
  bool started = false;
  int tcp_port = -1;
  bool bound_unix = false;
  std::unique_ptr<http_internal::WorkerPool> workers;
  // One thread for options.priority_paths.
  std::unique_ptr<http_internal::WorkerPool> priority_worker;
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
  bool Register(transport_detail::ConnectionBase* c,
                std::weak_ptr<transport_detail::ConnectionBase> weak, const Peer& peer) {
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
  void Unregister(transport_detail::ConnectionBase* c) {
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

// Serves one accepted connection (`peer` its client, `remote_addr` its IP
// address or empty) until it closes; counted against its budget first.
void StartConnection(HttpTransport::Impl* impl, tcp::socket socket, Peer peer,
                     std::string remote_addr);
void StartConnection(HttpTransport::Impl* impl, local::socket socket, Peer peer,
                     std::string remote_addr);

}  // namespace transport_detail
}  // namespace zeus

#endif  // ZEUS_SRC_HTTP_TRANSPORT_IMPL_H_
