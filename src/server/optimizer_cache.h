// Decoded BatchSizeOptimizer states, keyed by job id and by the exact stored
// state text: a lookup hits only when the database still holds that text, so
// the cache can never serve a stale state, whichever process wrote last. It
// saves parsing and rebuilding the optimizer (which refits every arm) on each
// request.
//
// Thread-safety: every method may be called concurrently.

#ifndef ZEUS_SRC_SERVER_OPTIMIZER_CACHE_H_
#define ZEUS_SRC_SERVER_OPTIMIZER_CACHE_H_

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

namespace zeus::server_internal {

class OptimizerCache {
 public:
  // Holds at most `capacity` jobs; beyond it, the cache starts over.
  explicit OptimizerCache(size_t capacity) : capacity_(capacity) {}

  // A copy of the optimizer decoded from `state_json` of `job_id`, if cached.
  std::optional<BatchSizeOptimizer> Find(const std::string& job_id, const std::string& state_json) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(job_id);
    if (it == entries_.end() || it->second.state_json != state_json) return std::nullopt;
    return it->second.optimizer;
  }

  // Remembers that `state_json` decodes to `optimizer`.
  void Put(const std::string& job_id, std::string state_json, const BatchSizeOptimizer& optimizer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= capacity_ && entries_.count(job_id) == 0) entries_.clear();
    auto it = entries_.find(job_id);
    if (it != entries_.end()) {
      it->second.state_json = std::move(state_json);
      it->second.optimizer = optimizer;
    } else {
      entries_.emplace(job_id, Entry{std::move(state_json), optimizer});
    }
  }

 private:
  struct Entry {
    std::string state_json;
    BatchSizeOptimizer optimizer;
  };

  size_t capacity_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_OPTIMIZER_CACHE_H_
