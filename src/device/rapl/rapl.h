// The RAPL backend: one Cpu per package zone of the powercap sysfs tree
// (intel-rapl:N, name "package-N"), with its DRAM subzone (name "dram") when
// present. Counters wrap at max_energy_range_uj; each Cpu corrects the wrap
// and runs a tracker thread that reads its counters often enough never to
// miss one.

#ifndef ZEUS_SRC_DEVICE_RAPL_RAPL_H_
#define ZEUS_SRC_DEVICE_RAPL_RAPL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/device/cpu.h"
#include "zeus/status.h"

#include "src/device/rapl/sysfs_reader.h"

namespace zeus::rapl {

// A powercap zone directory.
struct RaplZone {
  // The zone's directory, e.g. "/sys/class/powercap/intel-rapl:0".
  std::string path;
  // Its "name" file, e.g. "package-0" or "dram".
  std::string name;
  std::string EnergyPath() const { return path + "/energy_uj"; }
  std::string MaxEnergyRangePath() const { return path + "/max_energy_range_uj"; }
};

// A CPU socket: its package zone and, when present, its DRAM subzone.
struct RaplPackage {
  int socket = 0;
  RaplZone package;
  std::optional<RaplZone> dram;
};

// The package zones under `powercap_root`, sorted by socket. Zones named
// other than "package-*" (e.g. "psys") and "intel-rapl-mmio" are skipped.
// Empty when the root does not exist or holds no RAPL zones; kIoError when a
// zone's name file cannot be read.
StatusOr<std::vector<RaplPackage>> FindRaplPackages(const std::string& powercap_root,
                                                    SysfsReader* reader);

// The root to read RAPL from: `powercap_root` when it holds a package zone,
// else `container_root` when that one does (the original Zeus's Docker setup
// mounts the host's tree there, `-v /sys/class/powercap:/zeus_sys/class/
// powercap`, since a container's own /sys hides it), else `powercap_root`.
// An empty `container_root` is never tried. Errors reading a tree count as
// "no package zone" here; FindRaplPackages reports them on the chosen root.
std::string ChoosePowercapRoot(const std::string& powercap_root, const std::string& container_root,
                               SysfsReader* reader);

// kPermissionDenied for `path`, explaining that energy_uj is root-only since
// Linux 5.10 (CVE-2020-8694) and how to grant access.
Status RaplPermissionError(const std::string& path);

// Corrects the wraparound of one RAPL counter that counts from 0 up to
// `max_range_uj` and wraps to 0. Not thread-safe (RaplCpu locks).
class WraparoundCounter {
 public:
  explicit WraparoundCounter(uint64_t max_range_uj) : max_range_uj_(max_range_uj) {}
  // Feeds a raw reading; returns the counter's value with its wraps undone,
  // in uJ: the first reading itself, then that plus everything counted since
  // (as the original Zeus reports RAPL energy; differences are energy). A
  // reading below the previous one counts as one wrap.
  uint64_t Update(uint64_t raw_uj);
  uint64_t max_range_uj() const { return max_range_uj_; }

 private:
  uint64_t max_range_uj_;
  std::optional<uint64_t> last_raw_uj_;
  uint64_t total_uj_ = 0;
};

struct RaplOptions {
  // The powercap sysfs root. Default: /sys/class/powercap.
  std::string powercap_root = "/sys/class/powercap";
  // Read instead when powercap_root has no package zone (ChoosePowercapRoot);
  // empty: never. Default: none (OpenCpus sets /zeus_sys/class/powercap for
  // the default root).
  std::string container_powercap_root;
  // Upper bound of one zone's power, used to derive how often the tracker
  // reads a counter: at this power a counter wraps after
  // max_energy_range_uj / max_power_w, and the tracker reads twice as often.
  // Default: 1000 W (no socket comes close; a wrap takes ~4 min at 1 kW).
  double max_power_w = 1000.0;
  // Tracker period; zero derives it from max_power_w as above. Default: 0.
  std::chrono::nanoseconds poll_period{0};
  // Reads the sysfs files; must outlive the Cpus. Default (null): the real
  // file system.
  SysfsReader* reader = nullptr;
};

// One Cpu per package of FindRaplPackages. Each counter is read once here
// (the origin of its energy), so a root-only energy_uj gives
// RaplPermissionError; kIoError/kInvalidArgument for unreadable or
// malformed files, naming them.
StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenRaplCpus(const RaplOptions& options);

// Parses a sysfs counter file ("12345\n"). kInvalidArgument naming `path`.
StatusOr<uint64_t> ParseCounter(const std::string& path, const std::string& contents);

}  // namespace zeus::rapl

#endif  // ZEUS_SRC_DEVICE_RAPL_RAPL_H_
