#include "src/http/worker_pool.h"

#include <signal.h>

#include <algorithm>
#include <utility>

namespace zeus::http_internal {

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

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      EnsureAlternateSignalStack();
      Run();
    });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(task));
  ready_.notify_one();
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    ready_.notify_all();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkerPool::Run() {
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

}  // namespace zeus::http_internal
