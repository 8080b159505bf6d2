// The transport's threads: a fixed pool of workers, and the alternate signal
// stack every thread of the HTTP layer runs on.
//
// Thread-safety: WorkerPool::Post may be called from any thread; Stop from
// one.

#ifndef ZEUS_SRC_HTTP_WORKER_POOL_H_
#define ZEUS_SRC_HTTP_WORKER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zeus::http_internal {

// Gives the calling thread an alternate signal stack, once, so that a
// handler of SIGSEGV can run after the thread overflowed its stack.
void EnsureAlternateSignalStack();

// A fixed set of threads (each on an alternate signal stack) running posted
// tasks in order of posting.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  // Stops.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Post(std::function<void()> task);
  // Runs what was posted, then joins. Idempotent.
  void Stop();

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zeus::http_internal

#endif  // ZEUS_SRC_HTTP_WORKER_POOL_H_
