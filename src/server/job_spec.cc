#include "zeus/server/job_spec.h"

#include <algorithm>
#include <limits>
#include <string>

#include "src/server/json_fields.h"

namespace zeus {

using nlohmann::json;
using server_internal::CheckObjectFields;
using server_internal::OptionalBool;
using server_internal::OptionalDouble;
using server_internal::OptionalInt;
using server_internal::OptionalString;
using server_internal::RequiredDouble;
using server_internal::RequiredInt;
using server_internal::RequiredString;

bool operator==(const BatchSizeJobSpec& a, const BatchSizeJobSpec& b) {
  return JobSpecToJson(a) == JobSpecToJson(b);
}

namespace {

Status OutOfRange(const char* field, const std::string& value, const char* rule) {
  return InvalidArgumentError(std::string("field '") + field + "': " + value + " " + rule);
}

template <typename T>
Status ReadOptional(const json& body, const char* field, T* out) {
  using Value = typename T::value_type;
  if constexpr (std::is_same_v<Value, int64_t>) {
    ZEUS_ASSIGN_OR_RETURN(*out, OptionalInt(body, field));
  } else {
    ZEUS_ASSIGN_OR_RETURN(*out, OptionalDouble(body, field));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<BatchSizeJobSpec> ParseJobSpec(const json& body) {
  ZEUS_RETURN_IF_ERROR(CheckObjectFields(
      body, {"job_id", "job_id_prefix", "batch_sizes", "default_batch_size", "eta_knob",
             "beta_knob", "target_metric", "higher_is_better_metric", "max_epochs",
             "num_pruning_rounds", "window_size", "mab_prior_mean", "mab_prior_precision",
             "mab_num_explorations", "mab_seed", "max_power", "number_of_gpus", "gpu_model"}));
  BatchSizeJobSpec spec;
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> job_id, OptionalString(body, "job_id"));
  ZEUS_ASSIGN_OR_RETURN(spec.job_id_prefix, RequiredString(body, "job_id_prefix"));
  if (spec.job_id_prefix.empty()) return OutOfRange("job_id_prefix", "\"\"", "must not be empty");
  if (job_id) {
    if (job_id->empty()) return OutOfRange("job_id", "\"\"", "must not be empty (or null)");
    if (job_id->rfind(spec.job_id_prefix, 0) != 0) {
      return OutOfRange(
          "job_id", "\"" + *job_id + "\"",
          ("does not start with job_id_prefix \"" + spec.job_id_prefix + "\"").c_str());
    }
    spec.job_id = *job_id;
  }

  auto sizes = body.find("batch_sizes");
  if (sizes == body.end() || sizes->is_null()) {
    return InvalidArgumentError("field 'batch_sizes': required");
  }
  if (!sizes->is_array()) {
    return InvalidArgumentError("field 'batch_sizes': expected an array of integers, got " +
                                server_internal::Describe(*sizes));
  }
  if (sizes->empty()) return OutOfRange("batch_sizes", "[]", "must not be empty");
  for (const json& size : *sizes) {
    if (!size.is_number_integer() || size.get<int64_t>() <= 0 ||
        size.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("field 'batch_sizes': expected positive integers, got " +
                                  server_internal::Describe(size));
    }
    spec.batch_sizes.push_back(size.get<int64_t>());
  }
  std::sort(spec.batch_sizes.begin(), spec.batch_sizes.end());
  if (std::adjacent_find(spec.batch_sizes.begin(), spec.batch_sizes.end()) !=
      spec.batch_sizes.end()) {
    return OutOfRange("batch_sizes", server_internal::Describe(*sizes), "holds duplicates");
  }

  ZEUS_ASSIGN_OR_RETURN(spec.default_batch_size, RequiredInt(body, "default_batch_size"));
  if (spec.default_batch_size <= 0) {
    return OutOfRange("default_batch_size", std::to_string(spec.default_batch_size), "must be > 0");
  }
  if (!std::binary_search(spec.batch_sizes.begin(), spec.batch_sizes.end(),
                          spec.default_batch_size)) {
    return OutOfRange("default_batch_size", std::to_string(spec.default_batch_size),
                      "is not one of batch_sizes");
  }

  std::optional<double> d;
  std::optional<int64_t> i;
  std::optional<bool> b;
  ZEUS_RETURN_IF_ERROR(ReadOptional(body, "eta_knob", &d));
  if (d) spec.eta_knob = *d;
  if (!(spec.eta_knob >= 0.0 && spec.eta_knob <= 1.0)) {
    return OutOfRange("eta_knob", json(spec.eta_knob).dump(), "must be in [0, 1]");
  }
  if (body.contains("beta_knob") && body["beta_knob"].is_null()) {
    spec.beta_knob.reset();
  } else {
    ZEUS_RETURN_IF_ERROR(ReadOptional(body, "beta_knob", &d));
    if (d) spec.beta_knob = *d;
    if (!(*spec.beta_knob > 0.0)) {
      return OutOfRange("beta_knob", json(*spec.beta_knob).dump(),
                        "must be > 0 (or null to disable early stopping)");
    }
  }
  ZEUS_RETURN_IF_ERROR(ReadOptional(body, "target_metric", &d));
  if (d) spec.target_metric = *d;
  ZEUS_ASSIGN_OR_RETURN(b, OptionalBool(body, "higher_is_better_metric"));
  if (b) spec.higher_is_better_metric = *b;

  struct IntField {
    const char* name;
    int64_t* out;
    int64_t min;
  };
  for (const IntField& f : {IntField{"max_epochs", &spec.max_epochs, 1},
                            IntField{"num_pruning_rounds", &spec.num_pruning_rounds, 0},
                            IntField{"window_size", &spec.window_size, 0},
                            IntField{"mab_num_explorations", &spec.mab_num_explorations, 0}}) {
    ZEUS_RETURN_IF_ERROR(ReadOptional(body, f.name, &i));
    if (i) *f.out = *i;
    if (*f.out < f.min) {
      return OutOfRange(f.name, std::to_string(*f.out),
                        f.min == 0 ? "must be >= 0" : "must be > 0");
    }
  }
  ZEUS_RETURN_IF_ERROR(ReadOptional(body, "mab_prior_mean", &d));
  if (d) spec.mab_prior_mean = *d;
  ZEUS_RETURN_IF_ERROR(ReadOptional(body, "mab_prior_precision", &d));
  if (d) spec.mab_prior_precision = *d;
  if (spec.mab_prior_precision < 0.0) {
    return OutOfRange("mab_prior_precision", json(spec.mab_prior_precision).dump(), "must be >= 0");
  }
  ZEUS_ASSIGN_OR_RETURN(spec.mab_seed, OptionalInt(body, "mab_seed"));

  ZEUS_ASSIGN_OR_RETURN(spec.max_power_w, RequiredDouble(body, "max_power"));
  if (!(spec.max_power_w > 0.0)) {
    return OutOfRange("max_power", json(spec.max_power_w).dump(), "must be > 0 (W x GPUs)");
  }
  ZEUS_ASSIGN_OR_RETURN(spec.number_of_gpus, RequiredInt(body, "number_of_gpus"));
  if (spec.number_of_gpus <= 0) {
    return OutOfRange("number_of_gpus", std::to_string(spec.number_of_gpus), "must be > 0");
  }
  ZEUS_ASSIGN_OR_RETURN(spec.gpu_model, RequiredString(body, "gpu_model"));
  if (spec.gpu_model.empty()) return OutOfRange("gpu_model", "\"\"", "must not be empty");
  return spec;
}

json JobSpecToJson(const BatchSizeJobSpec& spec) {
  json j;
  j["job_id"] = spec.job_id.empty() ? json(nullptr) : json(spec.job_id);
  j["job_id_prefix"] = spec.job_id_prefix;
  j["batch_sizes"] = spec.batch_sizes;
  j["default_batch_size"] = spec.default_batch_size;
  j["eta_knob"] = spec.eta_knob;
  j["beta_knob"] = spec.beta_knob ? json(*spec.beta_knob) : json(nullptr);
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
  return j;
}

}  // namespace zeus
