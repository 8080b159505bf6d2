// Reads the energy counters of several GPUs concurrently on a persistent pool
// of threads, one per GPU, so that a boundary costs about one counter read
// (NVML: ~3 ms each on H100) instead of one per GPU.
//
// Thread-safety: ReadAll may be called from any thread; concurrent calls are
// serialised.
// Fork: a forked child has none of the parent's threads (and may have
// inherited a locked mutex). The pool notices the changed process id at the
// next ReadAll and starts fresh threads in the child, leaving the parent's
// thread handles and synchronisation state behind untouched; it never waits
// on a thread of another process.

#ifndef ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_
#define ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

class CounterReaderPool {
 public:
  // Starts one thread per GPU. `gpus` must outlive the pool.
  explicit CounterReaderPool(std::vector<Gpu*> gpus);
  // Joins the threads (after any read in flight); in a forked child that
  // never read, leaves the parent's threads alone.
  ~CounterReaderPool();
  CounterReaderPool(const CounterReaderPool&) = delete;
  CounterReaderPool& operator=(const CounterReaderPool&) = delete;

  // Gpu::TotalEnergyMj() of every GPU, read concurrently; returns when all
  // reads have finished. Results are in the order of `gpus`.
  std::vector<StatusOr<uint64_t>> ReadAll();

  // How many times the threads were started (1, plus one per process forked
  // from the creator that called ReadAll). For tests.
  int generations() const { return generations_.load(); }

 private:
  struct Workers;  // The threads of one process and what they share.

  // The workers of the calling process, started if they belong to another.
  Workers* CurrentWorkers();

  const std::vector<Gpu*> gpus_;
  std::atomic<Workers*> workers_;
  std::atomic<int> generations_{0};
};

}  // namespace zeus

#endif  // ZEUS_SRC_MONITOR_COUNTER_READER_POOL_H_
