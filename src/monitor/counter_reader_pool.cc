#include "src/monitor/counter_reader_pool.h"

#include <utility>

namespace zeus {

CounterReaderPool::CounterReaderPool(std::vector<Gpu*> gpus)
    : gpus_(std::move(gpus)), results_(gpus_.size()) {
  threads_.reserve(gpus_.size());
  for (size_t i = 0; i < gpus_.size(); ++i) threads_.emplace_back([this, i] { Run(i); });
}

CounterReaderPool::~CounterReaderPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<StatusOr<uint64_t>> CounterReaderPool::ReadAll() {
  std::lock_guard<std::mutex> call_lock(call_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  for (auto& r : results_) r.reset();
  pending_ = gpus_.size();
  ++generation_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  std::vector<StatusOr<uint64_t>> out;
  out.reserve(results_.size());
  for (auto& r : results_) out.push_back(std::move(*r));
  return out;
}

void CounterReaderPool::Run(size_t gpu) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    StatusOr<uint64_t> energy_mj = gpus_[gpu]->TotalEnergyMj();
    lock.lock();
    results_[gpu] = std::move(energy_mj);
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace zeus
