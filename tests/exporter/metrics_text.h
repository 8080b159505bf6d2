// Reads samples out of Prometheus text exposition, for the exporter tests.

#ifndef ZEUS_TESTS_EXPORTER_METRICS_TEXT_H_
#define ZEUS_TESTS_EXPORTER_METRICS_TEXT_H_

#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace zeus::testing {

// The value of the first sample of `metric` whose labels include every one
// of `labels` (name -> exact value); nullopt when there is none.
inline std::optional<double> SampleValue(const std::string& text, const std::string& metric,
                                         const std::map<std::string, std::string>& labels) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(metric, 0) != 0) continue;
    const size_t after = metric.size();
    if (after >= line.size() || (line[after] != '{' && line[after] != ' ')) continue;
    const size_t close = line[after] == '{' ? line.find("} ", after) : after;
    if (close == std::string::npos) continue;
    const std::string label_text = line.substr(after, close - after + 1);
    bool all = true;
    for (const auto& [name, value] : labels) {
      const std::string wanted = name + "=\"" + value + "\"";
      const size_t at = label_text.find(wanted);
      if (at == std::string::npos || (label_text[at - 1] != '{' && label_text[at - 1] != ',')) {
        all = false;
        break;
      }
    }
    if (all) return std::strtod(line.c_str() + close + 1, nullptr);
  }
  return std::nullopt;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_EXPORTER_METRICS_TEXT_H_
