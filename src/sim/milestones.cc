#include "src/sim/milestones.h"

#include <algorithm>
#include <optional>

namespace zeus {
namespace {

bool SameJob(const JobSpec& job, const TrainRow& row) {
  return row.dataset == job.dataset && row.network == job.network && row.optimizer == job.optimizer;
}

}  // namespace

std::vector<double> MilestoneLevels(const JobSpec& job, const std::vector<TrainRow>& train) {
  // Mean first epoch of every level some run reached.
  std::map<double, std::pair<double, int>> epochs;
  for (const TrainRow& row : train) {
    if (!SameJob(job, row) || !row.target_epoch.has_value()) continue;
    auto& [sum, count] = epochs[row.target_metric];
    sum += *row.target_epoch;
    ++count;
  }
  if (epochs.size() < 2) return {};
  const auto mean = [&](double level) {
    const auto& [sum, count] = epochs.at(level);
    return sum / count;
  };
  const double lowest = epochs.begin()->first;
  const double highest = epochs.rbegin()->first;
  const bool lower_is_better = mean(highest) < mean(lowest);
  std::vector<double> levels;
  for (const auto& [level, unused] : epochs) {
    if (lower_is_better ? level > job.target_metric : level < job.target_metric) {
      levels.push_back(level);
    }
  }
  if (lower_is_better) std::reverse(levels.begin(), levels.end());
  return levels;
}

void AddMilestoneEpochs(const JobSpec& job, const std::vector<TrainRow>& train,
                        const std::vector<double>& milestones,
                        const std::map<int, std::vector<int>>& run_ids,
                        std::map<int, BatchSizeTrace>& by_size) {
  for (auto& [size, trace] : by_size) {
    trace.milestone_epochs.assign(trace.target_epochs.size(),
                                  std::vector<std::optional<double>>(milestones.size()));
  }
  if (milestones.empty()) return;
  for (const TrainRow& row : train) {
    if (!SameJob(job, row) || !row.target_epoch.has_value()) continue;
    auto trace = by_size.find(row.batch_size);
    auto ids = run_ids.find(row.batch_size);
    auto level = std::find(milestones.begin(), milestones.end(), row.target_metric);
    if (trace == by_size.end() || ids == run_ids.end() || level == milestones.end()) continue;
    auto run = std::find(ids->second.begin(), ids->second.end(), row.run);
    if (run == ids->second.end()) continue;
    trace->second.milestone_epochs[run - ids->second.begin()][level - milestones.begin()] =
        row.target_epoch;
  }
  // A run reached a level no later than it reached a harder one.
  for (auto& [size, trace] : by_size) {
    for (size_t r = 0; r < trace.milestone_epochs.size(); ++r) {
      std::optional<double> harder = trace.target_epochs[r];
      std::vector<std::optional<double>>& epochs = trace.milestone_epochs[r];
      for (size_t i = epochs.size(); i-- > 0;) {
        if (harder.has_value() && (!epochs[i].has_value() || *epochs[i] > *harder)) {
          epochs[i] = harder;
        }
        harder = epochs[i];
      }
    }
  }
}

Status ValidateMilestoneEpochs(const std::string& context, size_t num_milestones,
                               const BatchSizeTrace& trace) {
  if (trace.milestone_epochs.empty() && num_milestones == 0) return Status::Ok();
  if (trace.milestone_epochs.size() != trace.target_epochs.size()) {
    return InvalidArgumentError(
        context + ": milestone epochs for " + std::to_string(trace.milestone_epochs.size()) +
        " seed runs, expected " + std::to_string(trace.target_epochs.size()));
  }
  for (size_t r = 0; r < trace.milestone_epochs.size(); ++r) {
    const std::vector<std::optional<double>>& epochs = trace.milestone_epochs[r];
    const std::string run = context + ": seed run " + std::to_string(r);
    if (epochs.size() != num_milestones) {
      return InvalidArgumentError(run + ": " + std::to_string(epochs.size()) +
                                  " milestone epochs, expected " + std::to_string(num_milestones));
    }
    std::optional<double> previous;
    for (size_t i = 0; i <= epochs.size(); ++i) {
      const std::optional<double>& epoch = i < epochs.size() ? epochs[i] : trace.target_epochs[r];
      if (epoch.has_value() &&
          (!(*epoch >= 1 && *epoch <= kMaxTraceInteger) || (i > 0 && !previous.has_value()) ||
           (previous.has_value() && *epoch < *previous))) {
        return InvalidArgumentError(run +
                                    ": milestone epochs must be in [1, 2^30] and ascend "
                                    "through the levels and the target");
      }
      previous = epoch;
    }
  }
  return Status::Ok();
}

}  // namespace zeus
