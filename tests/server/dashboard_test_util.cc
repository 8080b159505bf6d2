#include "tests/server/dashboard_test_util.h"

#include "zeus/protocol/job_spec.h"
#include "zeus/protocol/protocol.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {

std::map<int64_t, RunProfile> DefaultRunProfiles() {
  return {{32, {10.0, 2000.0, 3}},
          {64, {6.0, 1500.0, 4}},
          {128, {5.0, 1400.0, 5}},
          {256, {6.0, 2000.0, 0}}};
}

Status SeedJob(BatchSizeService& service, const std::string& job_id, int trials, int64_t seed,
               const std::map<int64_t, RunProfile>& profiles) {
  ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec spec, ParseJobSpec(JobBody(job_id, seed)));
  ZEUS_RETURN_IF_ERROR(service.RegisterJob(spec).status());
  for (int i = 0; i < trials; ++i) {
    ZEUS_ASSIGN_OR_RETURN(TrialId trial, service.NextBatchSize(job_id));
    auto it = profiles.find(trial.batch_size);
    if (it == profiles.end()) {
      return InvalidArgumentError("no run profile for batch size " +
                                  std::to_string(trial.batch_size));
    }
    const RunProfile& p = it->second;
    for (int64_t epoch = 1;; ++epoch) {
      TrainingResult result;
      result.trial = trial;
      result.current_epoch = epoch;
      result.time_s = p.time_s_per_epoch * static_cast<double>(epoch);
      result.energy_j = p.energy_j_per_epoch * static_cast<double>(epoch);
      result.metric = p.converge_epoch > 0 && epoch >= p.converge_epoch ? 0.9 : 0.1;
      ZEUS_ASSIGN_OR_RETURN(ReportResponse response, service.Report(result));
      if (response.stop_train) break;
      if (epoch > 1000) return InternalError("the service never stopped the run");
    }
  }
  return Status::Ok();
}

}  // namespace zeus::testing
