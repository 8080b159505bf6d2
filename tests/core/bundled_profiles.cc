#include "tests/core/bundled_profiles.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

double RawProfileRow::TotalEnergyJ() const {
  double sum = 0;
  for (double e : gpu_energy_j) sum += e;
  return sum;
}

std::vector<RawProfile> ReadBundledProfiles() {
  std::vector<RawProfile> profiles;
  for (const auto& entry : std::filesystem::directory_iterator(DataDir() + "/profiles")) {
    if (entry.path().extension() != ".csv") continue;
    RawProfile profile;
    profile.path = entry.path().string();
    std::ifstream in(profile.path);
    std::string line;
    std::getline(in, line);  // Header.
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::vector<std::string> cells;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, ',')) cells.push_back(cell);
      if (cells.size() < 4) {
        ADD_FAILURE() << profile.path << ": short row " << line;
        continue;
      }
      RawProfileRow row;
      row.power_limit_w = std::stoi(cells[1].substr(cells[1].rfind('_') + 1));
      row.time_s = std::stod(cells[2]);
      for (size_t i = 3; i < cells.size(); ++i) row.gpu_energy_j.push_back(std::stod(cells[i]));
      profile.rows.push_back(row);
    }
    profiles.push_back(std::move(profile));
  }
  std::sort(profiles.begin(), profiles.end(),
            [](const RawProfile& a, const RawProfile& b) { return a.path < b.path; });
  return profiles;
}

}  // namespace zeus::testing
