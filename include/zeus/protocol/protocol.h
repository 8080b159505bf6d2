// Request and response bodies of the batch-size optimizer server other than
// the job spec (see job_spec.h). Field names are those of the original Zeus
// server (zeus/optimizer/batch_size/common.py), so its Python client works
// unchanged; the C++ client uses the same definitions.
//
// Thread-safety: plain values.

#ifndef ZEUS_PROTOCOL_PROTOCOL_H_
#define ZEUS_PROTOCOL_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

// Routes.
inline constexpr char kRegisterJobPath[] = "/jobs";               // POST; DELETE ?job_id=; GET
inline constexpr char kNextBatchSizePath[] = "/jobs/batch_size";  // GET ?job_id=
inline constexpr char kReportPath[] = "/report";                  // POST
inline constexpr char kCheckInPath[] = "/report/progress";        // POST (zeus serve only)
inline constexpr char kEndTrialPath[] = "/trials";                // PATCH; GET ?job_id=
inline constexpr char kArmsPath[] = "/jobs/arms";                 // GET ?job_id=
inline constexpr char kHealthPath[] = "/health";                  // GET

// Names one trial: the answer of GET /jobs/batch_size and the body of
// PATCH /trials.
struct TrialId {
  std::string job_id;
  int64_t batch_size = 0;
  // 1, 2, ... per job.
  int64_t trial_number = 0;
};

// The body of POST /report: progress of a trial after `current_epoch` epochs.
struct TrainingResult {
  TrialId trial;
  // Cumulative since the run began: seconds and joules. >= 0.
  double time_s = 0.0;
  double energy_j = 0.0;
  // Validation metric after `current_epoch` epochs.
  double metric = 0.0;
  // >= 1.
  int64_t current_epoch = 0;
};

// The body of POST /report/progress, a check-in (zeus serve only; the
// original server has no such route): trial `trial`'s spend so far, during
// an epoch. No metric: the trial's progress is what its epochs reported.
struct ProgressCheckIn {
  TrialId trial;
  // Cumulative since the run began: seconds and joules. >= 0.
  double time_s = 0.0;
  double energy_j = 0.0;
};

// The answer of POST /report and POST /report/progress.
struct ReportResponse {
  bool stop_train = false;
  bool converged = false;
  std::string message;
};

// Parsers validate strictly: missing fields, wrong types and out-of-range
// values (negative time or energy, trial number < 1) are kInvalidArgument
// naming the field. A field the protocol does not know is refused the same
// way when `ignored_fields` is null; otherwise (requests on the wire, as the
// original server, which ignores unknown fields) its name is appended to
// `*ignored_fields` and it is ignored.
StatusOr<TrialId> ParseTrialId(const nlohmann::json& body,
                               std::vector<std::string>* ignored_fields = nullptr);
StatusOr<TrainingResult> ParseTrainingResult(const nlohmann::json& body,
                                             std::vector<std::string>* ignored_fields = nullptr);
StatusOr<ProgressCheckIn> ParseProgressCheckIn(const nlohmann::json& body,
                                               std::vector<std::string>* ignored_fields = nullptr);
StatusOr<ReportResponse> ParseReportResponse(const nlohmann::json& body,
                                             std::vector<std::string>* ignored_fields = nullptr);

nlohmann::json ToJson(const TrialId& trial);
nlohmann::json ToJson(const TrainingResult& result);
nlohmann::json ToJson(const ProgressCheckIn& check_in);
nlohmann::json ToJson(const ReportResponse& response);

}  // namespace zeus

#endif  // ZEUS_PROTOCOL_PROTOCOL_H_
