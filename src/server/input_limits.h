// The physical ranges every number a client sends must lie in before it
// reaches the optimizer, and the shape of identifiers. Checked by
// BatchSizeService after parsing (parsing itself rejects wrong types and
// malformed JSON), so that a cost is always finite and the bandit's
// arithmetic cannot overflow: the largest cost is
// 1e15 J + 1e7 W x 1e9 s, about 1e16.
//
// Every error is kInvalidArgument naming the field, the value and the range.
//
// Thread-safety: pure functions.

#ifndef ZEUS_SRC_SERVER_INPUT_LIMITS_H_
#define ZEUS_SRC_SERVER_INPUT_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zeus/protocol/job_spec.h"
#include "zeus/protocol/protocol.h"
#include "zeus/status.h"

namespace zeus::server_internal {

// Identifiers (job_id, job_id_prefix, and gpu_model): 1 to 256 bytes of printable text; no
// ASCII control character (CR, LF, NUL, DEL, ...). Bytes >= 0x80 (UTF-8) are
// allowed.
inline constexpr size_t kMaxIdentifierBytes = 256;
// Cumulative time of one run: 0 to 1e9 s (about 31 years).
inline constexpr double kMaxTimeS = 1e9;
// Cumulative energy of one run: 0 to 1e15 J (1 MW for 1e9 s).
inline constexpr double kMaxEnergyJ = 1e15;
// Validation metric and target: -1e15 to 1e15.
inline constexpr double kMaxAbsMetric = 1e15;
// Epochs (reports and max_epochs): 1 to 1e9.
inline constexpr int64_t kMaxEpochs = 1'000'000'000;
// max_power (W, all GPUs of the job): > 0 and at most 1e7 W (10 MW).
inline constexpr double kMaxPowerW = 1e7;
// number_of_gpus: 1 to 1e6.
inline constexpr int64_t kMaxGpus = 1'000'000;
// |mab_prior_mean| and mab_prior_precision: at most 1e20.
inline constexpr double kMaxPrior = 1e20;
// Candidate batch sizes of one job: at most 1024. Bounds every per-job
// answer (GET /jobs/arms, the dashboard's job view), whose size grows with
// the number of arms: 100,000 batch sizes once made one answer of
// /jobs/arms several MB and 40 pipelining clients cost the server 3 GB.
inline constexpr size_t kMaxBatchSizesPerJob = 1024;
// Jobs in one answer of GET /jobs and GET /dashboard/api/jobs: `limit`
// defaults to 100 and may be at most 1000; the rest comes page by page
// (`after=<last job_id of the previous page>`).
inline constexpr int64_t kDefaultJobsPerPage = 100;
inline constexpr int64_t kMaxJobsPerPage = 1000;
// Trials in one answer of GET /trials?job_id=: `limit` 1 to 1000, default
// 1000; the rest page by page (`after=<last trial number>`).
inline constexpr int64_t kMaxTrialsPerPage = 1000;
// Trials listed (and charted) by the dashboard's job view: the latest 1000;
// `trials_total` says how many the job has, and its cost totals count all.
inline constexpr size_t kMaxDashboardTrials = 1000;

Status ValidateIdentifier(std::string_view field, std::string_view value);
// Every number of a report, and its job_id.
Status ValidateTrainingResult(const TrainingResult& result);
// The ranges above for a parsed registration, its identifiers included (an
// empty job_id means "generate one").
Status ValidateJobSpecRanges(const BatchSizeJobSpec& spec);

// One page of a job listing: at most `limit` jobs whose id sorts after
// `after` (empty: from the first).
struct JobPage {
  std::string after;
  int64_t limit = kDefaultJobsPerPage;
};
// Reads the query parameters `limit` (1 to kMaxJobsPerPage) and `after` (an
// identifier) of a listing; absent ones keep JobPage's defaults.
// kInvalidArgument naming the parameter, the value and the limit otherwise.
StatusOr<JobPage> ParseJobPage(const std::optional<std::string>& limit,
                               const std::optional<std::string>& after);

// One page of a job's trials: at most `limit` numbered above `after`.
struct TrialPage {
  int64_t after = 0;
  int64_t limit = kMaxTrialsPerPage;
};
// Reads the query parameters `limit` (1 to kMaxTrialsPerPage) and `after` (a
// trial number >= 0) of GET /trials; kInvalidArgument naming the parameter.
StatusOr<TrialPage> ParseTrialPage(const std::optional<std::string>& limit,
                                   const std::optional<std::string>& after);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_INPUT_LIMITS_H_
