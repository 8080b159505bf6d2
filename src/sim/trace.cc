#include "zeus/sim/trace.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <sys/stat.h>

#include "zeus/core/cost.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/util/csv.h"
#include "zeus/util/strings.h"

#include "src/sim/milestones.h"

namespace zeus {

StatusOr<CsvTable> ReadTraceFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
      static_cast<uint64_t>(info.st_size) > kMaxTraceFileBytes) {
    return InvalidArgumentError(
        path + ": " + std::to_string(static_cast<uint64_t>(info.st_size)) +
        " bytes, larger than the " + std::to_string(kMaxTraceFileBytes >> 20) +
        " MiB a trace file may be (the simulator holds about 8 times a file in memory; the "
        "published traces are under 1 MB): nothing read");
  }
  return CsvTable::ReadFile(path);
}

namespace {

// Column indices of `names` in `table`, or the first missing one's error.
StatusOr<std::vector<size_t>> Columns(const CsvTable& table, std::vector<std::string> names) {
  std::vector<size_t> indices;
  for (const std::string& name : names) {
    ZEUS_ASSIGN_OR_RETURN(size_t index, table.ColumnIndex(name));
    indices.push_back(index);
  }
  return indices;
}

// A non-empty text field.
StatusOr<std::string> Text(const CsvTable& table, size_t row, size_t column) {
  const std::string& value = table.Field(row, column);
  if (value.empty()) return table.ErrorAt(row, column, "expected a non-empty value");
  return value;
}

// A %g rendering of `value` for range messages ("1e-06", "1e+09", "100000").
std::string Num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

// An integer in [min, max]; `unit` (e.g. " W") follows the range in errors.
StatusOr<int> IntInRange(const CsvTable& table, size_t row, size_t column, int min, int max,
                         std::string_view unit = "") {
  ZEUS_ASSIGN_OR_RETURN(int64_t value, table.Int(row, column));
  if (value < min || value > max) {
    return table.ErrorAt(row, column,
                         "expected an integer in [" + std::to_string(min) + ", " +
                             std::to_string(max) + "]" + std::string(unit) + ", got '" +
                             table.Field(row, column) + "'");
  }
  return static_cast<int>(value);
}

StatusOr<int> PositiveInt(const CsvTable& table, size_t row, size_t column) {
  return IntInRange(table, row, column, 1, kMaxTraceInteger);
}

// A number in [min, max] (NaN and infinities refused).
StatusOr<double> DoubleInRange(const CsvTable& table, size_t row, size_t column, double min,
                               double max, std::string_view unit = "") {
  ZEUS_ASSIGN_OR_RETURN(double value, table.Double(row, column));
  if (!(value >= min && value <= max)) {
    return table.ErrorAt(row, column,
                         "expected a number in [" + Num(min) + ", " + Num(max) + "]" +
                             std::string(unit) + ", got '" + table.Field(row, column) + "'");
  }
  return value;
}

StatusOr<double> FiniteDouble(const CsvTable& table, size_t row, size_t column) {
  ZEUS_ASSIGN_OR_RETURN(double value, table.Double(row, column));
  if (!std::isfinite(value)) {
    return table.ErrorAt(row, column,
                         "expected a finite number, got '" + table.Field(row, column) + "'");
  }
  return value;
}

// "gpu job dataset/network/optimizer" for ValidateWorkload's errors.
std::string Name(const Workload& w) {
  return "workload " + w.gpu + " " + w.job.dataset + "/" + w.job.network + "/" + w.job.optimizer;
}

// "what must be in [min, max], got value" when `value` is outside.
Status InRange(const std::string& context, const char* what, double value, double min, double max) {
  if (value >= min && value <= max) return Status::Ok();
  return InvalidArgumentError(context + ": " + what + " must be in [" + Num(min) + ", " + Num(max) +
                              "], got " + Num(value));
}

using WorkloadKey = std::tuple<std::string, std::string, std::string>;

}  // namespace

std::vector<const PowerPoint*> BatchSizeTrace::ProfiledPoints(
    std::optional<double> nonbinding_margin) const {
  const double draw_w = power.back().average_power_w;
  std::vector<const PowerPoint*> points;
  for (const PowerPoint& point : power) {
    if (!nonbinding_margin.has_value() || &point == &power.back() ||
        PowerLimitCanBind(point.power_limit_w, draw_w, *nonbinding_margin)) {
      points.push_back(&point);
    }
  }
  return points;
}

const PowerPoint* BatchSizeTrace::At(int power_limit_w) const {
  for (const PowerPoint& point : power) {
    if (point.power_limit_w == power_limit_w) return &point;
  }
  return nullptr;
}

const BatchSizeTrace* Workload::Find(int batch_size) const {
  for (const BatchSizeTrace& trace : batch_sizes) {
    if (trace.batch_size == batch_size) return &trace;
  }
  return nullptr;
}

std::vector<int> Workload::BatchSizeList() const {
  std::vector<int> list;
  for (const BatchSizeTrace& trace : batch_sizes) list.push_back(trace.batch_size);
  return list;
}

StatusOr<std::vector<JobSpec>> LoadJobs(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, ReadTraceFile(path));
  ZEUS_ASSIGN_OR_RETURN(std::vector<size_t> c,
                        Columns(table, {"dataset", "network", "optimizer", "target_metric",
                                        "max_epochs", "default_batch_size"}));
  std::vector<JobSpec> jobs;
  std::set<WorkloadKey> seen;
  for (size_t row = 0; row < table.num_rows(); ++row) {
    JobSpec job;
    ZEUS_ASSIGN_OR_RETURN(job.dataset, Text(table, row, c[0]));
    ZEUS_ASSIGN_OR_RETURN(job.network, Text(table, row, c[1]));
    ZEUS_ASSIGN_OR_RETURN(job.optimizer, Text(table, row, c[2]));
    ZEUS_ASSIGN_OR_RETURN(job.target_metric, FiniteDouble(table, row, c[3]));
    ZEUS_ASSIGN_OR_RETURN(job.max_epochs, PositiveInt(table, row, c[4]));
    ZEUS_ASSIGN_OR_RETURN(job.default_batch_size, PositiveInt(table, row, c[5]));
    if (!seen.insert({job.dataset, job.network, job.optimizer}).second) {
      return table.ErrorAt(
          row, c[0], "duplicate job " + job.dataset + "/" + job.network + "/" + job.optimizer);
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return InvalidArgumentError(path + ": no jobs");
  return jobs;
}

StatusOr<std::vector<TrainRow>> LoadTrainTrace(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, ReadTraceFile(path));
  ZEUS_ASSIGN_OR_RETURN(std::vector<size_t> c,
                        Columns(table, {"dataset", "network", "batch_size", "optimizer", "run",
                                        "target_metric", "target_epoch"}));
  std::vector<TrainRow> rows;
  rows.reserve(table.num_rows());
  for (size_t row = 0; row < table.num_rows(); ++row) {
    TrainRow r;
    ZEUS_ASSIGN_OR_RETURN(r.dataset, Text(table, row, c[0]));
    ZEUS_ASSIGN_OR_RETURN(r.network, Text(table, row, c[1]));
    ZEUS_ASSIGN_OR_RETURN(r.batch_size, PositiveInt(table, row, c[2]));
    ZEUS_ASSIGN_OR_RETURN(r.optimizer, Text(table, row, c[3]));
    ZEUS_ASSIGN_OR_RETURN(r.run, IntInRange(table, row, c[4], 0, kMaxTraceInteger));
    ZEUS_ASSIGN_OR_RETURN(r.target_metric, FiniteDouble(table, row, c[5]));
    const std::string& epoch = table.Field(row, c[6]);
    if (!epoch.empty() && ToLower(epoch) != "nan") {
      ZEUS_ASSIGN_OR_RETURN(r.target_epoch, DoubleInRange(table, row, c[6], 1.0, kMaxTraceInteger));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

StatusOr<std::vector<PowerRow>> LoadPowerTrace(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(CsvTable table, ReadTraceFile(path));
  ZEUS_ASSIGN_OR_RETURN(std::vector<size_t> c,
                        Columns(table, {"dataset", "network", "batch_size", "optimizer",
                                        "power_limit", "time_per_epoch", "average_power"}));
  std::vector<PowerRow> rows;
  rows.reserve(table.num_rows());
  std::set<std::tuple<std::string, std::string, std::string, int, int>> seen;
  for (size_t row = 0; row < table.num_rows(); ++row) {
    PowerRow r;
    ZEUS_ASSIGN_OR_RETURN(r.dataset, Text(table, row, c[0]));
    ZEUS_ASSIGN_OR_RETURN(r.network, Text(table, row, c[1]));
    ZEUS_ASSIGN_OR_RETURN(r.batch_size, PositiveInt(table, row, c[2]));
    ZEUS_ASSIGN_OR_RETURN(r.optimizer, Text(table, row, c[3]));
    ZEUS_ASSIGN_OR_RETURN(r.power_limit_w,
                          IntInRange(table, row, c[4], 1, kMaxTracePowerLimitW, " W"));
    ZEUS_ASSIGN_OR_RETURN(
        r.time_per_epoch_s,
        DoubleInRange(table, row, c[5], kMinTraceTimePerEpochS, kMaxTraceTimePerEpochS, " s"));
    ZEUS_ASSIGN_OR_RETURN(r.average_power_w, DoubleInRange(table, row, c[6], kMinTraceAveragePowerW,
                                                           kMaxTraceAveragePowerW, " W"));
    if (!seen.insert({r.dataset, r.network, r.optimizer, r.batch_size, r.power_limit_w}).second) {
      return table.ErrorAt(row, c[4],
                           "duplicate row for batch size " + std::to_string(r.batch_size) +
                               " at power limit " + std::to_string(r.power_limit_w) + " W");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

Status ValidateWorkload(const Workload& w) {
  const std::string name = Name(w);
  ZEUS_RETURN_IF_ERROR(InRange(name, "max_epochs", w.job.max_epochs, 1, kMaxTraceInteger));
  ZEUS_RETURN_IF_ERROR(InRange(name, "max_power_w", w.max_power_w, 1, kMaxTracePowerLimitW));
  if (w.batch_sizes.empty()) return InvalidArgumentError(name + ": no batch sizes");
  if (w.Find(w.default_batch_size) == nullptr) {
    return InvalidArgumentError(name + ": default batch size " +
                                std::to_string(w.default_batch_size) + " is not a batch size");
  }
  for (size_t i = 0; i < w.power_limits_w.size(); ++i) {
    ZEUS_RETURN_IF_ERROR(
        InRange(name, "power limit (W)", w.power_limits_w[i], 1, kMaxTracePowerLimitW));
    if (i > 0 && w.power_limits_w[i - 1] >= w.power_limits_w[i]) {
      return InvalidArgumentError(name + ": power_limits_w must ascend, got " +
                                  std::to_string(w.power_limits_w[i - 1]) + " then " +
                                  std::to_string(w.power_limits_w[i]));
    }
  }
  for (size_t b = 0; b < w.batch_sizes.size(); ++b) {
    const BatchSizeTrace& trace = w.batch_sizes[b];
    const std::string size = name + ": batch size " + std::to_string(trace.batch_size);
    ZEUS_RETURN_IF_ERROR(InRange(size, "batch size", trace.batch_size, 1, kMaxTraceInteger));
    if (b > 0 && w.batch_sizes[b - 1].batch_size >= trace.batch_size) {
      return InvalidArgumentError(size + ": batch sizes must ascend");
    }
    if (trace.power.empty()) return InvalidArgumentError(size + ": no power points");
    if (trace.target_epochs.empty()) return InvalidArgumentError(size + ": no seed runs");
    for (size_t p = 0; p < trace.power.size(); ++p) {
      const PowerPoint& point = trace.power[p];
      const std::string at = size + " at " + std::to_string(point.power_limit_w) + " W";
      if (p > 0 && trace.power[p - 1].power_limit_w >= point.power_limit_w) {
        return InvalidArgumentError(at + ": power points must ascend by limit");
      }
      if (!std::binary_search(w.power_limits_w.begin(), w.power_limits_w.end(),
                              point.power_limit_w)) {
        return InvalidArgumentError(at + ": limit missing from power_limits_w");
      }
      ZEUS_RETURN_IF_ERROR(InRange(at, "time_per_epoch_s", point.time_per_epoch_s,
                                   kMinTraceTimePerEpochS, kMaxTraceTimePerEpochS));
      ZEUS_RETURN_IF_ERROR(InRange(at, "average_power_w", point.average_power_w,
                                   kMinTraceAveragePowerW, kMaxTraceAveragePowerW));
    }
    for (const std::optional<double>& epoch : trace.target_epochs) {
      if (!epoch.has_value()) continue;
      ZEUS_RETURN_IF_ERROR(InRange(size, "target epoch", *epoch, 1, kMaxTraceInteger));
    }
    ZEUS_RETURN_IF_ERROR(ValidateMilestoneEpochs(size, w.milestones.size(), trace));
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> FindTraceGpus(const std::string& dir) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return NotFoundError("trace directory '" + dir + "': cannot open");
  std::vector<std::string> gpus;
  while (dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    const std::string prefix = "summary_power_";
    const std::string suffix = ".csv";
    if (StartsWith(name, prefix) && EndsWith(name, suffix) &&
        name.size() > prefix.size() + suffix.size()) {
      gpus.push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
  }
  closedir(handle);
  std::sort(gpus.begin(), gpus.end());
  if (gpus.empty()) {
    return NotFoundError("trace directory '" + dir + "': no summary_power_<gpu>.csv file");
  }
  return gpus;
}

StatusOr<std::vector<Workload>> BuildWorkloads(const std::string& gpu,
                                               const std::vector<JobSpec>& jobs,
                                               const std::vector<TrainRow>& train,
                                               const std::vector<PowerRow>& power) {
  double max_limit_w = 0;
  for (const PowerRow& row : power) max_limit_w = std::max<double>(max_limit_w, row.power_limit_w);

  std::vector<Workload> workloads;
  for (const JobSpec& job : jobs) {
    const WorkloadKey key{job.dataset, job.network, job.optimizer};
    std::map<int, BatchSizeTrace> by_size;
    std::map<int, std::set<int>> runs_seen;
    std::map<int, std::vector<int>> run_ids;  // By batch size, in target_epochs' order.
    int largest_power_size = 0;
    for (const PowerRow& row : power) {
      if (WorkloadKey{row.dataset, row.network, row.optimizer} != key) continue;
      BatchSizeTrace& trace = by_size[row.batch_size];
      trace.batch_size = row.batch_size;
      trace.power.push_back({row.power_limit_w, row.time_per_epoch_s, row.average_power_w});
      largest_power_size = std::max(largest_power_size, row.batch_size);
    }
    if (by_size.empty()) continue;  // This GPU's trace lacks the job.
    for (const TrainRow& row : train) {
      if (WorkloadKey{row.dataset, row.network, row.optimizer} != key ||
          row.target_metric != job.target_metric) {
        continue;
      }
      auto it = by_size.find(row.batch_size);
      if (it == by_size.end()) continue;
      if (!runs_seen[row.batch_size].insert(row.run).second) {
        return InvalidArgumentError("train trace: " + job.dataset + " batch size " +
                                    std::to_string(row.batch_size) + " run " +
                                    std::to_string(row.run) + " appears twice at target " +
                                    std::to_string(job.target_metric));
      }
      it->second.target_epochs.push_back(row.target_epoch);
      run_ids[row.batch_size].push_back(row.run);
    }
    const std::vector<double> milestones = MilestoneLevels(job, train);
    AddMilestoneEpochs(job, train, milestones, run_ids, by_size);

    Workload workload;
    workload.gpu = gpu;
    workload.job = job;
    workload.max_power_w = MaxPowerW(max_limit_w, /*num_gpus=*/1);
    std::set<int> limits;
    for (auto& [size, trace] : by_size) {
      if (trace.target_epochs.empty()) continue;  // Not in the train trace.
      std::sort(trace.power.begin(), trace.power.end(),
                [](const PowerPoint& a, const PowerPoint& b) {
                  return a.power_limit_w < b.power_limit_w;
                });
      for (const PowerPoint& point : trace.power) limits.insert(point.power_limit_w);
      workload.batch_sizes.push_back(std::move(trace));
    }
    workload.power_limits_w.assign(limits.begin(), limits.end());
    workload.milestones = milestones;
    if (workload.batch_sizes.empty()) {
      return InvalidArgumentError("traces for " + gpu + ": job " + job.dataset + "/" + job.network +
                                  " has no batch size in both the train trace " + "(at target " +
                                  std::to_string(job.target_metric) + ") and the power trace");
    }
    workload.default_batch_size = std::min(job.default_batch_size, largest_power_size);
    if (workload.Find(workload.default_batch_size) == nullptr) {
      return InvalidArgumentError(
          "traces for " + gpu + ": job " + job.dataset + ": default batch size " +
          std::to_string(workload.default_batch_size) + " (capped) is not in both traces");
    }
    ZEUS_RETURN_IF_ERROR(ValidateWorkload(workload));
    workloads.push_back(std::move(workload));
  }
  return workloads;
}

StatusOr<std::vector<Workload>> LoadWorkloads(const std::string& dir, const std::string& gpu) {
  ZEUS_ASSIGN_OR_RETURN(std::vector<JobSpec> jobs, LoadJobs(dir + "/jobs.csv"));
  ZEUS_ASSIGN_OR_RETURN(std::vector<TrainRow> train, LoadTrainTrace(dir + "/summary_train.csv"));
  ZEUS_ASSIGN_OR_RETURN(std::vector<PowerRow> power,
                        LoadPowerTrace(dir + "/summary_power_" + gpu + ".csv"));
  return BuildWorkloads(gpu, jobs, train, power);
}

}  // namespace zeus
