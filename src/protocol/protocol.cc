#include "zeus/protocol/protocol.h"

#include <string>

#include "zeus/util/json.h"

#include "src/protocol/wire_fields.h"

namespace zeus {

using nlohmann::json;

namespace {

Status ReadTrialId(const JsonFields& f, TrialId* trial) {
  ZEUS_ASSIGN_OR_RETURN(trial->job_id, f.String("job_id"));
  if (trial->job_id.empty()) return f.Error("job_id", "must not be empty");
  ZEUS_ASSIGN_OR_RETURN(trial->batch_size, f.Int("batch_size", 1));
  ZEUS_ASSIGN_OR_RETURN(trial->trial_number, f.Int("trial_number", 1));
  return Status::Ok();
}

}  // namespace

StatusOr<TrialId> ParseTrialId(const json& body, std::vector<std::string>* ignored_fields) {
  ZEUS_ASSIGN_OR_RETURN(
      JsonFields f, server_internal::WireFields(body, "", {"job_id", "batch_size", "trial_number"},
                                                ignored_fields));
  TrialId trial;
  ZEUS_RETURN_IF_ERROR(ReadTrialId(f, &trial));
  return trial;
}

StatusOr<TrainingResult> ParseTrainingResult(const json& body,
                                             std::vector<std::string>* ignored_fields) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields f,
                        server_internal::WireFields(body, "",
                                                    {"job_id", "batch_size", "trial_number", "time",
                                                     "energy", "metric", "current_epoch"},
                                                    ignored_fields));
  TrainingResult r;
  ZEUS_RETURN_IF_ERROR(ReadTrialId(f, &r.trial));
  ZEUS_ASSIGN_OR_RETURN(r.time_s, f.Double("time", 0.0));
  ZEUS_ASSIGN_OR_RETURN(r.energy_j, f.Double("energy", 0.0));
  ZEUS_ASSIGN_OR_RETURN(r.metric, f.Double("metric"));
  ZEUS_ASSIGN_OR_RETURN(r.current_epoch, f.Int("current_epoch", 1));
  return r;
}

StatusOr<ProgressCheckIn> ParseProgressCheckIn(const json& body,
                                               std::vector<std::string>* ignored_fields) {
  ZEUS_ASSIGN_OR_RETURN(
      JsonFields f,
      server_internal::WireFields(
          body, "", {"job_id", "batch_size", "trial_number", "time", "energy"}, ignored_fields));
  ProgressCheckIn c;
  ZEUS_RETURN_IF_ERROR(ReadTrialId(f, &c.trial));
  ZEUS_ASSIGN_OR_RETURN(c.time_s, f.Double("time", 0.0));
  ZEUS_ASSIGN_OR_RETURN(c.energy_j, f.Double("energy", 0.0));
  return c;
}

StatusOr<ReportResponse> ParseReportResponse(const json& body,
                                             std::vector<std::string>* ignored_fields) {
  ZEUS_ASSIGN_OR_RETURN(JsonFields f, server_internal::WireFields(
                                          body, "report response",
                                          {"stop_train", "converged", "message"}, ignored_fields));
  ReportResponse r;
  ZEUS_ASSIGN_OR_RETURN(r.stop_train, f.Bool("stop_train"));
  ZEUS_ASSIGN_OR_RETURN(r.converged, f.Bool("converged"));
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> message, f.OptionalString("message"));
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

json ToJson(const ProgressCheckIn& c) {
  json j = ToJson(c.trial);
  j["time"] = c.time_s;
  j["energy"] = c.energy_j;
  return j;
}

json ToJson(const ReportResponse& r) {
  return json{{"stop_train", r.stop_train}, {"converged", r.converged}, {"message", r.message}};
}

}  // namespace zeus
