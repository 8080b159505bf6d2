#include "zeus/server/protocol.h"

#include <string>

#include "src/server/json_fields.h"

namespace zeus {

using nlohmann::json;
using namespace server_internal;  // NOLINT: the field readers.

namespace {

Status CheckTrialId(const TrialId& trial) {
  if (trial.job_id.empty()) return InvalidArgumentError("field 'job_id': must not be empty");
  if (trial.batch_size <= 0) {
    return InvalidArgumentError("field 'batch_size': " + std::to_string(trial.batch_size) +
                                " must be > 0");
  }
  if (trial.trial_number < 1) {
    return InvalidArgumentError("field 'trial_number': " + std::to_string(trial.trial_number) +
                                " must be >= 1");
  }
  return Status::Ok();
}

Status ReadTrialId(const json& body, TrialId* trial) {
  ZEUS_ASSIGN_OR_RETURN(trial->job_id, RequiredString(body, "job_id"));
  ZEUS_ASSIGN_OR_RETURN(trial->batch_size, RequiredInt(body, "batch_size"));
  ZEUS_ASSIGN_OR_RETURN(trial->trial_number, RequiredInt(body, "trial_number"));
  return CheckTrialId(*trial);
}

}  // namespace

StatusOr<TrialId> ParseTrialId(const json& body) {
  ZEUS_RETURN_IF_ERROR(CheckObjectFields(body, {"job_id", "batch_size", "trial_number"}));
  TrialId trial;
  ZEUS_RETURN_IF_ERROR(ReadTrialId(body, &trial));
  return trial;
}

StatusOr<TrainingResult> ParseTrainingResult(const json& body) {
  ZEUS_RETURN_IF_ERROR(CheckObjectFields(
      body, {"job_id", "batch_size", "trial_number", "time", "energy", "metric", "current_epoch"}));
  TrainingResult r;
  ZEUS_RETURN_IF_ERROR(ReadTrialId(body, &r.trial));
  ZEUS_ASSIGN_OR_RETURN(r.time_s, RequiredDouble(body, "time"));
  ZEUS_ASSIGN_OR_RETURN(r.energy_j, RequiredDouble(body, "energy"));
  ZEUS_ASSIGN_OR_RETURN(r.metric, RequiredDouble(body, "metric"));
  ZEUS_ASSIGN_OR_RETURN(r.current_epoch, RequiredInt(body, "current_epoch"));
  if (r.time_s < 0.0) {
    return InvalidArgumentError("field 'time': " + json(r.time_s).dump() + " must be >= 0 (s)");
  }
  if (r.energy_j < 0.0) {
    return InvalidArgumentError("field 'energy': " + json(r.energy_j).dump() + " must be >= 0 (J)");
  }
  if (r.current_epoch < 1) {
    return InvalidArgumentError("field 'current_epoch': " + std::to_string(r.current_epoch) +
                                " must be >= 1");
  }
  return r;
}

StatusOr<ReportResponse> ParseReportResponse(const json& body) {
  ZEUS_RETURN_IF_ERROR(CheckObjectFields(body, {"stop_train", "converged", "message"}));
  ReportResponse r;
  ZEUS_ASSIGN_OR_RETURN(std::optional<bool> stop, OptionalBool(body, "stop_train"));
  ZEUS_ASSIGN_OR_RETURN(std::optional<bool> converged, OptionalBool(body, "converged"));
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> message, OptionalString(body, "message"));
  if (!stop || !converged) {
    return InvalidArgumentError("report response: 'stop_train' and 'converged' are required");
  }
  r.stop_train = *stop;
  r.converged = *converged;
  r.message = message.value_or("");
  return r;
}

json ToJson(const TrialId& trial) {
  return json{{"job_id", trial.job_id},
              {"batch_size", trial.batch_size},
              {"trial_number", trial.trial_number}};
}

json ToJson(const TrainingResult& r) {
  json j = ToJson(r.trial);
  j["time"] = r.time_s;
  j["energy"] = r.energy_j;
  j["metric"] = r.metric;
  j["current_epoch"] = r.current_epoch;
  return j;
}

json ToJson(const ReportResponse& r) {
  return json{{"stop_train", r.stop_train}, {"converged", r.converged}, {"message", r.message}};
}

}  // namespace zeus
