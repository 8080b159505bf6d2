// The train trace's intermediate metric levels (milestones): which levels a
// run passes on its way to its job's target, and when each seed run reached
// them. Used by BuildWorkloads and ValidateWorkload (trace.cc).
//
// Thread-safety: pure functions.

#ifndef ZEUS_SRC_SIM_MILESTONES_H_
#define ZEUS_SRC_SIM_MILESTONES_H_

#include <map>
#include <string>
#include <vector>

#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

// The levels of `job`'s rows in `train` (its dataset, network and
// optimizer) that lie on the way to its target, in the order runs reach
// them. The direction is read off the trace: the metric improves from the
// end of the levels the runs reach soonest (accuracy upwards, a word error
// rate downwards). Empty when the trace has no other level reached by any
// run.
std::vector<double> MilestoneLevels(const JobSpec& job, const std::vector<TrainRow>& train);

// Fills each trace's milestone_epochs: for every seed run of `run_ids` (by
// batch size, in target_epochs' order), its first epoch at each level of
// `milestones`, made consistent (no later than at a harder level or the
// target). Rows of other jobs, batch sizes or levels are ignored.
void AddMilestoneEpochs(const JobSpec& job, const std::vector<TrainRow>& train,
                        const std::vector<double>& milestones,
                        const std::map<int, std::vector<int>>& run_ids,
                        std::map<int, BatchSizeTrace>& by_size);

// OK when `trace` has no milestone epochs and there are no milestones (a
// hand-made trace), or one list of `num_milestones` epochs per seed run, each
// in [1, 2^30] or absent, ascending through the levels and the target;
// kInvalidArgument prefixed with `context` otherwise.
Status ValidateMilestoneEpochs(const std::string& context, size_t num_milestones,
                               const BatchSizeTrace& trace);

}  // namespace zeus

#endif  // ZEUS_SRC_SIM_MILESTONES_H_
