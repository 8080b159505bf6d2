// The bundled NSDI'23 traces' workloads on both GPUs, shared by the
// simulator tests that measure policies on them.

#ifndef ZEUS_TESTS_SIM_BUNDLED_WORKLOADS_H_
#define ZEUS_TESTS_SIM_BUNDLED_WORKLOADS_H_

#include <string>
#include <vector>

#include "zeus/sim/trace.h"

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

// The V100 workloads, then the A40 ones (12 in all); the first loading
// error otherwise.
inline StatusOr<std::vector<Workload>> BundledWorkloads() {
  const std::string dir = DataDir() + "/traces/zeus-nsdi23";
  std::vector<Workload> workloads;
  for (const char* gpu : {"v100", "a40"}) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<Workload> loaded, LoadWorkloads(dir, gpu));
    workloads.insert(workloads.end(), loaded.begin(), loaded.end());
  }
  return workloads;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_SIM_BUNDLED_WORKLOADS_H_
