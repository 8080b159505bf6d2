#include "tools/simulate_plots.h"

#include <filesystem>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "zeus/sim/simulator.h"

namespace zeus::cli {
namespace {

// Letters, digits, '.', '-' and '_' kept; anything else becomes '_'.
std::string FileNamePart(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
    out += keep ? c : '_';
  }
  return out;
}

const Workload* FindWorkload(const std::vector<Workload>& workloads, const std::string& gpu,
                             const std::string& dataset) {
  for (const Workload& w : workloads) {
    if (w.gpu == gpu && w.job.dataset == dataset) return &w;
  }
  return nullptr;
}

}  // namespace

void SimulationPlots::Add(const HistoryRow& row) {
  const Key key{*row.gpu, *row.dataset, *row.policy};
  costs_[key][{row.seed, row.run.recurrence}] += row.run.cost;
  if (row.seed == path_seed_) {
    paths_[key][row.run.recurrence] = {row.run.batch_size, row.run.power_limit_w};
  }
}

std::vector<std::pair<PlotFigure, std::string>> SimulationPlots::Figures(
    const std::string& dir, const std::vector<Workload>& workloads) const {
  std::vector<std::pair<PlotFigure, std::string>> figures;
  // Cumulative cost: one figure per workload, one series per policy.
  std::map<std::pair<std::string, std::string>, PlotFigure> cost_figures;
  for (const auto& [key, costs] : costs_) {
    const auto& [gpu, dataset, policy] = key;
    std::set<uint64_t> seeds;
    std::set<int> recurrences;
    for (const auto& [seed_recurrence, cost] : costs) {
      seeds.insert(seed_recurrence.first);
      recurrences.insert(seed_recurrence.second);
    }
    PlotFigure& figure = cost_figures[{gpu, dataset}];
    if (figure.title.empty()) {
      figure.title = fmt::format("Cumulative cost: {} on {} (mean of {} seed{}, eta {})", dataset,
                                 gpu, seeds.size(), seeds.size() == 1 ? "" : "s", simulation_.eta);
      figure.x_label = "recurrence";
      figure.y_label = "cumulative cost";
    }
    PlotSeries series{policy, {}, PlotStyle::kLines, false};
    std::map<uint64_t, double> cumulative;  // Per seed.
    for (int recurrence : recurrences) {
      double sum = 0.0;
      for (uint64_t seed : seeds) {
        auto it = costs.find({seed, recurrence});
        cumulative[seed] += it == costs.end() ? 0.0 : it->second;
        sum += cumulative[seed];
      }
      series.points.emplace_back(recurrence + 1, sum / static_cast<double>(seeds.size()));
    }
    figure.series.push_back(std::move(series));
  }
  for (auto& [workload, figure] : cost_figures) {
    figures.emplace_back(std::move(figure), dir + "/cost_" + FileNamePart(workload.first) + "_" +
                                                FileNamePart(workload.second) + ".svg");
  }

  // The energy-time plane: one figure per workload and policy.
  for (const auto& [key, path] : paths_) {
    const auto& [gpu, dataset, policy] = key;
    const Workload* workload = FindWorkload(workloads, gpu, dataset);
    if (workload == nullptr) continue;
    const JobContext job = simulation_.ContextFor(*workload);
    PlotFigure figure;
    figure.title = fmt::format("Energy-time plane: {} on {}, path of {} (seed {})", dataset, gpu,
                               policy, path_seed_);
    figure.x_label = "expected time to target (s)";
    figure.y_label = "expected energy to target (J)";
    figure.log_x = true;
    figure.log_y = true;
    for (const BatchSizeTrace& trace : workload->batch_sizes) {
      PlotSeries configurations{
          fmt::format("batch size {}", trace.batch_size), {}, PlotStyle::kPoints, false};
      for (const PowerPoint& point : trace.power) {
        std::optional<ExpectedRun> run = Expected(job, trace.batch_size, point.power_limit_w);
        if (run.has_value()) configurations.points.emplace_back(run->time_s, run->energy_j);
      }
      figure.series.push_back(std::move(configurations));
    }
    PlotSeries taken{fmt::format("{}'s path", policy), {}, PlotStyle::kLinesPoints, false, 1.5};
    for (const auto& [recurrence, configuration] : path) {
      std::optional<ExpectedRun> run = Expected(job, configuration.first, configuration.second);
      if (run.has_value()) taken.points.emplace_back(run->time_s, run->energy_j);
    }
    figure.series.push_back(std::move(taken));
    if (StatusOr<ExpectedRun> run = DefaultRun(job); run.ok()) {
      figure.series.push_back(
          {fmt::format("default ({}, {} W)", run->batch_size, run->power_limit_w),
           {{run->time_s, run->energy_j}},
           PlotStyle::kPoints,
           false,
           2.0});
    }
    if (StatusOr<ExpectedRun> run = OracleRun(job); run.ok()) {
      figure.series.push_back(
          {fmt::format("oracle ({}, {} W)", run->batch_size, run->power_limit_w),
           {{run->time_s, run->energy_j}},
           PlotStyle::kPoints,
           false,
           2.0});
    }
    figures.emplace_back(std::move(figure), dir + "/energy_time_" + FileNamePart(gpu) + "_" +
                                                FileNamePart(dataset) + "_" + FileNamePart(policy) +
                                                ".svg");
  }
  return figures;
}

StatusOr<std::vector<std::string>> SimulationPlots::Write(const std::string& dir,
                                                          const std::vector<Workload>& workloads,
                                                          const PlotOptions& options) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("cannot create directory '" + dir + "': " + ec.message());
  std::vector<std::pair<PlotFigure, std::string>> figures = Figures(dir, workloads);
  ZEUS_RETURN_IF_ERROR(RenderSvgFigures(figures, options));
  std::vector<std::string> paths;
  for (const auto& figure : figures) paths.push_back(figure.second);
  return paths;
}

}  // namespace zeus::cli
