#include "src/server/job_saving.h"

#include <vector>

#include "src/server/dashboard_views.h"

namespace zeus::server_internal {

StatusOr<nlohmann::json> JobSavedFraction(StoreTransaction& txn, const std::string& job_id,
                                          int64_t default_batch_size, int64_t max_epochs) {
  ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, txn.ListTrials(job_id));
  return CostAgainstDefault(trials, default_batch_size, max_epochs)["saved_fraction"];
}

}  // namespace zeus::server_internal
