// What the server checks beyond parsing: a report's numbers against the
// protocol's physical ranges (zeus/protocol/limits.h; a job spec is checked
// by ParseJobSpec itself), and the pages of its listings.
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

#include "zeus/protocol/limits.h"
#include "zeus/protocol/protocol.h"
#include "zeus/status.h"

namespace zeus::server_internal {

// The protocol's limits (zeus/protocol/limits.h) the server checks itself.
using wire_limits::kMaxAbsMetric;
using wire_limits::kMaxEnergyJ;
using wire_limits::kMaxEpochs;
using wire_limits::kMaxTimeS;
using wire_limits::ValidateIdentifier;

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

// Every number of a report, and its job_id. (A job spec's ranges are
// ParseJobSpec's, zeus/protocol/job_spec.h.)
Status ValidateTrainingResult(const TrainingResult& result);
Status ValidateProgressCheckIn(const ProgressCheckIn& check_in);

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
