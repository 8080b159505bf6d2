// A batch-size job read back from the store: its row under a transaction,
// and its spec and optimizer state decoded from the stored text, directly or
// through the OptimizerCache. The service's writes and reads and the
// dashboard's views all decode through these.
//
// Errors: a stored text that does not decode is kInternal naming the job
// ("job \"<id>\": stored spec: ..."); the store validated it on the way in.
// Thread-safety: free functions; the cache is safe to share.

#ifndef ZEUS_SRC_SERVER_STORED_JOB_H_
#define ZEUS_SRC_SERVER_STORED_JOB_H_

#include <string>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/protocol/job_spec.h"
#include "zeus/server/store.h"
#include "zeus/status.h"

#include "src/server/optimizer_cache.h"

namespace zeus::server_internal {

// kNotFound: "job \"<id>\": not found".
Status JobNotFound(const std::string& job_id);

// The job's row, read (and, in a write transaction, locked) by `txn`.
StatusOr<JobRecord> LockJob(StoreTransaction& txn, const std::string& job_id);

StatusOr<BatchSizeJobSpec> DecodeSpec(const JobRecord& job);
StatusOr<BatchSizeOptimizer> DecodeOptimizer(const JobRecord& job);

// As Decode*, but a text `cache` decoded before is not decoded again.
StatusOr<BatchSizeJobSpec> SpecOf(const JobRecord& job, OptimizerCache* cache);
StatusOr<BatchSizeOptimizer> OptimizerOf(const JobRecord& job, OptimizerCache* cache);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_STORED_JOB_H_
