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

namespace {

// `text` of `job` (its `what`: "spec", "optimizer state") decoded by
// `decode` from JSON; errors name the job and the text.
template <typename T, typename Decode>
StatusOr<T> DecodeStored(const JobRecord& job, const std::string& text, const char* what,
                         Decode decode) {
  const std::string context = "job \"" + job.job_id + "\": stored " + what;
  StatusOr<json> parsed = ParseJson(text, context);
  if (!parsed.ok()) return InternalError(parsed.status().message());
  StatusOr<T> value = decode(*parsed);
  if (!value.ok()) return InternalError(context + ": " + value.status().message());
  return value;
}

}  // namespace

StatusOr<BatchSizeJobSpec> DecodeSpec(const JobRecord& job) {
  return DecodeStored<BatchSizeJobSpec>(job, job.spec_json, "spec",
                                        [](const json& j) { return ParseJobSpec(j); });
}

StatusOr<BatchSizeOptimizer> DecodeOptimizer(const JobRecord& job) {
  return DecodeStored<BatchSizeOptimizer>(
      job, job.state_json, "optimizer state",
      [](const json& j) { return BatchSizeOptimizer::FromJson(j); });
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
