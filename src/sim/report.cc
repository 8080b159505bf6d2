#include "zeus/sim/report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "zeus/util/csv.h"

namespace zeus {

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
    std::snprintf(line, sizeof(line), "%-17s %5d %11.2f%% %10.2f%% %10.3f %8d  %s\n",
                  row.policy.c_str(), row.cases, row.regret_sum / row.cases, row.regret_max,
                  row.ratio_max, row.worse_than_default, row.ratio_max_case.c_str());
    out << line;
  }
  out << "\nregret: expected regret (cumulative cost over recurrences x the oracle\n"
         "configuration's expected cost, minus 1); max cost: the largest cumulative cost\n"
         "relative to `default` over the workloads; > dflt: workloads costing more than\n"
         "`default`.\n";
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

}  // namespace zeus
