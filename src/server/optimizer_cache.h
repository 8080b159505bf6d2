// Decoded jobs, keyed by job id and by the exact stored text they were
// decoded from: the BatchSizeOptimizer of a state and, beside it, the
// BatchSizeJobSpec of a spec. A lookup hits only when the database still
// holds that text, so the cache can never serve a stale state or spec,
// whichever process (or replica) wrote last; a miss (a restart, another
// replica's write, a job deleted and registered again) means parsing the
// stored text, with the same result. It saves parsing the spec and parsing
// and rebuilding the optimizer (which refits every arm) on each request.
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
#include "zeus/protocol/job_spec.h"

namespace zeus::server_internal {

class OptimizerCache {
 public:
  // Holds at most `capacity` jobs; beyond it, the cache starts over.
  explicit OptimizerCache(size_t capacity) : capacity_(capacity) {}

  // A copy of the optimizer decoded from `state_json` of `job_id`, if cached.
  std::optional<BatchSizeOptimizer> Find(const std::string& job_id, const std::string& state_json) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(job_id);
    if (it == entries_.end() || !it->second.optimizer || it->second.state_json != state_json) {
      return std::nullopt;
    }
    return it->second.optimizer;
  }

  // Remembers that `state_json` decodes to `optimizer`.
  void Put(const std::string& job_id, std::string state_json, const BatchSizeOptimizer& optimizer) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& entry = EntryOf(job_id);
    entry.state_json = std::move(state_json);
    entry.optimizer = optimizer;
  }

  // A copy of the spec parsed from `spec_json` of `job_id`, if cached.
  std::optional<BatchSizeJobSpec> FindSpec(const std::string& job_id,
                                           const std::string& spec_json) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(job_id);
    if (it == entries_.end() || !it->second.spec || it->second.spec_json != spec_json) {
      return std::nullopt;
    }
    return it->second.spec;
  }

  // Remembers that `spec_json` parses to `spec`.
  void PutSpec(const std::string& job_id, std::string spec_json, const BatchSizeJobSpec& spec) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& entry = EntryOf(job_id);
    entry.spec_json = std::move(spec_json);
    entry.spec = spec;
  }

 private:
  struct Entry {
    std::string state_json;
    std::optional<BatchSizeOptimizer> optimizer;
    std::string spec_json;
    std::optional<BatchSizeJobSpec> spec;
  };

  // The entry of `job_id`, made empty if new. REQUIRES: mutex_ is held.
  Entry& EntryOf(const std::string& job_id) {
    if (entries_.size() >= capacity_ && entries_.count(job_id) == 0) entries_.clear();
    return entries_[job_id];
  }

  size_t capacity_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_OPTIMIZER_CACHE_H_
