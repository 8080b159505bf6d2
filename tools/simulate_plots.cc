#include "tools/simulate_plots.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "zeus/sim/policy.h"
#include "zeus/sim/simulator.h"
#include "zeus/util/file.h"
#include "zeus/util/strings.h"

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

std::string CostFileName(const std::string& gpu, const std::string& dataset) {
  return "cost_" + FileNamePart(gpu) + "_" + FileNamePart(dataset) + ".svg";
}

std::string PlaneFileName(const std::string& gpu, const std::string& dataset,
                          const std::string& policy) {
  return "energy_time_" + FileNamePart(gpu) + "_" + FileNamePart(dataset) + "_" +
         FileNamePart(policy) + ".svg";
}

const Workload* FindWorkload(const std::vector<Workload>& workloads, const std::string& gpu,
                             const std::string& dataset) {
  for (const Workload& w : workloads) {
    if (w.gpu == gpu && w.job.dataset == dataset) return &w;
  }
  return nullptr;
}

}  // namespace

std::string PolicyColor(const std::string& policy) {
  // Distinct hues for the ten policies; the references in black and green.
  static const std::pair<const char*, const char*> kColors[] = {
      {"zeus", "#1f77b4"},
      {"frugal", "#d62728"},
      {"swarm", "#ff7f0e"},
      {"default", "#000000"},
      {"oracle", "#2ca02c"},
      {"walk-floor", "#9467bd"},
      {"jump-floor", "#8c564b"},
      {"grid-search", "#e377c2"},
      {"power-limit-only", "#7f7f7f"},
      {"batch-size-only", "#bcbd22"},
  };
  static const char* kOthers[] = {"#17becf", "#393b79", "#637939", "#8c6d31", "#843c39"};
  for (const auto& [name, color] : kColors) {
    if (policy == name) return color;
  }
  size_t hash = 0;
  for (char c : policy) hash = hash * 31 + static_cast<unsigned char>(c);
  return kOthers[hash % (sizeof(kOthers) / sizeof(kOthers[0]))];
}

CostScale ChooseCostScale(const std::vector<std::vector<std::pair<double, double>>>& curves) {
  CostScale scale;
  scale.off_scale.assign(curves.size(), false);
  std::vector<double> highest;
  for (const auto& curve : curves) {
    double h = 0.0;
    for (const auto& point : curve) h = std::max(h, point.second);
    highest.push_back(h);
  }
  if (curves.empty()) return scale;
  std::vector<double> sorted = highest;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 == 1
                            ? sorted[sorted.size() / 2]
                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2.0;
  double low = 0.0, high = 0.0;
  bool any = false;
  for (size_t i = 0; i < curves.size(); ++i) {
    if (curves.size() > 1 && highest[i] > kOffScaleFactor * median) {
      scale.off_scale[i] = true;
      continue;
    }
    for (const auto& point : curves[i]) {
      low = any ? std::min(low, point.second) : point.second;
      high = any ? std::max(high, point.second) : point.second;
      any = true;
    }
  }
  if (!any) return scale;
  // A margin of 5 % of the span (at least 0.05) on each side; 1, the
  // default's level, always in view.
  low = std::min(low, 1.0);
  high = std::max(high, 1.0);
  const double margin = std::max(0.05, 0.05 * (high - low));
  scale.y_min = std::max(0.0, low - margin);
  scale.y_max = high + margin;
  return scale;
}

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
  // Cumulative cost relative to the default's: one figure per workload, one
  // series per policy, in PolicyNames() order.
  struct Curve {
    size_t order;
    std::string policy;
    std::vector<std::pair<double, double>> points;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Curve>> curves;
  std::map<std::pair<std::string, std::string>, size_t> num_seeds;
  const std::vector<std::string> names = PolicyNames();
  for (const auto& [key, costs] : costs_) {
    const auto& [gpu, dataset, policy] = key;
    const Workload* workload = FindWorkload(workloads, gpu, dataset);
    if (workload == nullptr) continue;
    StatusOr<ExpectedRun> default_run = DefaultRun(simulation_.ContextFor(*workload));
    if (!default_run.ok() || !(default_run->cost > 0.0)) continue;
    std::set<uint64_t> seeds;
    std::set<int> recurrences;
    for (const auto& [seed_recurrence, cost] : costs) {
      seeds.insert(seed_recurrence.first);
      recurrences.insert(seed_recurrence.second);
    }
    num_seeds[{gpu, dataset}] = seeds.size();
    Curve curve{static_cast<size_t>(std::find(names.begin(), names.end(), policy) - names.begin()),
                policy,
                {}};
    std::map<uint64_t, double> cumulative;  // Per seed.
    int count = 0;
    for (int recurrence : recurrences) {
      double sum = 0.0;
      for (uint64_t seed : seeds) {
        auto it = costs.find({seed, recurrence});
        cumulative[seed] += it == costs.end() ? 0.0 : it->second;
        sum += cumulative[seed];
      }
      ++count;
      curve.points.emplace_back(
          recurrence + 1, sum / static_cast<double>(seeds.size()) / (count * default_run->cost));
    }
    curves[{gpu, dataset}].push_back(std::move(curve));
  }
  for (auto& [workload, list] : curves) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Curve& a, const Curve& b) { return a.order < b.order; });
    const size_t seeds = num_seeds[workload];
    PlotFigure figure;
    figure.title =
        fmt::format("Cumulative cost relative to default: {} on {} (mean of {} seed{}, eta {})",
                    workload.second, workload.first, seeds, seeds == 1 ? "" : "s", simulation_.eta);
    figure.x_label = "recurrence";
    figure.y_label = "cumulative cost / default's expected cost (1 = default)";
    figure.legend_below = true;
    std::vector<std::vector<std::pair<double, double>>> points;
    for (const Curve& curve : list) points.push_back(curve.points);
    const CostScale scale = ChooseCostScale(points);
    figure.y_min = scale.y_min;
    figure.y_max = scale.y_max;
    for (size_t i = 0; i < list.size(); ++i) {
      const Curve& curve = list[i];
      PlotSeries series{curve.policy, curve.points, PlotStyle::kLines, false,
                        curve.policy == "default" ? 1.5 : 1.0};
      series.color = PolicyColor(curve.policy);
      series.dashed = curve.policy == "default" || curve.policy == "oracle";
      if (scale.off_scale[i]) {
        double highest = 0.0;
        for (const auto& point : curve.points) highest = std::max(highest, point.second);
        auto times = [](double ratio) {
          return ratio >= 100.0 ? fmt::format("{:.0f}x", ratio) : fmt::format("{:.2f}x", ratio);
        };
        series.title += " (off scale)";
        figure.title += "\noff scale: " + curve.policy + ", up to " + times(highest) + ", " +
                        times(curve.points.back().second) + " at the end";
      }
      figure.series.push_back(std::move(series));
    }
    figures.emplace_back(std::move(figure),
                         dir + "/" + CostFileName(workload.first, workload.second));
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
    figures.emplace_back(std::move(figure), dir + "/" + PlaneFileName(gpu, dataset, policy));
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
  std::set<std::string> written;
  for (const auto& figure : figures) {
    paths.push_back(figure.second);
    written.insert(figure.second);
  }
  const std::string index = dir + "/index.html";
  Status status = WriteFileAtomically(index, IndexHtml(dir, written));
  if (!status.ok()) {
    return Status(status.code(), "cannot write " + index + ": " + status.message());
  }
  paths.push_back(index);
  return paths;
}

std::string SimulationPlots::IndexHtml(const std::string& dir,
                                       const std::set<std::string>& written) const {
  // Workloads in the order of the figures' keys; planes per workload in
  // PolicyNames() order.
  const std::vector<std::string> names = PolicyNames();
  std::vector<std::pair<std::string, std::string>> workloads;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> planes;
  for (const auto& [key, costs] : costs_) {
    const auto& [gpu, dataset, policy] = key;
    if (workloads.empty() || workloads.back() != std::make_pair(gpu, dataset)) {
      workloads.emplace_back(gpu, dataset);
    }
    if (written.count(dir + "/" + PlaneFileName(gpu, dataset, policy)) > 0) {
      planes[{gpu, dataset}].push_back(policy);
    }
  }
  for (auto& [workload, policies] : planes) {
    std::stable_sort(policies.begin(), policies.end(),
                     [&names](const std::string& a, const std::string& b) {
                       return std::find(names.begin(), names.end(), a) <
                              std::find(names.begin(), names.end(), b);
                     });
  }
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>zeus simulate: figures</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 1em 2em; max-width: 960px; }\n"
      "img { max-width: 100%; border: 1px solid #ddd; }\n"
      ".swatch { display: inline-block; width: 1.6em; height: 0.35em; margin-right: 0.3em; "
      "vertical-align: middle; }\n"
      "</style>\n</head>\n<body>\n<h1>zeus simulate: figures</h1>\n";
  html += fmt::format(
      "<p>eta {}. For each workload: the cumulative cost of each policy relative to the default "
      "configuration's expected cost (the default batch size at the maximum power limit): 1 is "
      "the default's cost, 0.6 saves 40 %. A policy far above the others is drawn off the top "
      "of the figure; the figure's title gives its values. Below each, the path each policy "
      "took in the energy-time plane (seed {}).</p>\n",
      simulation_.eta, path_seed_);
  html += "<p>Policies:";
  std::set<std::string> policies;
  for (const auto& [key, costs] : costs_) policies.insert(std::get<2>(key));
  for (const std::string& name : names) {
    if (policies.count(name) == 0) continue;
    html += fmt::format(" <span class=\"swatch\" style=\"background: {}\"></span>{}",
                        PolicyColor(name), HtmlEscape(name));
  }
  html += "</p>\n<ul>\n";
  for (const auto& [gpu, dataset] : workloads) {
    html += fmt::format("<li><a href=\"#{}_{}\">{} on {}</a></li>\n", FileNamePart(gpu),
                        FileNamePart(dataset), HtmlEscape(dataset), HtmlEscape(gpu));
  }
  html += "</ul>\n";
  for (const auto& [gpu, dataset] : workloads) {
    html += fmt::format("<h2 id=\"{}_{}\">{} on {}</h2>\n", FileNamePart(gpu),
                        FileNamePart(dataset), HtmlEscape(dataset), HtmlEscape(gpu));
    const std::string cost = CostFileName(gpu, dataset);
    if (written.count(dir + "/" + cost) > 0) {
      html += fmt::format(
          "<p><img src=\"{}\" alt=\"cumulative cost relative to default, {} on "
          "{}\"></p>\n",
          cost, HtmlEscape(dataset), HtmlEscape(gpu));
    }
    auto it = planes.find({gpu, dataset});
    if (it != planes.end()) {
      html += "<p>Energy-time plane, the path of:";
      for (const std::string& policy : it->second) {
        html += fmt::format(" <a href=\"{}\">{}</a>", PlaneFileName(gpu, dataset, policy),
                            HtmlEscape(policy));
      }
      html += "</p>\n";
    }
  }
  return html + "</body>\n</html>\n";
}

}  // namespace zeus::cli
