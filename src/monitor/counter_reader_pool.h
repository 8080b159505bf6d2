// Reads the energy counters of several GPUs concurrently on a persistent pool
// of threads, one per GPU, so that a boundary costs about one counter read
// (NVML: ~3 ms each on H100) instead of one per GPU.
//
// Thread-safety: ReadAll may be called from any thread; concurrent calls are
// serialised.

#ifndef ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_
#define ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

class CounterReaderPool {
 public:
  // Starts one thread per GPU. `gpus` must outlive the pool.
  explicit CounterReaderPool(std::vector<Gpu*> gpus);
  // Joins the threads (after any read in flight).
  ~CounterReaderPool();
  CounterReaderPool(const CounterReaderPool&) = delete;
  CounterReaderPool& operator=(const CounterReaderPool&) = delete;

  // Gpu::TotalEnergyMj() of every GPU, read concurrently; returns when all
  // reads have finished. Results are in the order of `gpus`.
  std::vector<StatusOr<uint64_t>> ReadAll();

 private:
  void Run(size_t gpu);

  const std::vector<Gpu*> gpus_;
  std::mutex call_mu_;  // Serialises ReadAll.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;                                 // Guarded by mu_.
  size_t pending_ = 0;                                      // Guarded by mu_.
  std::vector<std::optional<StatusOr<uint64_t>>> results_;  // Guarded by mu_.
  bool stop_ = false;                                       // Guarded by mu_.
  std::vector<std::thread> threads_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_
