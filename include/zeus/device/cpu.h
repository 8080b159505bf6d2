// The CPU energy abstraction: one Cpu per socket, backed by Intel RAPL
// (powercap sysfs) on real machines.
//
// Thread-safety: every method may be called concurrently from several threads.

#ifndef ZEUS_DEVICE_CPU_H_
#define ZEUS_DEVICE_CPU_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zeus/status.h"

namespace zeus {

class Cpu {
 public:
  Cpu() = default;
  Cpu(const Cpu&) = delete;
  Cpu& operator=(const Cpu&) = delete;
  virtual ~Cpu() = default;

  // Socket (package) index.
  virtual int index() const = 0;

  // Package energy in uJ since an arbitrary origin, monotonic: counter
  // wraparound is corrected. (RAPL: the counter's value plus its range per
  // wrap since the Cpu was opened, as the original Zeus reports it.)
  // kPermissionDenied when energy_uj is root-only.
  virtual StatusOr<uint64_t> PackageEnergyUj() = 0;
  // DRAM energy in uJ, same contract; kNotSupported when the socket has no
  // DRAM zone.
  virtual StatusOr<uint64_t> DramEnergyUj() = 0;
  virtual bool HasDram() const = 0;
};

}  // namespace zeus

#endif  // ZEUS_DEVICE_CPU_H_
