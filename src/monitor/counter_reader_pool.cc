#include "src/monitor/counter_reader_pool.h"

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace zeus {

struct CounterReaderPool::Workers {
  Workers(const std::vector<Gpu*>& gpus_in) : gpus(gpus_in), results(gpus_in.size()) {
    threads.reserve(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) threads.emplace_back([this, i] { Run(i); });
  }

  // REQUIRES: called by the process that constructed this object.
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : threads) t.join();
  }

  std::vector<StatusOr<uint64_t>> ReadAll() {
    std::lock_guard<std::mutex> call_lock(call_mu);
    std::unique_lock<std::mutex> lock(mu);
    for (auto& r : results) r.reset();
    pending = gpus.size();
    ++generation;
    work_cv.notify_all();
    done_cv.wait(lock, [this] { return pending == 0; });
    std::vector<StatusOr<uint64_t>> out;
    out.reserve(results.size());
    for (auto& r : results) out.push_back(std::move(*r));
    return out;
  }

  void Run(size_t gpu) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || generation != seen; });
      if (stop) return;
      seen = generation;
      lock.unlock();
      StatusOr<uint64_t> energy_mj = gpus[gpu]->TotalEnergyMj();
      lock.lock();
      results[gpu] = std::move(energy_mj);
      if (--pending == 0) done_cv.notify_one();
    }
  }

  const pid_t pid = getpid();
  const std::vector<Gpu*>& gpus;
  std::mutex call_mu;  // Serialises ReadAll.
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  uint64_t generation = 0;                                 // Guarded by mu.
  size_t pending = 0;                                      // Guarded by mu.
  std::vector<std::optional<StatusOr<uint64_t>>> results;  // Guarded by mu.
  bool stop = false;                                       // Guarded by mu.
  std::vector<std::thread> threads;
};

CounterReaderPool::CounterReaderPool(std::vector<Gpu*> gpus)
    : gpus_(std::move(gpus)), workers_(new Workers(gpus_)) {
  generations_ = 1;
}

CounterReaderPool::~CounterReaderPool() {
  Workers* w = workers_.load();
  // Another process's workers (we are a forked child that never read) are
  // left behind: their threads are not ours to join.
  if (w->pid == getpid()) delete w;
}

CounterReaderPool::Workers* CounterReaderPool::CurrentWorkers() {
  Workers* w = workers_.load();
  if (w->pid == getpid()) return w;
  // Forked: the parent's workers are abandoned as they are (their threads
  // do not exist here and their mutexes may be locked forever).
  Workers* fresh = new Workers(gpus_);
  if (workers_.compare_exchange_strong(w, fresh)) {
    ++generations_;
    return fresh;
  }
  delete fresh;  // Another thread of this child won; `w` holds its workers.
  return w;
}

std::vector<StatusOr<uint64_t>> CounterReaderPool::ReadAll() { return CurrentWorkers()->ReadAll(); }

}  // namespace zeus
