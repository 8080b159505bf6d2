// The saving against the default of one job, for the dashboard's job list:
// the same figure as the job view's cost_vs_default.saved_fraction
// (CostAgainstDefault, src/server/dashboard_views.h), read in the caller's
// transaction.
//
// Thread-safety: a pure function of the transaction's data.

#ifndef ZEUS_SRC_SERVER_JOB_SAVING_H_
#define ZEUS_SRC_SERVER_JOB_SAVING_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "zeus/server/store.h"
#include "zeus/status.h"

namespace zeus::server_internal {

// 1 - the job's cumulative cost / its estimated cost of always running
// `default_batch_size`, over every trial of `job_id`; null while there is no
// estimate (no converged run at the default batch size yet). Store errors
// pass through.
StatusOr<nlohmann::json> JobSavedFraction(StoreTransaction& txn, const std::string& job_id,
                                          int64_t default_batch_size, int64_t max_epochs);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_JOB_SAVING_H_
