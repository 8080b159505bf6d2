// `zeus simulate`: the trace-driven simulation of the Zeus paper (NSDI'23).
//
//   zeus simulate [--traces DIR | --download] [--gpu NAME] [--dataset NAME ...]
//                 [--policy NAME ...] [--seeds 1-10] [--eta 0.5] [--beta 2]
//                 [--recurrences N] [--history-csv FILE [--allow-large-history]]
//                 [--json] [--quiet] [--groups FILE | --generate-groups N
//                 [--group-draw-seed 1] [--group-submissions 40] [--group-interarrival-s 3600]
//                 [--group-duration-s 5400] [--group-runtime-sigma 0.25]]
//                 [--group-run-time scaled|submission] [--check-in-s 10]
//                 [--plot DIR]
//
// Prints the settings (what eta and beta mean), a headline per GPU
// (WriteHeadline), then per GPU, workload and policy, the cumulative energy,
// time and cost relative to `default`, the regret against `oracle`, and the
// configuration the policy settles on (means over the seeds), the summary per
// policy and notes on outliers. With no flags it replays the traces bundled
// with Zeus, offline, for policies zeus, frugal (swarm with job groups),
// default and oracle; --policy all simulates every policy. With --groups or
// --generate-groups, each workload recurs as the overlapping submissions of
// recurring-job groups (group,start_time,end_time,dataset,runtime_ratio)
// instead of one sequential job. --generate-groups draws them, with seed
// --group-draw-seed (independent of --seeds), from the arrival model of
// JobGroupGeneratorOptions (zeus/sim/job_groups.h): per group, one dataset
// and --group-submissions submissions with exponential gaps of mean
// --group-interarrival-s, each lasting --group-duration-s x its runtime
// ratio, a log-normal draw with sigma --group-runtime-sigma.
// --group-run-time (GroupRunTime, zeus/sim/simulator.h) says how long each
// run of a group lasts: scaled by its time to the target (default) or its
// submission's duration whatever its batch size (the original's).
// --check-in-s (JobContext::check_in_s) says how often frugal's and swarm's
// runs are judged between their per-epoch reports: our client's check-ins
// (0: per epoch only, as the original client reports). A
// --history-csv estimated above
// kLargeHistoryBytes is refused unless --allow-large-history is given.
// --plot DIR draws SVG figures with gnuplot (tools/simulate_plots.h) after
// the results are printed: a figure that cannot be drawn or written fails the
// command (exit 1) but loses none of the results.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/core/power_limit_profile.h"
#include "zeus/fetch/trace_download.h"
#include "zeus/sim/experiment.h"
#include "zeus/sim/job_groups.h"
#include "zeus/sim/report.h"
#include "zeus/sim/trace.h"
#include "zeus/sim/trace_source.h"
#include "zeus/util/strings.h"

#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/simulate_plots.h"

namespace zeus::cli {
namespace {

struct SimulateArgs {
  std::string traces;
  bool download = false;
  bool quiet = false;
  std::string gpu;
  std::vector<std::string> datasets;
  std::vector<std::string> policies;
  std::string seeds = "1-10";
  double eta = 0.5;
  std::string beta = "2";
  int recurrences = 0;
  std::string history_csv;
  bool allow_large_history = false;
  bool json = false;
  std::string groups;
  int generate_groups = 0;
  // The seed --generate-groups draws its groups with, independent of --seeds:
  // every seed of a run simulates the same draw of groups.
  uint64_t group_draw_seed = 1;
  // The arrival model of --generate-groups (JobGroupGeneratorOptions).
  JobGroupGeneratorOptions arrival;
  // How long a group's run lasts (GroupRunTime): "scaled" or "submission".
  std::string group_run_time = "scaled";
  // SimulationOptions::check_in_s.
  double check_in_s = 10.0;
  // SimulationOptions::nonbinding_margin = kDefaultNonbindingMargin.
  bool skip_nonbinding_limits = false;
  std::string plot_dir;
};

// With --skip-nonbinding-limits: the power limits the JIT profiles run over
// every (workload, batch size) loaded, and all of them.
struct ProfiledLimits {
  size_t profiled = 0;
  size_t of = 0;
};

std::optional<ProfiledLimits> CountProfiledLimits(const std::vector<Workload>& workloads,
                                                  std::optional<double> nonbinding_margin) {
  if (!nonbinding_margin.has_value()) return std::nullopt;
  ProfiledLimits count;
  for (const Workload& workload : workloads) {
    for (const BatchSizeTrace& trace : workload.batch_sizes) {
      count.profiled += trace.ProfiledPoints(nonbinding_margin).size();
      count.of += trace.power.size();
    }
  }
  return count;
}

// Above this estimated size, --history-csv needs --allow-large-history.
constexpr uint64_t kLargeHistoryBytes = 2'000'000'000;

// "1-10", "3", "1,2,7-9": the seeds, in order, without duplicates. Throws
// UsageError naming --seeds and the value.
std::vector<uint64_t> ParseSeeds(const std::string& text) {
  auto bad = [&text](const std::string& why) {
    return UsageError("--seeds", "'" + text + "'", why + " (e.g. 1-10 or 1,3,5)");
  };
  std::vector<uint64_t> seeds;
  std::set<uint64_t> seen;
  for (const std::string& part : Split(text, ',')) {
    const size_t dash = part.find('-', 1);
    StatusOr<uint64_t> first = ParseUint64(part.substr(0, dash));
    StatusOr<uint64_t> last =
        dash == std::string::npos ? first : ParseUint64(part.substr(dash + 1));
    if (!first.ok() || !last.ok()) {
      throw bad("'" + part + "' is not a seed or a range of non-negative integers");
    }
    if (*last < *first || *last - *first > 100000) {
      throw bad("bad range '" + part + "' (first <= last, at most 100001 seeds)");
    }
    for (uint64_t seed = *first; seed <= *last; ++seed) {
      if (seen.insert(seed).second) seeds.push_back(seed);
    }
  }
  if (seeds.empty()) throw bad("no seeds");
  return seeds;
}

// "2" -> 2; "none", "off", "inf" -> no early stopping. Throws UsageError
// naming --beta and the value.
std::optional<double> ParseBeta(const std::string& text) {
  const std::string lower = ToLower(Trim(text));
  if (lower == "none" || lower == "off" || lower == "inf") return std::nullopt;
  StatusOr<double> beta = ParseDouble(text);
  if (!beta.ok() || !std::isfinite(*beta) || *beta <= 0) {
    throw UsageError("--beta", "'" + text + "'", "expected a number > 0, or 'none'");
  }
  return *beta;
}

// A one-line progress bar on stderr, only when stderr is a terminal and
// progress is wanted.
class ProgressBar {
 public:
  explicit ProgressBar(bool wanted) : enabled_(wanted && isatty(STDERR_FILENO) == 1) {}
  void Update(size_t done, size_t total) {
    if (!enabled_ || total == 0) return;
    const int width = 40;
    const int filled = static_cast<int>(width * done / total);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu simulations", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  }
  void Download(uint64_t received, uint64_t total, const std::string& name) {
    if (!enabled_) return;
    if (total > 0) {
      std::fprintf(stderr, "\rdownloading %s: %3d%%", name.c_str(),
                   static_cast<int>(100 * received / total));
    } else {
      std::fprintf(stderr, "\rdownloading %s: %llu bytes", name.c_str(),
                   static_cast<unsigned long long>(received));
    }
    std::fflush(stderr);
  }
  void EndLine() {
    if (enabled_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
};

// The workloads of every requested GPU (default: all in `dir`), filtered by
// --dataset.
StatusOr<std::vector<Workload>> LoadSelectedWorkloads(const SimulateArgs& args,
                                                      const std::string& dir) {
  ZEUS_ASSIGN_OR_RETURN(std::vector<std::string> gpus, FindTraceGpus(dir));
  if (!args.gpu.empty()) {
    if (std::find(gpus.begin(), gpus.end(), args.gpu) == gpus.end()) {
      return NotFoundError("--gpu: no trace for GPU '" + args.gpu + "' in " + dir +
                           " (it has: " + Join(gpus, ", ") + ")");
    }
    gpus = {args.gpu};
  }
  std::vector<Workload> workloads;
  std::set<std::string> datasets_seen;
  for (const std::string& gpu : gpus) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<Workload> loaded, LoadWorkloads(dir, gpu));
    for (Workload& w : loaded) {
      datasets_seen.insert(w.job.dataset);
      if (!args.datasets.empty() && std::find(args.datasets.begin(), args.datasets.end(),
                                              w.job.dataset) == args.datasets.end()) {
        continue;
      }
      workloads.push_back(std::move(w));
    }
  }
  for (const std::string& name : args.datasets) {
    if (datasets_seen.count(name) == 0) {
      return NotFoundError("--dataset: no workload '" + name + "' in " + dir + " (known: " +
                           Join({datasets_seen.begin(), datasets_seen.end()}, ", ") + ")");
    }
  }
  return workloads;
}

// The job groups of --groups or --generate-groups (empty: neither).
StatusOr<JobGroups> SelectJobGroups(const SimulateArgs& args,
                                    const std::vector<Workload>& workloads) {
  if (!args.groups.empty()) return LoadJobGroups(args.groups);
  if (args.generate_groups == 0) return JobGroups();
  JobGroupGeneratorOptions generator = args.arrival;
  generator.num_groups = args.generate_groups;
  generator.seed = args.group_draw_seed;
  std::set<std::string> names;
  for (const Workload& w : workloads) names.insert(w.job.dataset);
  return GenerateJobGroups(generator, {names.begin(), names.end()});
}

// The policies simulated without --policy: the paper's, ours (swarm is
// frugal plus concurrency, so it is the one for job groups) and the two
// references. --policy all: every policy.
std::vector<std::string> SelectedPolicies(const SimulateArgs& args, bool grouped) {
  if (args.policies.empty()) {
    return {"zeus", grouped ? "swarm" : "frugal", "default", "oracle"};
  }
  if (std::find(args.policies.begin(), args.policies.end(), "all") != args.policies.end()) {
    return PolicyNames();
  }
  return args.policies;
}

void PrintResults(const SimulateArgs& args, const std::string& dir, const JobGroups* groups,
                  const ExperimentOptions& options, const std::vector<PolicyResult>& results,
                  const RunEvidence& evidence, const std::optional<ProfiledLimits>& profiled) {
  const std::optional<double>& beta = options.simulation.beta;
  if (args.json) {
    nlohmann::json out = {
        {"traces", dir},
        {"job_groups", groups != nullptr ? nlohmann::json(groups->size()) : nlohmann::json()},
        {"group_arrival",
         args.generate_groups > 0
             ? nlohmann::json{{"draw_seed", args.group_draw_seed},
                              {"submissions_per_group", args.arrival.submissions_per_group},
                              {"mean_interarrival_s", args.arrival.mean_interarrival_s},
                              {"mean_duration_s", args.arrival.mean_duration_s},
                              {"runtime_ratio_sigma", args.arrival.runtime_ratio_sigma}}
             : nlohmann::json()},
        {"group_run_time", groups != nullptr
                               ? nlohmann::json(GroupRunTimeName(options.simulation.group_run_time))
                               : nlohmann::json()},
        {"check_in_s", options.simulation.check_in_s},
        {"eta", options.simulation.eta},
        {"beta", beta.has_value() ? nlohmann::json(*beta) : nlohmann::json()},
        {"seeds", options.seeds},
        {"results", nlohmann::json::array()}};
    for (const PolicyResult& r : results) out["results"].push_back(ResultToJson(r));
    if (profiled.has_value()) {
      out["nonbinding_margin"] = *options.simulation.nonbinding_margin;
      out["profiled_limits"] = {{"profiled", profiled->profiled}, {"of", profiled->of}};
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "zeus simulate: each policy picks the batch size and power limit of a recurring\n"
               "training job, replayed on the traces of the Zeus paper (NSDI'23).\n";
  std::cout << "traces: " << dir << "\n";
  WriteSettingsHeader(options.simulation, options.seeds, std::cout);
  std::cout << "policies: " << Join(options.policies, ", ")
            << (args.policies.empty() ? " (every policy: --policy all)" : "") << "\n";
  if (profiled.has_value()) {
    std::cout << fmt::format(
        "power-limit profiles: limits that cannot bind skipped (margin {}): {} of {} limits "
        "profiled\n",
        *options.simulation.nonbinding_margin, profiled->profiled, profiled->of);
  }
  if (groups != nullptr) {
    size_t submissions = 0;
    for (const auto& [name, group] : *groups) submissions += group.size();
    std::cout << "job groups: " << groups->size() << " groups, " << submissions
              << " submissions (recs = submissions per workload), run time "
              << GroupRunTimeName(options.simulation.group_run_time) << "\n";
  }
  std::cout << "\n";
  std::ostringstream headline;
  WriteHeadline(results, headline);
  if (!headline.str().empty()) std::cout << headline.str() << "\n";
  WriteResultsTable(results, options.seeds.size(), std::cout);
  std::cout << "\nSummary over the workloads:\n\n";
  WriteComparisonTable(results, std::cout);
  WriteOutlierNotes(results, evidence, std::cout);
  std::cout << "\nSubmissions:\n\n";
  WriteSubmissionTable(results, std::cout);
}

int RunSimulate(const SimulateArgs& args) {
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "zeus simulate: %s\n", status.message().c_str());
    return 1;
  };
  const std::vector<uint64_t> seeds = ParseSeeds(args.seeds);
  const std::optional<double> beta = ParseBeta(args.beta);

  ProgressBar bar(!args.quiet);
  TraceSourceOptions source;
  source.explicit_dir = args.traces;
  source.allow_download = args.download;
  source.download = DownloadTraces;
  bool downloading = false;
  StatusOr<std::string> dir =
      ResolveTraceDir(source, [&](uint64_t received, uint64_t total, const std::string& name) {
        downloading = true;
        bar.Download(received, total, name);
      });
  if (downloading) bar.EndLine();
  if (!dir.ok()) return fail(dir.status());
  StatusOr<std::vector<Workload>> workloads = LoadSelectedWorkloads(args, *dir);
  if (!workloads.ok()) return fail(workloads.status());

  ExperimentOptions options;
  const bool grouped = !args.groups.empty() || args.generate_groups > 0;
  options.policies = SelectedPolicies(args, grouped);
  options.seeds = seeds;
  options.simulation.eta = args.eta;
  options.simulation.beta = beta;
  options.simulation.num_recurrences = args.recurrences;
  StatusOr<GroupRunTime> group_run_time = ParseGroupRunTime(args.group_run_time);
  if (!group_run_time.ok()) return fail(group_run_time.status());
  options.simulation.group_run_time = *group_run_time;
  options.simulation.check_in_s = args.check_in_s;
  if (args.skip_nonbinding_limits) options.simulation.nonbinding_margin = kDefaultNonbindingMargin;

  StatusOr<JobGroups> groups = SelectJobGroups(args, *workloads);
  if (!groups.ok()) return fail(groups.status());
  std::unique_ptr<std::ofstream> history;
  if (!args.history_csv.empty()) {
    const uint64_t bytes =
        EstimateHistoryCsvBytes(*workloads, grouped ? &*groups : nullptr, options);
    if (bytes > kLargeHistoryBytes && !args.allow_large_history) {
      throw UsageError("--history-csv", "'" + args.history_csv + "'",
                       fmt::format("these runs would write about {:.1f} GB of history (estimated "
                                   "{} bytes); pass --allow-large-history to write it anyway, or "
                                   "simulate fewer --seeds, --policy or --dataset",
                                   static_cast<double>(bytes) / 1e9, bytes));
    }
    history = std::make_unique<std::ofstream>(args.history_csv);
    if (!*history) {
      return fail(IoError("--history-csv: cannot open '" + args.history_csv + "' for writing"));
    }
    WriteHistoryCsvHeader(*history);
  }
  const ProgressCallback progress = [&bar](size_t done, size_t total) { bar.Update(done, total); };
  std::unique_ptr<SimulationPlots> plots;
  if (!args.plot_dir.empty())
    plots = std::make_unique<SimulationPlots>(seeds.front(), options.simulation);
  // The text report explains its outliers from the runs.
  RunEvidence evidence;
  const HistoryCallback write_history = [&](const HistoryRow& h) {
    if (history != nullptr) WriteHistoryCsvRow(h, *history);
    if (plots != nullptr) plots->Add(h);
    if (!args.json) evidence.Add(h);
  };
  StatusOr<std::vector<PolicyResult>> results =
      grouped ? RunGroupExperiment(*workloads, *groups, options, progress, write_history)
              : RunExperiment(*workloads, options, progress, write_history);
  if (!results.ok()) return fail(results.status());
  if (history != nullptr) {
    history->close();
    if (!*history)
      return fail(IoError("--history-csv: write to '" + args.history_csv + "' failed"));
  }
  PrintResults(args, *dir, grouped ? &*groups : nullptr, options, *results, evidence,
               CountProfiledLimits(*workloads, options.simulation.nonbinding_margin));
  if (plots != nullptr) {
    std::cout.flush();
    StatusOr<std::vector<std::string>> written = plots->Write(args.plot_dir, *workloads);
    if (!written.ok()) {
      std::fprintf(stderr, "zeus simulate: --plot %s: %s (the results above are complete)\n",
                   args.plot_dir.c_str(), written.status().message().c_str());
      return 1;
    }
    if (!args.quiet) {
      std::fprintf(stderr, "zeus simulate: wrote %zu figures and %s\n", written->size() - 1,
                   written->back().c_str());
    }
  }
  return 0;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "simulate", "Replay the Zeus paper's traces: energy, time and cost of each policy");
  auto args = std::make_shared<SimulateArgs>();
  cmd->footer(
      "Columns: energy, time and cost are cumulative over all recurrences, relative to the\n"
      "`default` policy (default batch size at the maximum power limit). regret is the extra\n"
      "cumulative cost over the `oracle` policy (always the configuration with the least\n"
      "expected cost) on the same seeds: 0 for the oracle, 0.05 = 5 % more. Progress goes to\n"
      "stderr when it is a terminal (--quiet silences it); stdout carries only the report.");
  auto* traces_option = cmd->add_option(
      "--traces", args->traces,
      "Trace directory (default: $ZEUS_TRACE_DIR, else the bundled NSDI'23 traces)");
  cmd->add_flag("--download", args->download,
                "Fetch the public traces into the cache (~/.cache/zeus/traces) and use them")
      ->excludes(traces_option);
  cmd->add_flag("--quiet,-q", args->quiet, "No progress on stderr");
  cmd->add_option("--gpu", args->gpu, "Read summary_power_NAME.csv only (default: every GPU)");
  cmd->add_option("--dataset", args->datasets, "Workloads to simulate (default: all)");
  std::vector<std::string> policy_choices = PolicyNames();
  policy_choices.push_back("all");
  cmd->add_option("--policy", args->policies,
                  "Policies: " + Join(PolicyNames(), ", ") +
                      ", or all (default: zeus, frugal, default, oracle; with job groups swarm "
                      "instead of frugal)")
      ->check(CLI::IsMember(policy_choices));
  cmd->add_option("--seeds", args->seeds, "Seeds, e.g. 1-10 or 1,3,5")->capture_default_str();
  cmd->add_option("--eta", args->eta, "Weight of energy in the cost, in [0, 1]")
      ->capture_default_str()
      ->check(NumberIn(0.0, 1.0));
  cmd->add_option("--beta", args->beta, "Early-stopping knob (> 0), or 'none'")
      ->capture_default_str();
  cmd->add_option("--recurrences", args->recurrences,
                  "Recurrences per job (default or 0: 2 x batch sizes x power limits)")
      ->check(WholeNumberAtLeast(0, "recurrences"));
  auto* history_option = cmd->add_option(
      "--history-csv", args->history_csv,
      "Write one row per run to FILE (refused above ~2 GB without --allow-large-history)");
  cmd->add_flag("--allow-large-history", args->allow_large_history,
                "Write --history-csv even when it is estimated above 2 GB")
      ->needs(history_option);
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  auto* groups_option = cmd->add_option(
      "--groups", args->groups,
      "Simulate recurring-job groups: CSV group,start_time,end_time,dataset,runtime_ratio");
  auto* generate_option =
      cmd->add_option("--generate-groups", args->generate_groups,
                      "Simulate N >= 1 generated job groups (arrival model below, drawn with "
                      "--group-draw-seed; each group one dataset drawn uniformly)")
          ->excludes(groups_option)
          ->check(WholeNumberAtLeast(1, "groups"));
  cmd->add_option("--group-draw-seed", args->group_draw_seed,
                  "Seed of the draw of --generate-groups, independent of --seeds (which seed "
                  "the runs): compare policies over several draws (scripts/policy_report.py)")
      ->capture_default_str()
      ->needs(generate_option);
  cmd->add_option("--group-submissions", args->arrival.submissions_per_group,
                  "Arrival model: submissions per generated group")
      ->capture_default_str()
      ->needs(generate_option)
      ->check(WholeNumberAtLeast(1, "submissions"));
  cmd->add_option("--group-interarrival-s", args->arrival.mean_interarrival_s,
                  "Arrival model: mean gap between a group's submissions, s (exponential gaps: "
                  "Poisson arrivals)")
      ->capture_default_str()
      ->needs(generate_option)
      ->check(NumberIn(0.001, 1e9));
  cmd->add_option("--group-duration-s", args->arrival.mean_duration_s,
                  "Arrival model: median duration of a submission, s, scaled by its runtime "
                  "ratio (above the mean gap, submissions overlap: about duration / gap in "
                  "flight)")
      ->capture_default_str()
      ->needs(generate_option)
      ->check(NumberIn(0.001, 1e9));
  cmd->add_option("--group-runtime-sigma", args->arrival.runtime_ratio_sigma,
                  "Arrival model: sigma of the log-normal runtime ratio (scales each "
                  "submission's duration, energy and time)")
      ->capture_default_str()
      ->needs(generate_option)
      ->check(NumberIn(0.0, 5.0));
  auto* run_time_option =
      cmd->add_option("--group-run-time", args->group_run_time,
                      "How long a group's run lasts: 'scaled', its submission's duration x its "
                      "time to the target / the default batch size's (a faster configuration "
                      "finishes sooner); 'submission', its submission's duration whatever its "
                      "batch size (the original Zeus simulator's). A run stopped early ends when "
                      "it has spent what it ran")
          ->capture_default_str()
          ->check(CLI::IsMember({"scaled", "submission"}));
  cmd->add_option("--check-in-s", args->check_in_s,
                  "How often (s of a run's time) frugal's and swarm's runs are judged against "
                  "their bound between per-epoch reports: the check-ins of our client "
                  "(BatchSizeOptimizer.on_step_end). 0: at the end of each epoch only, as the "
                  "original client reports")
      ->capture_default_str()
      ->check(NumberIn(0.0, 1e9));
  cmd->add_flag("--skip-nonbinding-limits", args->skip_nonbinding_limits,
                "JIT power-limit profiles skip the limits that cannot bind (below the draw at "
                "the highest limit x 1.2), as the power-limit optimizer does by default; off: "
                "every limit is profiled, as in the original simulator");
  cmd->add_option("--plot", args->plot_dir,
                  "Also draw SVG figures into DIR (created if missing): cumulative cost per "
                  "recurrence, and each policy's path in the energy-time plane (needs gnuplot)");
  cmd->callback([args, exit_code, run_time_option] {
    if (run_time_option->count() > 0 && args->groups.empty() && args->generate_groups == 0) {
      throw UsageError("--group-run-time", "'" + args->group_run_time + "'",
                       "applies to job groups only; pass --groups FILE or --generate-groups N");
    }
    *exit_code = RunSimulate(*args);
  });
}

}  // namespace zeus::cli
