#include "zeus/monitor/reporter.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zeus/util/strings.h"

namespace zeus {

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
    *out_ << j.dump() << "\n";
    out_->flush();
  }

  void ReportFinal(const MonitorReport& report) override {
    nlohmann::json j = MeasurementJson(report.measurement, report);
    j["command"] = report.command;
    j["exit_code"] = report.exit_code.has_value() ? nlohmann::json(*report.exit_code) : nullptr;
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
