// The physical ranges every number a client sends must lie in, and the shape
// of identifiers, stated once for the whole protocol: ParseJobSpec checks a
// job spec against them as it reads it, the server checks reports and query
// parameters (src/server/input_limits.h). They keep every cost finite and the
// bandit's arithmetic from overflowing: the largest cost is
// 1e15 J + 1e7 W x 1e9 s, about 1e16.
//
// Thread-safety: constants and pure functions.

#ifndef ZEUS_PROTOCOL_LIMITS_H_
#define ZEUS_PROTOCOL_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "zeus/status.h"

namespace zeus::wire_limits {

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

// kInvalidArgument naming `field` and the value unless `value` is an
// identifier as above.
Status ValidateIdentifier(std::string_view field, std::string_view value);

// kInvalidArgument "field 'F': V is outside [MIN, MAX] UNIT" unless `value`
// is finite and in [min, max]. `unit` may be empty.
Status CheckRange(std::string_view field, double value, double min, double max,
                  std::string_view unit = "");
// The same for an integer, without a unit.
Status CheckIntRange(std::string_view field, int64_t value, int64_t min, int64_t max);

// `value` as a message may show it: control bytes escaped as \xNN, cut after
// 64 bytes ("..." appended).
std::string Printable(std::string_view value);

}  // namespace zeus::wire_limits

#endif  // ZEUS_PROTOCOL_LIMITS_H_
