// The configuration a simulated policy settled on, for Summarize and the
// experiments: the most frequent batch size and power limit among the last
// runs of each simulation tallied (smallest on ties). Private to src/sim.
//
// Thread-safety: one thread per object.

#ifndef ZEUS_SRC_SIM_SETTLED_CONFIGURATION_H_
#define ZEUS_SRC_SIM_SETTLED_CONFIGURATION_H_

#include <cstddef>
#include <map>
#include <vector>

#include "zeus/sim/simulator.h"

namespace zeus {

class SettledConfiguration {
 public:
  // How many of a simulation's runs count: its last 20.
  static constexpr size_t kLastRuns = 20;

  // Tallies the last kLastRuns runs of `runs` (all of them when fewer).
  void Add(const std::vector<RunRecord>& runs);

  // The modes; 0 when no run was tallied.
  int batch_size() const { return Mode(batch_sizes_); }
  int power_limit_w() const { return Mode(power_limits_w_); }

 private:
  static int Mode(const std::map<int, int>& counts);

  // Value -> count.
  std::map<int, int> batch_sizes_;
  std::map<int, int> power_limits_w_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_SIM_SETTLED_CONFIGURATION_H_
