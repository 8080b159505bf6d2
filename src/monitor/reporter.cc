#include "zeus/monitor/reporter.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "zeus/util/csv.h"
#include "zeus/util/strings.h"

namespace zeus {

std::string EnergyCsvHeader(size_t num_gpus) {
  std::vector<int> positions;
  for (size_t i = 0; i < num_gpus; ++i) positions.push_back(static_cast<int>(i));
  return EnergyCsvHeader(positions);
}

std::string EnergyCsvHeader(const std::vector<int>& gpu_indices) {
  std::string header = "start_time,window_name,elapsed_time";
  for (int index : gpu_indices) header += fmt::format(",gpu{}_energy", index);
  return header;
}

std::string EnergyCsvRow(const Measurement& m) {
  std::string row = fmt::format("{},{},{}", m.start_wall_time_s, CsvQuote(m.name), m.time_s);
  for (double j : m.gpu_energy_j) row += fmt::format(",{}", j);
  return row;
}

namespace {

// Appends `text` to `path` (created 0644 when missing), then closes it.
// Non-blocking, so a FIFO without a reader is kIoError instead of a hang.
Status AppendToFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(fmt::format("cannot append to '{}': {}", path, std::strerror(errno)));
  const ssize_t written = write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool closed = close(fd) == 0;
  if (written != static_cast<ssize_t>(text.size()) || !closed) {
    return IoError(fmt::format("cannot write to '{}': {}", path,
                               written < 0 ? std::strerror(write_errno) : "short write"));
  }
  return Status::Ok();
}

// The first line of regular file `path` (without its newline), reading at most
// `limit` bytes; "" for an empty file.
StatusOr<std::string> ReadFirstLine(const std::string& path, size_t limit) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return IoError(fmt::format("cannot read '{}'", path));
  std::string line;
  int c = 0;
  while (line.size() < limit && (c = std::fgetc(f)) != EOF && c != '\n') {
    line += static_cast<char>(c);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return IoError(fmt::format("cannot read '{}'", path));
  return line;
}

class CsvWindowReporter final : public WindowReporter {
 public:
  CsvWindowReporter(std::string path, std::vector<int> gpu_indices)
      : path_(std::move(path)), gpu_indices_(std::move(gpu_indices)) {}

  Status Open(size_t num_gpus) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!gpu_indices_.empty() && gpu_indices_.size() != num_gpus) {
      return InvalidArgumentError(fmt::format("csv log '{}': {} GPU indices named for {} GPUs",
                                              path_, gpu_indices_.size(), num_gpus));
    }
    const std::string header =
        gpu_indices_.empty() ? EnergyCsvHeader(num_gpus) : EnergyCsvHeader(gpu_indices_);
    struct stat st;
    if (stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      ZEUS_ASSIGN_OR_RETURN(std::string first_line, ReadFirstLine(path_, header.size() + 1));
      if (first_line != header) {
        return InvalidArgumentError(
            fmt::format("csv log '{}' has header '{}', expected '{}'", path_, first_line, header));
      }
      return Status::Ok();
    }
    return AppendToFile(path_, header + "\n");
  }

  Status ReportWindow(const Measurement& m) override {
    std::lock_guard<std::mutex> lock(mu_);
    return AppendToFile(path_, EnergyCsvRow(m) + "\n");
  }

 private:
  const std::string path_;
  const std::vector<int> gpu_indices_;
  std::mutex mu_;
};

}  // namespace

std::shared_ptr<WindowReporter> NewCsvWindowReporter(std::string path,
                                                     std::vector<int> gpu_indices) {
  return std::make_shared<CsvWindowReporter>(std::move(path), std::move(gpu_indices));
}

const char* GpuEnergySourceName(GpuEnergySource source) {
  switch (source) {
    case GpuEnergySource::kCounter:
      return "counter";
    case GpuEnergySource::kCounterPlusPower:
      return "counter+power";
    case GpuEnergySource::kPowerIntegration:
      return "power_integration";
    case GpuEnergySource::kInstantPowerApproximation:
      return "instant_power_approximation";
  }
  return "unknown";
}

namespace {

double AveragePowerW(double energy_j, double time_s) {
  return time_s > 0 ? energy_j / time_s : 0.0;
}

int IndexOr(const std::vector<int>& indices, size_t pos) {
  return pos < indices.size() ? indices[pos] : static_cast<int>(pos);
}

class TextReporter final : public MonitorReporter {
 public:
  explicit TextReporter(std::ostream* out) : out_(out) {}

  void ReportInterval(double elapsed_s, const Measurement& m,
                      const MonitorReport& devices) override {
    std::string line = fmt::format("[{:9.2f} s]", elapsed_s);
    for (size_t i = 0; i < m.gpu_energy_j.size(); ++i) {
      line += fmt::format("  GPU{} {:8.1f} W", IndexOr(devices.gpu_indices, i),
                          AveragePowerW(m.gpu_energy_j[i], m.time_s));
    }
    for (size_t s = 0; s < m.cpu_energy_j.size(); ++s) {
      line += fmt::format("  CPU{} {:7.1f} W", IndexOr(devices.cpu_indices, s),
                          AveragePowerW(m.cpu_energy_j[s] + m.dram_energy_j[s], m.time_s));
    }
    if (!devices.power_domain.empty()) {
      line += "  |  " + devices.power_domain + ":";
      for (size_t i = 0; i < devices.domain_power_w.size(); ++i) {
        line += fmt::format("  GPU{} {:8.1f} W", IndexOr(devices.gpu_indices, i),
                            devices.domain_power_w[i]);
      }
    }
    *out_ << line << "\n";
    out_->flush();
  }

  void ReportFinal(const MonitorReport& report) override {
    const Measurement& m = report.measurement;
    std::string text;
    if (!report.command.empty()) text += "Command:    " + Join(report.command, " ") + "\n";
    if (report.exit_code.has_value()) text += fmt::format("Exit code:  {}\n", *report.exit_code);
    text += fmt::format("Wall time:  {:.3f} s\n", m.time_s);
    text += fmt::format("{:<10} {:>14} {:>12}  {}\n", "Device", "Energy (J)", "Avg (W)", "Source");
    for (size_t i = 0; i < m.gpu_energy_j.size(); ++i) {
      std::string source = GpuEnergySourceName(m.gpu_energy_source[i]);
      if (m.gpu_below_counter_resolution[i]) source += " (below counter resolution)";
      text += fmt::format("{:<10} {:>14.3f} {:>12.1f}  {}\n",
                          fmt::format("GPU {}", IndexOr(report.gpu_indices, i)), m.gpu_energy_j[i],
                          AveragePowerW(m.gpu_energy_j[i], m.time_s), source);
    }
    for (size_t s = 0; s < m.cpu_energy_j.size(); ++s) {
      int index = IndexOr(report.cpu_indices, s);
      text += fmt::format("{:<10} {:>14.3f} {:>12.1f}  rapl\n", fmt::format("CPU {}", index),
                          m.cpu_energy_j[s], AveragePowerW(m.cpu_energy_j[s], m.time_s));
      text += fmt::format("{:<10} {:>14.3f} {:>12.1f}  rapl\n", fmt::format("DRAM {}", index),
                          m.dram_energy_j[s], AveragePowerW(m.dram_energy_j[s], m.time_s));
    }
    if (!m.gpu_energy_j.empty()) {
      text += fmt::format("{:<10} {:>14.3f} {:>12.1f}\n", "GPU total", m.TotalGpuEnergyJ(),
                          AveragePowerW(m.TotalGpuEnergyJ(), m.time_s));
    }
    for (size_t i = 0; i < report.domain_energy_j.size(); ++i) {
      text += fmt::format("{:<10} {:>14.3f} {:>12.1f}  integral of {}\n",
                          fmt::format("GPU {}", IndexOr(report.gpu_indices, i)),
                          report.domain_energy_j[i],
                          AveragePowerW(report.domain_energy_j[i], m.time_s), report.power_domain);
    }
    *out_ << text;
    out_->flush();
  }

 private:
  std::ostream* out_;
};

nlohmann::json MeasurementJson(const Measurement& m, const MonitorReport& devices) {
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t i = 0; i < m.gpu_energy_j.size(); ++i) {
    gpus.push_back(
        {{"index", IndexOr(devices.gpu_indices, i)},
         {"energy_j", m.gpu_energy_j[i]},
         {"average_power_w", AveragePowerW(m.gpu_energy_j[i], m.time_s)},
         {"source", GpuEnergySourceName(m.gpu_energy_source[i])},
         {"below_counter_resolution", static_cast<bool>(m.gpu_below_counter_resolution[i])}});
  }
  nlohmann::json cpus = nlohmann::json::array();
  for (size_t s = 0; s < m.cpu_energy_j.size(); ++s) {
    cpus.push_back({{"index", IndexOr(devices.cpu_indices, s)},
                    {"package_energy_j", m.cpu_energy_j[s]},
                    {"dram_energy_j", m.dram_energy_j[s]}});
  }
  return {{"time_s", m.time_s},
          {"gpus", gpus},
          {"cpus", cpus},
          {"total_gpu_energy_j", m.TotalGpuEnergyJ()}};
}

class JsonReporter final : public MonitorReporter {
 public:
  explicit JsonReporter(std::ostream* out) : out_(out) {}

  void ReportInterval(double elapsed_s, const Measurement& m,
                      const MonitorReport& devices) override {
    nlohmann::json j = MeasurementJson(m, devices);
    j["elapsed_s"] = elapsed_s;
    if (!devices.power_domain.empty()) {
      j["power_domain"] = devices.power_domain;
      for (size_t i = 0; i < devices.domain_power_w.size() && i < j["gpus"].size(); ++i) {
        j["gpus"][i]["domain_power_w"] = devices.domain_power_w[i];
      }
    }
    *out_ << j.dump() << "\n";
    out_->flush();
  }

  void ReportFinal(const MonitorReport& report) override {
    nlohmann::json j = MeasurementJson(report.measurement, report);
    j["command"] = report.command;
    j["exit_code"] = report.exit_code.has_value() ? nlohmann::json(*report.exit_code) : nullptr;
    if (!report.power_domain.empty()) {
      j["power_domain"] = report.power_domain;
      for (size_t i = 0; i < report.domain_energy_j.size() && i < j["gpus"].size(); ++i) {
        j["gpus"][i]["domain_energy_j"] = report.domain_energy_j[i];
      }
    }
    *out_ << j.dump() << "\n";  // One line: the stream stays JSON Lines.
    out_->flush();
  }

 private:
  std::ostream* out_;
};

}  // namespace

std::unique_ptr<MonitorReporter> NewTextReporter(std::ostream* out) {
  return std::make_unique<TextReporter>(out);
}

std::unique_ptr<MonitorReporter> NewJsonReporter(std::ostream* out) {
  return std::make_unique<JsonReporter>(out);
}

}  // namespace zeus
