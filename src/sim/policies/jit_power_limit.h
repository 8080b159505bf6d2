// Simulated JIT power-limit profiling (Zeus, NSDI'23): the first run of a
// batch size profiles every power limit during its first epoch and pins the
// one zeus::core's cost selector picks from that epoch's profile (least
// ZeusCost per epoch, MaxPower = the batch size's highest limit on one GPU;
// ties go to the higher limit). Later runs of that batch size reuse it,
// unprofiled, for the rest of the job: the simulator's model of a client that
// saves one profile per job and batch size and loads it (profile_path).
// Private to src/sim. Thread-safety: not thread-safe.

#ifndef ZEUS_SRC_SIM_POLICIES_JIT_POWER_LIMIT_H_
#define ZEUS_SRC_SIM_POLICIES_JIT_POWER_LIMIT_H_

#include <map>
#include <optional>

#include "zeus/sim/trace.h"

namespace zeus::sim_policies {

class JitPowerLimit {
 public:
  // REQUIRES: `workload` outlives this object.
  // `nonbinding_margin`: JobContext::nonbinding_margin.
  JitPowerLimit(const Workload& workload, double eta,
                std::optional<double> nonbinding_margin = std::nullopt)
      : workload_(&workload), eta_(eta), nonbinding_margin_(nonbinding_margin) {}

  // The power limit for `batch_size`, in W; sets `*profile` when this call is
  // the one that profiles it. REQUIRES: batch_size is in the workload.
  int For(int batch_size, bool* profile);

 private:
  const Workload* workload_;
  double eta_;
  std::optional<double> nonbinding_margin_;
  std::map<int, int> chosen_w_;
};

}  // namespace zeus::sim_policies

#endif  // ZEUS_SRC_SIM_POLICIES_JIT_POWER_LIMIT_H_
