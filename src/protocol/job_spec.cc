#include "zeus/protocol/job_spec.h"

#include <algorithm>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "zeus/protocol/limits.h"
#include "zeus/util/json.h"

#include "src/protocol/wire_fields.h"

namespace zeus {

using nlohmann::json;

bool operator==(const BatchSizeJobSpec& a, const BatchSizeJobSpec& b) {
  return JobSpecToJson(a) == JobSpecToJson(b);
}

namespace {

using wire_limits::CheckIntRange;
using wire_limits::CheckRange;
using wire_limits::kMaxAbsMetric;
using wire_limits::kMaxBatchSizesPerJob;
using wire_limits::kMaxEpochs;
using wire_limits::kMaxGpus;
using wire_limits::kMaxIdentifierBytes;
using wire_limits::kMaxPowerW;
using wire_limits::kMaxPrior;
using wire_limits::ValidateIdentifier;

constexpr int64_t kMaxBatchSize = std::numeric_limits<int32_t>::max();

Status ReadJobId(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> job_id, f.OptionalString("job_id"));
  ZEUS_ASSIGN_OR_RETURN(spec->job_id_prefix, f.String("job_id_prefix"));
  if (spec->job_id_prefix.empty()) return f.Error("job_id_prefix", "\"\" must not be empty");
  if (!job_id) return Status::Ok();
  if (job_id->empty()) return f.Error("job_id", "\"\" must not be empty (or null)");
  if (job_id->rfind(spec->job_id_prefix, 0) != 0) {
    return f.Error("job_id", "\"" + *job_id + "\" does not start with job_id_prefix \"" +
                                 spec->job_id_prefix + "\"");
  }
  spec->job_id = *job_id;
  return Status::Ok();
}

Status ReadBatchSizes(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_ASSIGN_OR_RETURN(spec->batch_sizes, f.IntArray("batch_sizes", 1, kMaxBatchSize));
  if (spec->batch_sizes.empty()) return f.Error("batch_sizes", "[] must not be empty");
  std::sort(spec->batch_sizes.begin(), spec->batch_sizes.end());
  auto duplicate = std::adjacent_find(spec->batch_sizes.begin(), spec->batch_sizes.end());
  if (duplicate != spec->batch_sizes.end()) {
    return f.Error("batch_sizes", "holds " + std::to_string(*duplicate) + " twice");
  }
  ZEUS_ASSIGN_OR_RETURN(spec->default_batch_size, f.Int("default_batch_size", 1, kMaxBatchSize));
  if (!std::binary_search(spec->batch_sizes.begin(), spec->batch_sizes.end(),
                          spec->default_batch_size)) {
    return f.Error("default_batch_size",
                   std::to_string(spec->default_batch_size) + " is not one of batch_sizes");
  }
  return Status::Ok();
}

Status ReadKnobs(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("eta_knob", 0.0, 1.0), &spec->eta_knob));
  if (f.object().contains("beta_knob") && f.object()["beta_knob"].is_null()) {
    spec->beta_knob.reset();  // Explicit null: early stopping off.
  } else {
    double beta = *spec->beta_knob;
    ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("beta_knob"), &beta));
    if (!(beta > 0.0)) {
      return f.Error("beta_knob",
                     json(beta).dump() + " must be > 0 (or null to disable early stopping)");
    }
    spec->beta_knob = beta;
  }
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("target_metric"), &spec->target_metric));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("higher_is_better_metric"), &spec->higher_is_better_metric));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("max_epochs", 1), &spec->max_epochs));
  return SetIfPresent(f.OptionalInt("num_pruning_rounds", 0), &spec->num_pruning_rounds);
}

Status ReadBandit(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("window_size", 0), &spec->window_size));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("mab_num_explorations", 0), &spec->mab_num_explorations));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("mab_prior_mean"), &spec->mab_prior_mean));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("mab_prior_precision", 0.0), &spec->mab_prior_precision));
  ZEUS_ASSIGN_OR_RETURN(spec->mab_seed, f.OptionalInt("mab_seed"));
  return Status::Ok();
}

Status ReadHardware(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_ASSIGN_OR_RETURN(spec->max_power_w, f.Double("max_power"));
  if (!(spec->max_power_w > 0.0)) {
    return f.Error("max_power", json(spec->max_power_w).dump() + " must be > 0 (W x GPUs)");
  }
  ZEUS_ASSIGN_OR_RETURN(spec->number_of_gpus, f.Int("number_of_gpus", 1));
  ZEUS_ASSIGN_OR_RETURN(spec->gpu_model, f.String("gpu_model"));
  if (spec->gpu_model.empty()) return f.Error("gpu_model", "\"\" must not be empty");
  return Status::Ok();
}

Status ReadPolicy(const JsonFields& f, BatchSizeJobSpec* spec) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> policy, f.OptionalString("policy"));
  if (!policy) return Status::Ok();
  const std::vector<std::string>& known = BatchSizePolicyNames();
  if (std::find(known.begin(), known.end(), *policy) == known.end()) {
    return f.Error("policy",
                   "\"" + *policy + "\" is not a batch-size policy (known: zeus, frugal, swarm)");
  }
  spec->policy = *policy;
  return Status::Ok();
}

// A count the optimizer keeps as an int.
Status CheckCount(std::string_view field, int64_t value) {
  if (value <= std::numeric_limits<int>::max()) return Status::Ok();
  return InvalidArgumentError(fmt::format("field '{}': {} is out of range", field, value));
}

// What the readers above leave to check once every field is read: the
// physical ranges of wire_limits and the identifiers' shape.
Status CheckRanges(const BatchSizeJobSpec& spec) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id_prefix", spec.job_id_prefix));
  // A generated id appends "-" and 8 hex characters to the prefix.
  if (spec.job_id.empty() && spec.job_id_prefix.size() + 9 > kMaxIdentifierBytes) {
    return InvalidArgumentError(
        fmt::format("field 'job_id_prefix': {} bytes long; at most {} when job_id is generated",
                    spec.job_id_prefix.size(), kMaxIdentifierBytes - 9));
  }
  if (!spec.job_id.empty()) ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", spec.job_id));
  if (!(spec.max_power_w <= kMaxPowerW)) {
    return InvalidArgumentError(
        fmt::format("field 'max_power': {} is outside (0, {}] W", spec.max_power_w, kMaxPowerW));
  }
  ZEUS_RETURN_IF_ERROR(CheckIntRange("number_of_gpus", spec.number_of_gpus, 1, kMaxGpus));
  ZEUS_RETURN_IF_ERROR(CheckIntRange("max_epochs", spec.max_epochs, 1, kMaxEpochs));
  ZEUS_RETURN_IF_ERROR(
      CheckRange("target_metric", spec.target_metric, -kMaxAbsMetric, kMaxAbsMetric));
  ZEUS_RETURN_IF_ERROR(CheckRange("mab_prior_mean", spec.mab_prior_mean, -kMaxPrior, kMaxPrior));
  ZEUS_RETURN_IF_ERROR(CheckRange("mab_prior_precision", spec.mab_prior_precision, 0.0, kMaxPrior));
  if (spec.batch_sizes.size() > kMaxBatchSizesPerJob) {
    return InvalidArgumentError(
        fmt::format("field 'batch_sizes': {} batch sizes, more than the limit of {} per job",
                    spec.batch_sizes.size(), kMaxBatchSizesPerJob));
  }
  // The GPU model is shown on the dashboard and in logs: printable text, as
  // identifiers.
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("gpu_model", spec.gpu_model));
  ZEUS_RETURN_IF_ERROR(CheckCount("num_pruning_rounds", spec.num_pruning_rounds));
  ZEUS_RETURN_IF_ERROR(CheckCount("window_size", spec.window_size));
  return CheckCount("mab_num_explorations", spec.mab_num_explorations);
}

}  // namespace

const std::vector<std::string>& BatchSizePolicyNames() {
  static const auto* names = new std::vector<std::string>{"zeus", "frugal", "swarm"};
  return *names;
}

StatusOr<BatchSizeJobSpec> ParseJobSpec(const json& body,
                                        std::vector<std::string>* ignored_fields) {
  ZEUS_ASSIGN_OR_RETURN(
      JsonFields f,
      server_internal::WireFields(
          body, "",
          {"job_id", "job_id_prefix", "batch_sizes", "default_batch_size", "eta_knob", "beta_knob",
           "target_metric", "higher_is_better_metric", "max_epochs", "num_pruning_rounds",
           "window_size", "mab_prior_mean", "mab_prior_precision", "mab_num_explorations",
           "mab_seed", "max_power", "number_of_gpus", "gpu_model", "policy"},
          ignored_fields));
  BatchSizeJobSpec spec;
  ZEUS_RETURN_IF_ERROR(ReadJobId(f, &spec));
  ZEUS_RETURN_IF_ERROR(ReadBatchSizes(f, &spec));
  ZEUS_RETURN_IF_ERROR(ReadKnobs(f, &spec));
  ZEUS_RETURN_IF_ERROR(ReadBandit(f, &spec));
  ZEUS_RETURN_IF_ERROR(ReadHardware(f, &spec));
  ZEUS_RETURN_IF_ERROR(ReadPolicy(f, &spec));
  ZEUS_RETURN_IF_ERROR(CheckRanges(spec));
  return spec;
}

StatusOr<BatchSizeJobSpec> ValidateJobSpec(const BatchSizeJobSpec& spec) {
  return ParseJobSpec(JobSpecToJson(spec));
}

json JobSpecToJson(const BatchSizeJobSpec& spec) {
  json j;
  j["job_id"] = spec.job_id.empty() ? json(nullptr) : json(spec.job_id);
  j["job_id_prefix"] = spec.job_id_prefix;
  j["batch_sizes"] = spec.batch_sizes;
  j["default_batch_size"] = spec.default_batch_size;
  j["eta_knob"] = spec.eta_knob;
  j["beta_knob"] = JsonOrNull(spec.beta_knob);
  j["target_metric"] = spec.target_metric;
  j["higher_is_better_metric"] = spec.higher_is_better_metric;
  j["max_epochs"] = spec.max_epochs;
  j["num_pruning_rounds"] = spec.num_pruning_rounds;
  j["window_size"] = spec.window_size;
  j["mab_prior_mean"] = spec.mab_prior_mean;
  j["mab_prior_precision"] = spec.mab_prior_precision;
  j["mab_num_explorations"] = spec.mab_num_explorations;
  j["mab_seed"] = spec.mab_seed ? json(*spec.mab_seed) : json(nullptr);
  j["max_power"] = spec.max_power_w;
  j["number_of_gpus"] = spec.number_of_gpus;
  j["gpu_model"] = spec.gpu_model;
  j["policy"] = spec.policy;
  return j;
}

}  // namespace zeus
