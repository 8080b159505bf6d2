// Seeds jobs for the dashboard's tests: runs whole trials through a
// BatchSizeService the way a training client would (one report per epoch
// until the service stops the run), from a fixed profile per batch size.

#ifndef ZEUS_TESTS_SERVER_DASHBOARD_TEST_UTIL_H_
#define ZEUS_TESTS_SERVER_DASHBOARD_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>

#include "zeus/server/batch_size_service.h"
#include "zeus/status.h"

namespace zeus::testing {

// How a simulated run at one batch size trains: time and energy per epoch,
// and the epoch at which its metric reaches the target (0: never).
struct RunProfile {
  double time_s_per_epoch = 0.0;
  double energy_j_per_epoch = 0.0;
  int64_t converge_epoch = 0;
};

// Batch sizes 32, 64 and 128 converge (at epochs 3, 4, 5); 256 never does
// and is expensive, so it is stopped early by the cost bound once a cheaper
// run converged.
std::map<int64_t, RunProfile> DefaultRunProfiles();

// Registers `job_id` with JobBody(job_id, seed) (batch sizes 32..256, default
// 128, max_epochs 10) and runs `trials` trials to their end.
Status SeedJob(BatchSizeService& service, const std::string& job_id, int trials, int64_t seed = 1,
               const std::map<int64_t, RunProfile>& profiles = DefaultRunProfiles());

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SERVER_DASHBOARD_TEST_UTIL_H_
