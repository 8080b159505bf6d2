#include "src/server/stored_job.h"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "zeus/util/json.h"

namespace zeus::server_internal {

using nlohmann::json;

Status JobNotFound(const std::string& job_id) {
  return NotFoundError("job \"" + job_id + "\": not found");
}

StatusOr<JobRecord> LockJob(StoreTransaction& txn, const std::string& job_id) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<JobRecord> job, txn.GetJob(job_id));
  if (!job) return JobNotFound(job_id);
  return std::move(*job);
}

StatusOr<BatchSizeJobSpec> DecodeSpec(const JobRecord& job) {
  StatusOr<json> parsed = ParseJson(job.spec_json, "job \"" + job.job_id + "\": stored spec");
  if (!parsed.ok()) return InternalError(parsed.status().message());
  StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(*parsed);
  if (!spec.ok()) {
    return InternalError("job \"" + job.job_id + "\": stored spec: " + spec.status().message());
  }
  return spec;
}

StatusOr<BatchSizeOptimizer> DecodeOptimizer(const JobRecord& job) {
  StatusOr<json> parsed =
      ParseJson(job.state_json, "job \"" + job.job_id + "\": stored optimizer state");
  if (!parsed.ok()) return InternalError(parsed.status().message());
  StatusOr<BatchSizeOptimizer> optimizer = BatchSizeOptimizer::FromJson(*parsed);
  if (!optimizer.ok()) {
    return InternalError("job \"" + job.job_id +
                         "\": stored optimizer state: " + optimizer.status().message());
  }
  return optimizer;
}

StatusOr<BatchSizeJobSpec> SpecOf(const JobRecord& job, OptimizerCache* cache) {
  if (std::optional<BatchSizeJobSpec> cached = cache->FindSpec(job.job_id, job.spec_json)) {
    return std::move(*cached);
  }
  ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec spec, DecodeSpec(job));
  cache->PutSpec(job.job_id, job.spec_json, spec);
  return spec;
}

StatusOr<BatchSizeOptimizer> OptimizerOf(const JobRecord& job, OptimizerCache* cache) {
  if (std::optional<BatchSizeOptimizer> cached = cache->Find(job.job_id, job.state_json)) {
    return std::move(*cached);
  }
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, DecodeOptimizer(job));
  cache->Put(job.job_id, job.state_json, optimizer);
  return optimizer;
}

}  // namespace zeus::server_internal
