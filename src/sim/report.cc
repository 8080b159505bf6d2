#include "zeus/sim/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "zeus/util/csv.h"

namespace zeus {
namespace {

// The policies the reports name: the two references every ratio and regret
// is measured against, the paper's policy, and ours.
constexpr char kDefault[] = "default";
constexpr char kOracle[] = "oracle";
constexpr char kPaperPolicy[] = "zeus";
constexpr const char* kOurPolicies[] = {"frugal", "swarm"};

// Above this cost relative to `default`, a result gets a note explaining it.
constexpr double kOutlierCostRatio = 2.0;
// Notes beyond this many are counted, not written.
constexpr size_t kMaxOutlierNotes = 5;

// `text` broken into lines of at most `width` characters at spaces, each
// line after the first indented by `indent` spaces.
std::string Wrap(const std::string& text, size_t width, size_t indent) {
  std::string out;
  size_t column = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > 0 && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    start = end + 1;
  }
  return out + "\n";
}

// "1-10", "1-3, 7": consecutive seeds as ranges, in the order given.
std::string SeedRanges(const std::vector<uint64_t>& seeds) {
  std::string out;
  for (size_t i = 0; i < seeds.size();) {
    size_t j = i;
    while (j + 1 < seeds.size() && seeds[j + 1] == seeds[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(seeds[i]);
    if (j > i) out += "-" + std::to_string(seeds[j]);
    i = j + 1;
  }
  return out;
}

std::string Number(double value, int precision) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", precision, value);
  return text;
}

// The oracle's and `default`'s results against themselves measure only the
// traces' sampling noise: says how large it came out.
void WriteReferenceNoise(const std::vector<PolicyResult>& results, std::ostream& out) {
  double oracle_sum = 0.0, oracle_min = 0.0, oracle_max = 0.0;
  double default_min = 0.0, default_max = 0.0;
  int oracle_cases = 0, default_cases = 0;
  for (const PolicyResult& r : results) {
    if (r.policy == kOracle) {
      const double regret = 100.0 * r.expected_regret;
      oracle_min = oracle_cases == 0 ? regret : std::min(oracle_min, regret);
      oracle_max = oracle_cases == 0 ? regret : std::max(oracle_max, regret);
      oracle_sum += regret;
      ++oracle_cases;
    } else if (r.policy == kDefault) {
      default_min = default_cases == 0 ? r.cost_ratio : std::min(default_min, r.cost_ratio);
      default_max = default_cases == 0 ? r.cost_ratio : std::max(default_max, r.cost_ratio);
      ++default_cases;
    }
  }
  if (oracle_cases > 0) {
    out << "\n"
        << Wrap(
               "oracle: regret 0 by definition (it always runs the configuration of least "
               "expected cost). Its runs' cost differs from that expected cost by " +
                   Number(oracle_sum / oracle_cases, 2) + " % on average (" +
                   Number(oracle_min, 2) + " to " + Number(oracle_max, 2) +
                   " % per workload): the sampling noise of the traces, which every row carries.",
               80, 0);
  }
  if (default_cases > 0) {
    out << (oracle_cases > 0 ? "" : "\n")
        << Wrap("default: its cost relative to its own expected cost is " + Number(default_min, 3) +
                    " to " + Number(default_max, 3) +
                    " over the workloads, the same noise; so > dflt is left out for it.",
                80, 0);
  }
}

}  // namespace

void WriteSettingsHeader(const SimulationOptions& simulation, const std::vector<uint64_t>& seeds,
                         std::ostream& out) {
  const std::string eta = Number(simulation.eta, 2);
  const std::string time_weight = Number(1.0 - simulation.eta, 2);
  // Trailing zeros off: 0.50 -> 0.5, 1.00 -> 1.
  auto trim = [](std::string text) {
    while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
      const bool dot = text.back() == '.';
      text.pop_back();
      if (dot) break;
    }
    return text;
  };
  out << Wrap("eta " + trim(eta) + ": a run's cost = " + trim(eta) + " x energy (J) + " +
                  trim(time_weight) +
                  " x max power (W) x time (s), so 1 weighs energy only and 0 time only.",
              80, 2);
  if (simulation.beta.has_value()) {
    out << Wrap("beta " + trim(Number(*simulation.beta, 3)) +
                    ": a policy stops a run once it has cost " + trim(Number(*simulation.beta, 3)) +
                    "x the cheapest run so far (early stopping).",
                80, 2);
  } else {
    out << "beta none: no run is stopped early.\n";
  }
  out << "seeds: " << SeedRanges(seeds) << " (every number below is the mean over " << seeds.size()
      << (seeds.size() == 1 ? " seed)\n" : " seeds)\n");
}

void WriteHeadline(const std::vector<PolicyResult>& results, std::ostream& out) {
  struct Means {
    int cases = 0;
    double energy = 0.0, time = 0.0, cost = 0.0;
    std::string Figures() const {
      char text[128];
      std::snprintf(text, sizeof(text), "energy %+6.1f %%   time %+6.1f %%   cost %+6.1f %%",
                    100.0 * (energy / cases - 1.0), 100.0 * (time / cases - 1.0),
                    100.0 * (cost / cases - 1.0));
      return text;
    }
  };
  std::vector<std::string> gpus;
  // (gpu, policy) -> sums of the ratios over the GPU's workloads.
  std::map<std::pair<std::string, std::string>, Means> sums;
  for (const PolicyResult& r : results) {
    if (std::find(gpus.begin(), gpus.end(), r.gpu) == gpus.end()) gpus.push_back(r.gpu);
    Means& m = sums[{r.gpu, r.policy}];
    ++m.cases;
    m.energy += r.energy_ratio;
    m.time += r.time_ratio;
    m.cost += r.cost_ratio;
  }
  struct Line {
    std::string gpu, label, figures;
  };
  std::vector<Line> lines;
  for (const std::string& gpu : gpus) {
    auto find = [&](const std::string& policy) -> const Means* {
      auto it = sums.find({gpu, policy});
      return it == sums.end() ? nullptr : &it->second;
    };
    const size_t first = lines.size();
    if (const Means* m = find(kPaperPolicy)) {
      lines.push_back({"", std::string(kPaperPolicy) + " (the paper's policy)", m->Figures()});
    }
    // Ours: the one of least mean cost on this GPU.
    const Means* best = nullptr;
    std::string best_name;
    int ours = 0;
    for (const char* policy : kOurPolicies) {
      const Means* m = find(policy);
      if (m == nullptr) continue;
      ++ours;
      if (best == nullptr || m->cost / m->cases < best->cost / best->cases) {
        best = m;
        best_name = policy;
      }
    }
    if (best != nullptr) {
      lines.push_back(
          {"", best_name + (ours > 1 ? " (ours, the better here)" : " (ours)"), best->Figures()});
    }
    if (const Means* m = find(kOracle)) {
      lines.push_back({"", std::string(kOracle) + " (hindsight: the bound)", m->Figures()});
    }
    if (lines.size() > first) lines[first].gpu = gpu;
  }
  if (lines.empty()) return;
  size_t gpu_width = 0, label_width = 0;
  for (const Line& line : lines) {
    gpu_width = std::max(gpu_width, line.gpu.size());
    label_width = std::max(label_width, line.label.size());
  }
  out << Wrap(
      "Headline: energy, time and cost against `default` (the default batch size at the "
      "maximum power limit), mean of each GPU's workloads; negative = saved.",
      80, 0);
  for (const Line& line : lines) {
    out << "  " << line.gpu << std::string(gpu_width - line.gpu.size(), ' ') << "  " << line.label
        << std::string(label_width - line.label.size(), ' ') << "  " << line.figures << "\n";
  }
}

void WriteResultsTable(const std::vector<PolicyResult>& results, size_t num_seeds,
                       std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line), "%-8s %-14s %-17s %5s %9s %9s %9s %9s  %s\n", "gpu", "workload",
                "policy", "recs", "energy", "time", "cost", "regret", "settles on");
  out << line;
  std::string previous;
  for (const PolicyResult& r : results) {
    const std::string key = r.gpu + "/" + r.dataset;
    if (!previous.empty() && key != previous) out << "\n";
    previous = key;
    std::snprintf(line, sizeof(line), "%-8s %-14s %-17s %5d %9.3f %9.3f %9.3f %8.1f%%  %d @ %d W\n",
                  r.gpu.c_str(), r.dataset.c_str(), r.policy.c_str(), r.num_recurrences,
                  r.energy_ratio, r.time_ratio, r.cost_ratio, 100.0 * r.regret, r.final_batch_size,
                  r.final_power_limit_w);
    out << line;
  }
  out << "\nenergy, time, cost: cumulative, relative to `default` (default batch size at the\n"
         "maximum power limit); regret: extra cost over always running the best\n"
         "configuration (the `oracle` policy, same seeds: 0 for itself); means over "
      << num_seeds << " seed(s).\n";
}

void WriteComparisonTable(const std::vector<PolicyResult>& results, std::ostream& out) {
  struct Row {
    std::string policy;
    int cases = 0;
    double regret_sum = 0.0;
    double regret_max = 0.0;
    double ratio_max = 0.0;
    std::string ratio_max_case;
    int worse_than_default = 0;
  };
  std::vector<Row> rows;
  for (const PolicyResult& r : results) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&r](const Row& row) { return row.policy == r.policy; });
    if (it == rows.end()) {
      Row row;
      row.policy = r.policy;
      rows.push_back(row);
      it = rows.end() - 1;
    }
    const double regret = 100.0 * r.expected_regret;
    it->regret_max = it->cases == 0 ? regret : std::max(it->regret_max, regret);
    if (it->cases == 0 || r.cost_ratio > it->ratio_max) {
      it->ratio_max = r.cost_ratio;
      it->ratio_max_case = r.gpu + "/" + r.dataset;
    }
    it->regret_sum += regret;
    it->worse_than_default += r.cost_ratio > 1.0 ? 1 : 0;
    ++it->cases;
  }
  char line[512];
  std::snprintf(line, sizeof(line), "%-17s %5s %12s %11s %10s %8s  %s\n", "policy", "cases",
                "mean regret", "max regret", "max cost", "> dflt", "max cost in");
  out << line;
  for (const Row& row : rows) {
    // The references against themselves: the oracle's regret is 0 by
    // definition, and `default` cannot cost more than `default`; what the
    // simulation measures there is the traces' noise (noted below).
    const bool oracle = row.policy == kOracle;
    const std::string worse = row.policy == kDefault ? "-" : std::to_string(row.worse_than_default);
    std::snprintf(line, sizeof(line), "%-17s %5d %11.2f%% %10.2f%% %10.3f %8s  %s\n",
                  row.policy.c_str(), row.cases, oracle ? 0.0 : row.regret_sum / row.cases,
                  oracle ? 0.0 : row.regret_max, row.ratio_max, worse.c_str(),
                  row.ratio_max_case.c_str());
    out << line;
  }
  out << "\nregret: expected regret (cumulative cost over recurrences x the oracle\n"
         "configuration's expected cost, minus 1); max cost: the largest cumulative cost\n"
         "relative to `default` over the workloads; > dflt: workloads costing more than\n"
         "`default`.\n";
  WriteReferenceNoise(results, out);
}

void WriteSubmissionTable(const std::vector<PolicyResult>& results, std::ostream& out) {
  std::vector<std::pair<std::string, SubmissionTally>> rows;
  for (const PolicyResult& r : results) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&r](const auto& row) { return row.first == r.policy; });
    if (it == rows.end()) {
      rows.emplace_back(r.policy, SubmissionTally());
      it = rows.end() - 1;
    }
    it->second.Merge(r.submissions);
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-17s %11s %9s %10s\n", "policy", "submissions", "abandoned",
                "most tries");
  out << line;
  for (const auto& [policy, tally] : rows) {
    std::snprintf(line, sizeof(line), "%-17s %11d %9d %10d\n", policy.c_str(), tally.submissions,
                  tally.abandoned, tally.most_tries);
    out << line;
  }
  out << "\nabandoned: submissions (recurrences) that neither reached the target nor had a\n"
         "try allowed to finish under the ordinary beta bound (must be 0); most tries: the\n"
         "most runs any one submission took, stopped ones included.\n";
}

namespace {

nlohmann::json ExpectedToJson(const ExpectedRun& run) {
  return {{"batch_size", run.batch_size},
          {"power_limit_w", run.power_limit_w},
          {"energy_j", run.energy_j},
          {"time_s", run.time_s},
          {"cost", run.cost}};
}

}  // namespace

nlohmann::json ResultToJson(const PolicyResult& r) {
  return {{"gpu", r.gpu},
          {"dataset", r.dataset},
          {"policy", r.policy},
          {"recurrences", r.num_recurrences},
          {"seeds", r.num_seeds},
          {"energy_j", r.energy_j},
          {"time_s", r.time_s},
          {"cost", r.cost},
          {"energy_ratio", r.energy_ratio},
          {"time_ratio", r.time_ratio},
          {"cost_ratio", r.cost_ratio},
          {"cost_ratio_min", r.cost_ratio_min},
          {"cost_ratio_max", r.cost_ratio_max},
          {"regret", r.regret},
          {"expected_regret", r.expected_regret},
          {"final_batch_size", r.final_batch_size},
          {"final_power_limit_w", r.final_power_limit_w},
          {"default", ExpectedToJson(r.default_run)},
          {"oracle", ExpectedToJson(r.oracle_run)},
          {"submissions",
           {{"total", r.submissions.submissions},
            {"abandoned", r.submissions.abandoned},
            {"most_tries", r.submissions.most_tries}}}};
}

void WriteHistoryCsvHeader(std::ostream& out) {
  out << "gpu,dataset,seed,recurrence,batch_size,power_limit,energy_j,time_s,reached,policy,"
         "cost,kind,group,try,start_s,end_s,stopped_early,ran_on,restarted\n";
}

void WriteHistoryCsvRow(const HistoryRow& h, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line), "%s,%s,%llu,%d,%d,%d,%.10g,%.10g,%s,%s,%.10g,", h.gpu->c_str(),
                h.dataset->c_str(), static_cast<unsigned long long>(h.seed), h.run.recurrence,
                h.run.batch_size, h.run.power_limit_w, h.run.energy_j, h.run.time_s,
                h.run.reached ? "true" : "false", h.policy->c_str(), h.run.cost);
  out << line << h.run.kind;
  const char* ran_on = h.run.ran_on ? "true" : "false";
  if (h.group == nullptr || h.group_run == nullptr) {
    out << ",,,,,," << ran_on << ",\n";
    return;
  }
  const GroupRunRecord& g = *h.group_run;
  std::snprintf(line, sizeof(line), ",%d,%.10g,%.10g,%s,%s,%s\n", g.attempt, g.start_time_s,
                g.end_time_s, g.stopped_early ? "true" : "false", ran_on,
                g.restarted ? "true" : "false");
  out << ',' << CsvQuote(*h.group) << line;
}

uint64_t EstimateHistoryCsvBytes(const std::vector<Workload>& workloads, const JobGroups* groups,
                                 const ExperimentOptions& options) {
  uint64_t policy_chars = 0;
  for (const std::string& policy : options.policies) policy_chars += policy.size();
  uint64_t seed_chars = 0;
  for (uint64_t seed : options.seeds) seed_chars += std::to_string(seed).size();
  // Typical on the NSDI'23 traces: 10 commas, a newline, recurrence, batch
  // size and power limit, "true"/"false", and three %.10g numbers.
  constexpr uint64_t kFixedRowChars = 50;
  // The columns after cost: eight commas, a trial kind (empty for the
  // non-bandit policies) and ran_on; for a group run also its try, start,
  // end, stopped_early and restarted.
  constexpr uint64_t kSoloTailChars = 18;
  constexpr uint64_t kGroupTailChars = 48;
  const uint64_t runs = options.policies.size() * options.seeds.size();
  uint64_t total = 0;
  for (const Workload& w : workloads) {
    uint64_t rows_per_run = 0;
    // A group row adds its group's name: summed over the rows here.
    uint64_t group_name_chars = 0;
    if (groups == nullptr) {
      rows_per_run = static_cast<uint64_t>(options.simulation.RecurrencesOf(w));
    } else {
      for (const auto* submissions : GroupsRunning(*groups, w.job.dataset)) {
        rows_per_run += submissions->size();
        group_name_chars += submissions->size() * submissions->front().group.size();
      }
    }
    const uint64_t row_chars = kFixedRowChars +
                               (groups == nullptr ? kSoloTailChars : kGroupTailChars) +
                               w.gpu.size() + w.job.dataset.size();
    total += rows_per_run * (runs * row_chars + options.seeds.size() * policy_chars +
                             options.policies.size() * seed_chars) +
             runs * group_name_chars;
  }
  return total;
}

void RunEvidence::Add(const HistoryRow& row) {
  Tally& t = tallies_[{*row.gpu, *row.dataset, *row.policy}];
  t.seeds.insert(row.seed);
  ++t.runs;
  t.cost += row.run.cost;
  if (!row.run.reached) {
    ++t.missed;
    t.missed_cost += row.run.cost;
  }
  if (t.runs == 1 || row.run.cost > t.costliest_cost) {
    t.costliest_cost = row.run.cost;
    t.costliest_batch_size = row.run.batch_size;
    t.costliest_power_limit_w = row.run.power_limit_w;
    t.costliest_reached = row.run.reached;
  }
}

const RunEvidence::Tally* RunEvidence::Find(const std::string& gpu, const std::string& dataset,
                                            const std::string& policy) const {
  auto it = tallies_.find({gpu, dataset, policy});
  return it == tallies_.end() ? nullptr : &it->second;
}

void WriteOutlierNotes(const std::vector<PolicyResult>& results, const RunEvidence& evidence,
                       std::ostream& out) {
  std::vector<const PolicyResult*> outliers;
  for (const PolicyResult& r : results) {
    if (r.cost_ratio > kOutlierCostRatio) outliers.push_back(&r);
  }
  if (outliers.empty()) return;
  std::stable_sort(
      outliers.begin(), outliers.end(),
      [](const PolicyResult* a, const PolicyResult* b) { return a->cost_ratio > b->cost_ratio; });
  out << "\nOutliers (cost above " << Number(kOutlierCostRatio, 0) << "x `default`):\n\n";
  for (size_t i = 0; i < outliers.size() && i < kMaxOutlierNotes; ++i) {
    const PolicyResult& r = *outliers[i];
    std::string note = "- " + r.policy + " on " + r.gpu + "/" + r.dataset + " costs " +
                       Number(r.cost_ratio, 1) + "x `default` (regret " +
                       Number(100.0 * r.regret, 1) + " %).";
    const RunEvidence::Tally* t = evidence.Find(r.gpu, r.dataset, r.policy);
    if (t != nullptr && t->cost > 0.0 && !t->seeds.empty() && r.oracle_run.cost > 0.0) {
      const double seeds = static_cast<double>(t->seeds.size());
      note += " Per seed, " + Number(t->missed / seeds, 0) + " of its " +
              Number(t->runs / seeds, 0) + " runs did not reach the target, " +
              Number(100.0 * t->missed_cost / t->cost, 1) + " % of its cost; its costliest run, " +
              "batch size " + std::to_string(t->costliest_batch_size) + " at " +
              std::to_string(t->costliest_power_limit_w) + " W, " +
              (t->costliest_reached ? "reached the target and " : "") + "cost " +
              Number(t->costliest_cost / r.oracle_run.cost, 0) +
              "x the oracle's expected run. A run that cannot reach the target costs all it "
              "spends until an early-stop bound (beta) stops it or it runs out of epochs.";
    }
    out << Wrap(note, 80, 2);
  }
  if (outliers.size() > kMaxOutlierNotes) {
    out << "- and " << outliers.size() - kMaxOutlierNotes << " more above "
        << Number(kOutlierCostRatio, 0) << "x `default`.\n";
  }
}

}  // namespace zeus
