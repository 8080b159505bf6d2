// Fuzzes `zeus simulate`'s path from trace files to results: the input is up
// to four files separated by lines "%%" (jobs.csv, summary_train.csv,
// summary_power_fuzz.csv and a job-group file). The trace files are loaded
// and joined by LoadWorkloads; every workload that loads is then simulated
// under every registered policy for a few recurrences, summarised, and, when
// the group file loads, simulated as job groups under one policy.
// Invariants beyond "no crash" (a ZEUS_CHECK reachable from a trace value
// aborts, which is the bug this target exists to find): a loaded workload
// passes ValidateWorkload; every policy can be made for it (except those
// planning from an oracle when no batch size reaches the target) and
// simulates it without an error; every group simulates under fixed
// submission durations, and under scaled run times unless the default batch
// size never reaches the target; and every run, summary and group run it
// yields is finite. Check-ins vary with the seed (CheckInS).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/sim/trace.h"

#include "tests/fuzz/fuzz_temp_file.h"

namespace {

// Enough recurrences for every policy to profile and exploit a little;
// DefaultRecurrences of a fuzzed trace may be in the millions.
constexpr int kMaxRecurrences = 12;
// Workloads simulated per input (each costs |policies| simulations).
constexpr size_t kMaxWorkloads = 3;

void Check(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) {
    std::fprintf(stderr, "fuzz_trace_sim: invariant violated: %s %s\n", what, detail.c_str());
    std::abort();
  }
}

std::vector<std::string_view> SplitFiles(std::string_view text) {
  std::vector<std::string_view> files;
  constexpr std::string_view kSeparator = "\n%%\n";
  while (files.size() < 3) {
    size_t at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    files.push_back(text.substr(0, at + 1));
    text.remove_prefix(at + kSeparator.size());
  }
  files.push_back(text);
  return files;
}

bool Finite(const zeus::RunRecord& r) {
  return std::isfinite(r.energy_j) && std::isfinite(r.time_s) && std::isfinite(r.cost) &&
         r.energy_j >= 0 && r.time_s >= 0 && r.cost >= 0;
}

bool Finite(const zeus::ExpectedRun& r) {
  return std::isfinite(r.energy_j) && std::isfinite(r.time_s) && std::isfinite(r.cost) &&
         r.cost > 0;
}

// Check-in periods the simulations run under, by seed: none (per-epoch
// reports), fractions of the shortest epochs, and the default.
double CheckInS(uint64_t seed) {
  constexpr double kCheckInS[] = {0.0, 1e-3, 10.0};
  return kCheckInS[seed % 3];
}

void SimulateEveryPolicy(const zeus::Workload& workload, uint64_t seed) {
  zeus::SimulationOptions options;
  options.seed = seed;
  options.check_in_s = CheckInS(seed);
  options.num_recurrences = std::min(kMaxRecurrences, zeus::DefaultRecurrences(workload));
  if (options.num_recurrences <= 0) options.num_recurrences = kMaxRecurrences;
  options.max_tries = 3;
  zeus::PolicyContext context;
  context.workload = &workload;
  context.eta = options.eta;
  context.beta = options.beta;
  context.seed = seed;
  for (const std::string& name : zeus::PolicyNames()) {
    zeus::StatusOr<std::unique_ptr<zeus::Policy>> policy = zeus::MakePolicy(name, context);
    if (!policy.ok()) {
      // Policies that plan from the oracle need a batch size that reaches the
      // target; a loaded workload may have none. Nothing else may fail.
      Check(policy.status().code() == zeus::StatusCode::kFailedPrecondition,
            "a loaded workload's policy cannot be made:", policy.status().ToString());
      continue;
    }
    zeus::StatusOr<std::vector<zeus::RunRecord>> runs =
        zeus::SimulateRecurringJob(workload, **policy, options);
    Check(runs.ok(), "a loaded workload fails to simulate:",
          runs.ok() ? "" : name + ": " + runs.status().ToString());
    for (const zeus::RunRecord& run : *runs) Check(Finite(run), "a run is not finite:", name);
    zeus::StatusOr<zeus::SimulationSummary> summary =
        zeus::Summarize(options.ContextFor(workload), *runs, options.num_recurrences);
    if (!summary.ok()) continue;  // No run started, or the default never reaches the target.
    Check(std::isfinite(summary->cost_ratio) && std::isfinite(summary->energy_ratio) &&
              std::isfinite(summary->time_ratio) && std::isfinite(summary->regret),
          "a summary ratio is not finite:", name);
    Check(Finite(summary->default_run) && Finite(summary->oracle_run),
          "a reference run is not finite:", name);
  }
}

void SimulateGroups(const zeus::Workload& workload, const zeus::JobGroups& groups, uint64_t seed) {
  zeus::SimulationOptions options;
  options.seed = seed;
  options.check_in_s = CheckInS(seed);
  options.max_tries = 3;
  zeus::PolicyContext context;
  context.workload = &workload;
  context.seed = seed;
  size_t simulated = 0;
  for (const auto& [name, submissions] : groups) {
    if (submissions.front().dataset != workload.job.dataset) continue;
    if (++simulated > 2) break;
    std::vector<zeus::JobSubmission> some(
        submissions.begin(), submissions.begin() + static_cast<std::ptrdiff_t>(
                                                       std::min<size_t>(submissions.size(), 16)));
    zeus::StatusOr<std::unique_ptr<zeus::Policy>> policy = zeus::MakePolicy("zeus", context);
    Check(policy.ok(), "the zeus policy cannot be made");
    options.group_run_time = zeus::GroupRunTime::kScaled;
    zeus::StatusOr<std::vector<zeus::GroupRunRecord>> runs =
        zeus::SimulateJobGroup(workload, **policy, some, options);
    if (!runs.ok()) {
      // Scaled run times are relative to the default batch size's; a loaded
      // workload whose default never reaches the target is refused for them,
      // and only for them: fixed submission durations must still simulate.
      Check(runs.status().code() == zeus::StatusCode::kFailedPrecondition,
            "a loaded group fails to simulate:", runs.status().ToString());
      options.group_run_time = zeus::GroupRunTime::kSubmission;
      policy = zeus::MakePolicy("zeus", context);
      Check(policy.ok(), "the zeus policy cannot be made");
      runs = zeus::SimulateJobGroup(workload, **policy, some, options);
    }
    Check(runs.ok(),
          "a loaded group fails to simulate:", runs.ok() ? "" : runs.status().ToString());
    for (const zeus::GroupRunRecord& run : *runs) {
      Check(Finite(run.run) && std::isfinite(run.start_time_s) && std::isfinite(run.end_time_s),
            "a group run is not finite:", name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> files = SplitFiles(text);
  static const char* const kNames[] = {"jobs.csv", "summary_train.csv", "summary_power_fuzz.csv",
                                       "groups.csv"};
  for (size_t i = 0; i < 4; ++i) {
    std::string_view file = i < files.size() ? files[i] : std::string_view();
    zeus::fuzz::WriteScratchFile(kNames[i], reinterpret_cast<const uint8_t*>(file.data()),
                                 file.size());
  }
  const std::string& dir = zeus::fuzz::ScratchDir();
  zeus::StatusOr<std::vector<zeus::Workload>> workloads = zeus::LoadWorkloads(dir, "fuzz");
  if (!workloads.ok()) return 0;
  for (const zeus::Workload& workload : *workloads) {
    zeus::Status valid = zeus::ValidateWorkload(workload);
    Check(valid.ok(), "a loaded workload fails ValidateWorkload:", valid.ToString());
  }
  const uint64_t seed = size;
  for (size_t i = 0; i < workloads->size() && i < kMaxWorkloads; ++i) {
    SimulateEveryPolicy((*workloads)[i], seed);
  }
  zeus::StatusOr<zeus::JobGroups> groups = zeus::LoadJobGroups(dir + "/groups.csv");
  if (groups.ok()) {
    for (size_t i = 0; i < workloads->size() && i < kMaxWorkloads; ++i) {
      SimulateGroups((*workloads)[i], *groups, seed);
    }
  }
  return 0;
}
