// The specification of a recurring job registered with the batch-size
// optimizer server, and its wire format (the JSON body of `POST /jobs`, field
// names of the original Zeus server so its Python client works unchanged).
//
// Thread-safety: plain values.

#ifndef ZEUS_PROTOCOL_JOB_SPEC_H_
#define ZEUS_PROTOCOL_JOB_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

// The ranges below are those ParseJobSpec enforces (the physical ones are
// wire_limits' of zeus/protocol/limits.h).
struct BatchSizeJobSpec {
  // Unique id of the job (an identifier, limits.h). Empty in a registration means "let the server
  // create `<job_id_prefix>-<8 hex chars>`"; otherwise it starts with
  // `job_id_prefix`.
  std::string job_id;
  // An identifier; at most 247 bytes when job_id is generated.
  std::string job_id_prefix;
  // Candidate batch sizes, each in [1, INT32_MAX], sorted ascending, unique;
  // at most kMaxBatchSizesPerJob of them.
  std::vector<int64_t> batch_sizes;
  // One of `batch_sizes`.
  int64_t default_batch_size = 0;
  // Weight of energy in the cost (ZeusCost, zeus/core/cost.h).
  // In [0, 1]. Default: 0.5.
  double eta_knob = 0.5;
  // A run stops once its cost passes `beta_knob x` the job's lowest cost.
  // > 0; nullopt disables early stopping. Default: 2.0.
  std::optional<double> beta_knob = 2.0;
  // The validation metric a run must reach to converge. In [-1e15, 1e15].
  // Default: 0.5.
  double target_metric = 0.5;
  // True: reached when metric >= target; false: when metric <= target.
  bool higher_is_better_metric = true;
  // A run stops at this epoch. In [1, 1e9]. Default: 100.
  int64_t max_epochs = 100;
  // In [0, INT_MAX]. Default: 2.
  int64_t num_pruning_rounds = 2;
  // Observations per arm kept by the bandit; 0 = all. In [0, INT_MAX].
  // Default: 0.
  int64_t window_size = 0;
  // In [-1e20, 1e20]. Default: 0.
  double mab_prior_mean = 0.0;
  // In [0, 1e20]. Default: 0.
  double mab_prior_precision = 0.0;
  // In [0, INT_MAX]. Default: 2.
  int64_t mab_num_explorations = 2;
  // Seed of the bandit; nullopt lets the server draw one at registration.
  std::optional<int64_t> mab_seed;
  // MaxPower of the cost (zeus/core/cost.h): the maximum power limit in W
  // times the number of GPUs. In (0, 1e7]. Wire field: `max_power`.
  double max_power_w = 0.0;
  // In [1, 1e6].
  int64_t number_of_gpus = 0;
  // An identifier (printable text, limits.h).
  std::string gpu_model;
  // How the job explores its batch sizes: "zeus" (the paper's), "frugal" or
  // "swarm" (frugal exploring on concurrent submissions too;
  // docs/BATCH_SIZE_POLICY.md). Wire field: `policy`; a spec without it (as
  // the original client sends, and as older servers stored) is zeus.
  // Default: "zeus".
  std::string policy = "zeus";

  friend bool operator==(const BatchSizeJobSpec& a, const BatchSizeJobSpec& b);
};

// The policy names a spec may carry, those of BatchSizePolicyName() (the
// protocol layer does not link the optimizer; a server test checks that the
// two lists agree).
const std::vector<std::string>& BatchSizePolicyNames();

// Parses and validates a registration body: the one definition of a valid
// job spec, for the server (registrations, stored specs) and the client
// alike. Wrong types, values outside the bounds above and outside the
// physical ranges of zeus/protocol/limits.h (identifiers included) are
// kInvalidArgument naming the field and the value; a missing optional field
// takes the default above (the original's). A field the spec
// does not know is refused the same way when `ignored_fields` is null (specs
// Zeus stored itself); otherwise (registrations on the wire: the original
// server ignores unknown fields, and its clients send e.g. `seed`) its name
// is appended to `*ignored_fields` and it is ignored. A null or missing
// `job_id` yields an empty `job_id`.
StatusOr<BatchSizeJobSpec> ParseJobSpec(const nlohmann::json& body,
                                        std::vector<std::string>* ignored_fields = nullptr);

// `spec` as ParseJobSpec reads its wire form (JobSpecToJson): the same
// checks and messages for a spec built in C++ (BatchSizeService::RegisterJob),
// batch sizes sorted.
StatusOr<BatchSizeJobSpec> ValidateJobSpec(const BatchSizeJobSpec& spec);

// The wire form, every field present (`job_id` null when empty).
nlohmann::json JobSpecToJson(const BatchSizeJobSpec& spec);

}  // namespace zeus

#endif  // ZEUS_PROTOCOL_JOB_SPEC_H_
