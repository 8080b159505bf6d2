// Fuzzes the CSV reader and the trace loaders. The input is up to three CSV
// files separated by lines "%%": jobs.csv, summary_train.csv and
// summary_power_fuzz.csv. Each is parsed by CsvTable (every cell read as a
// number), then the three are loaded and joined by LoadWorkloads.
// Invariant beyond "no crash": a loaded workload is internally consistent
// (its default batch size is one of its batch sizes; limits ascend).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/sim/trace.h"
#include "zeus/util/csv.h"

#include "tests/fuzz/fuzz_temp_file.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_trace_csv: invariant violated: %s\n", what);
    std::abort();
  }
}

std::vector<std::string_view> SplitFiles(std::string_view text) {
  std::vector<std::string_view> files;
  constexpr std::string_view kSeparator = "\n%%\n";
  while (files.size() < 2) {
    size_t at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    files.push_back(text.substr(0, at + 1));
    text.remove_prefix(at + kSeparator.size());
  }
  files.push_back(text);
  return files;
}

void ReadEveryCell(std::string_view text) {
  zeus::StatusOr<zeus::CsvTable> table = zeus::CsvTable::Parse(text, "fuzz.csv");
  if (!table.ok()) return;
  for (size_t row = 0; row < table->num_rows() && row < 64; ++row) {
    for (size_t column = 0; column < table->header().size(); ++column) {
      (void)table->Field(row, column);
      (void)table->Double(row, column);
      (void)table->Int(row, column);
    }
  }
  if (!table->header().empty()) (void)table->ColumnIndex(table->header().front());
  (void)table->ColumnIndex("batch_size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> files = SplitFiles(text);
  for (std::string_view file : files) ReadEveryCell(file);
  static const char* const kNames[] = {"jobs.csv", "summary_train.csv", "summary_power_fuzz.csv"};
  for (size_t i = 0; i < 3; ++i) {
    std::string_view file = i < files.size() ? files[i] : std::string_view();
    zeus::fuzz::WriteScratchFile(kNames[i], reinterpret_cast<const uint8_t*>(file.data()),
                                 file.size());
  }
  const std::string& dir = zeus::fuzz::ScratchDir();
  (void)zeus::LoadJobs(dir + "/jobs.csv");
  (void)zeus::LoadTrainTrace(dir + "/summary_train.csv");
  (void)zeus::LoadPowerTrace(dir + "/summary_power_fuzz.csv");
  zeus::StatusOr<std::vector<zeus::Workload>> workloads = zeus::LoadWorkloads(dir, "fuzz");
  if (!workloads.ok()) return 0;
  for (const zeus::Workload& w : *workloads) {
    Check(w.Find(w.default_batch_size) != nullptr, "default batch size not among batch sizes");
    for (size_t i = 1; i < w.power_limits_w.size(); ++i) {
      Check(w.power_limits_w[i - 1] < w.power_limits_w[i], "power limits not ascending");
    }
    for (const zeus::BatchSizeTrace& b : w.batch_sizes) {
      Check(!b.power.empty(), "a batch size without power points");
      (void)b.At(b.max_power_limit_w());
    }
  }
  return 0;
}
