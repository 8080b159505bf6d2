#include "src/server/input_limits.h"

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace zeus::server_internal {
namespace {

// The identifier as it may be shown in a message: control bytes escaped,
// cut after 64 bytes.
std::string Printable(std::string_view value) {
  std::string shown;
  for (size_t i = 0; i < value.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      shown += fmt::format("\\x{:02x}", c);
    } else {
      shown += static_cast<char>(c);
    }
  }
  if (value.size() > 64) shown += "...";
  return shown;
}

Status CheckRange(std::string_view field, double value, double min, double max,
                  std::string_view unit) {
  if (std::isfinite(value) && value >= min && value <= max) return Status::Ok();
  return InvalidArgumentError(fmt::format("field '{}': {} is outside [{}, {}]{}", field, value, min,
                                          max, unit.empty() ? "" : " " + std::string(unit)));
}

Status CheckIntRange(std::string_view field, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return Status::Ok();
  return InvalidArgumentError(
      fmt::format("field '{}': {} is outside [{}, {}]", field, value, min, max));
}

}  // namespace

Status ValidateIdentifier(std::string_view field, std::string_view value) {
  if (value.empty()) {
    return InvalidArgumentError(fmt::format("field '{}': must not be empty", field));
  }
  if (value.size() > kMaxIdentifierBytes) {
    return InvalidArgumentError(fmt::format("field '{}': \"{}\" is {} bytes long, more than {}",
                                            field, Printable(value), value.size(),
                                            kMaxIdentifierBytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgumentError(
          fmt::format("field '{}': \"{}\" holds control character 0x{:02x} at byte {}; "
                      "identifiers are printable text",
                      field, Printable(value), c, i));
    }
  }
  return Status::Ok();
}

Status ValidateTrainingResult(const TrainingResult& r) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", r.trial.job_id));
  ZEUS_RETURN_IF_ERROR(CheckRange("time", r.time_s, 0.0, kMaxTimeS, "s"));
  ZEUS_RETURN_IF_ERROR(CheckRange("energy", r.energy_j, 0.0, kMaxEnergyJ, "J"));
  ZEUS_RETURN_IF_ERROR(CheckRange("metric", r.metric, -kMaxAbsMetric, kMaxAbsMetric, ""));
  return CheckIntRange("current_epoch", r.current_epoch, 1, kMaxEpochs);
}

Status ValidateJobSpecRanges(const BatchSizeJobSpec& spec) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id_prefix", spec.job_id_prefix));
  // A generated id appends "-" and 8 hex characters to the prefix.
  if (spec.job_id.empty() && spec.job_id_prefix.size() + 9 > kMaxIdentifierBytes) {
    return InvalidArgumentError(
        fmt::format("field 'job_id_prefix': {} bytes long; at most {} when job_id is generated",
                    spec.job_id_prefix.size(), kMaxIdentifierBytes - 9));
  }
  if (!spec.job_id.empty()) ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", spec.job_id));
  if (!(spec.max_power_w > 0.0 && spec.max_power_w <= kMaxPowerW)) {
    return InvalidArgumentError(
        fmt::format("field 'max_power': {} is outside (0, {}] W", spec.max_power_w, kMaxPowerW));
  }
  ZEUS_RETURN_IF_ERROR(CheckIntRange("number_of_gpus", spec.number_of_gpus, 1, kMaxGpus));
  ZEUS_RETURN_IF_ERROR(CheckIntRange("max_epochs", spec.max_epochs, 1, kMaxEpochs));
  ZEUS_RETURN_IF_ERROR(CheckRange("eta_knob", spec.eta_knob, 0.0, 1.0, ""));
  ZEUS_RETURN_IF_ERROR(
      CheckRange("target_metric", spec.target_metric, -kMaxAbsMetric, kMaxAbsMetric, ""));
  ZEUS_RETURN_IF_ERROR(
      CheckRange("mab_prior_mean", spec.mab_prior_mean, -kMaxPrior, kMaxPrior, ""));
  ZEUS_RETURN_IF_ERROR(
      CheckRange("mab_prior_precision", spec.mab_prior_precision, 0.0, kMaxPrior, ""));
  if (spec.beta_knob && !(std::isfinite(*spec.beta_knob) && *spec.beta_knob > 0.0)) {
    return InvalidArgumentError(
        fmt::format("field 'beta_knob': {} must be finite and > 0 (or null)", *spec.beta_knob));
  }
  if (spec.batch_sizes.size() > kMaxBatchSizesPerJob) {
    return InvalidArgumentError(
        fmt::format("field 'batch_sizes': {} batch sizes, more than the limit of {} per job",
                    spec.batch_sizes.size(), kMaxBatchSizesPerJob));
  }
  // The GPU model is shown on the dashboard and in logs: printable text, as
  // identifiers.
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("gpu_model", spec.gpu_model));
  return Status::Ok();
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
