// CPUs whose RAPL energy the Zeus daemon reads (the kernel lets only root read
// energy_uj): OpenCpus returns these when ZEUSD_SOCK_PATH is set.
//
// Thread-safety: every method may be called concurrently (one connection per
// call).

#ifndef ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CPU_H_
#define ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CPU_H_

#include <memory>
#include <string>
#include <vector>

#include "zeus/device/cpu.h"
#include "zeus/status.h"

namespace zeus::zeusd {

// One Cpu per CPU the daemon at `socket_path` lists in /discover, reading
// GET /cpu/get_cumulative_energy. The counters are the daemon's: monotonic,
// wraparound corrected. kUnavailable when the daemon cannot be reached.
StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenZeusdCpus(const std::string& socket_path);

}  // namespace zeus::zeusd

#endif  // ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_CPU_H_
