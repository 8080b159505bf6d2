#include "src/server/input_limits.h"

#include <limits>
#include <string>

#include <fmt/format.h>

namespace zeus::server_internal {

using wire_limits::CheckIntRange;
using wire_limits::CheckRange;
using wire_limits::Printable;

Status ValidateTrainingResult(const TrainingResult& r) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", r.trial.job_id));
  ZEUS_RETURN_IF_ERROR(CheckRange("time", r.time_s, 0.0, kMaxTimeS, "s"));
  ZEUS_RETURN_IF_ERROR(CheckRange("energy", r.energy_j, 0.0, kMaxEnergyJ, "J"));
  ZEUS_RETURN_IF_ERROR(CheckRange("metric", r.metric, -kMaxAbsMetric, kMaxAbsMetric, ""));
  return CheckIntRange("current_epoch", r.current_epoch, 1, kMaxEpochs);
}

Status ValidateProgressCheckIn(const ProgressCheckIn& c) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", c.trial.job_id));
  ZEUS_RETURN_IF_ERROR(CheckRange("time", c.time_s, 0.0, kMaxTimeS, "s"));
  return CheckRange("energy", c.energy_j, 0.0, kMaxEnergyJ, "J");
}

namespace {

// A decimal integer in [min, max] from a query parameter, or an error naming
// it and `what` the range means.
StatusOr<int64_t> QueryInt(std::string_view name, const std::string& text, int64_t min, int64_t max,
                           std::string_view what) {
  const bool digits = !text.empty() && text.size() <= 18 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t value = digits ? std::stoll(text) : -1;
  if (!digits || value < min || value > max) {
    return InvalidArgumentError(
        fmt::format("query parameter '{}': \"{}\" is not an integer in [{}, {}]{}", name,
                    Printable(text), min, max, what));
  }
  return value;
}

}  // namespace

StatusOr<TrialPage> ParseTrialPage(const std::optional<std::string>& limit,
                                   const std::optional<std::string>& after) {
  TrialPage page;
  if (limit) {
    ZEUS_ASSIGN_OR_RETURN(
        page.limit, QueryInt("limit", *limit, 1, kMaxTrialsPerPage, " (the most trials per page)"));
  }
  if (after) {
    ZEUS_ASSIGN_OR_RETURN(page.after,
                          QueryInt("after", *after, 0, std::numeric_limits<int64_t>::max(),
                                   " (the last trial number of the previous page)"));
  }
  return page;
}

StatusOr<JobPage> ParseJobPage(const std::optional<std::string>& limit,
                               const std::optional<std::string>& after) {
  JobPage page;
  if (limit) {
    ZEUS_ASSIGN_OR_RETURN(
        page.limit, QueryInt("limit", *limit, 1, kMaxJobsPerPage, " (the most jobs per page)"));
  }
  if (after) {
    Status valid = ValidateIdentifier("after", *after);
    if (!valid.ok()) {
      return InvalidArgumentError("query parameter 'after' (a job id): " + valid.message());
    }
    page.after = *after;
  }
  return page;
}

}  // namespace zeus::server_internal
