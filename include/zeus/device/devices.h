// Factories for the devices this machine has: GPUs from every GPU backend
// compiled in (NVML today) whose library is present, CPU sockets from RAPL.
// What a machine lacks is not an error of the whole call: a machine with no
// GPU library yields kUnavailable from OpenGpus (naming what was tried), and
// callers degrade to "no GPUs". OpenSelectedDevices is the one place that
// turns a user's choice of devices (--gpus/--cpus, gpu_indices) into opened
// devices.

#ifndef ZEUS_DEVICE_DEVICES_H_
#define ZEUS_DEVICE_DEVICES_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

// Where OpenGpus looks; the defaults read the process environment.
struct GpuOptions {
  // Values of the environment variables the backends read, replacing the
  // process environment's; a name mapped to nullopt reads as unset. The NVML
  // backend reads ZEUS_NVML_LIBRARY (the library to dlopen; unset or empty:
  // libnvidia-ml.so.1, else libnvidia-ml.so), CUDA_VISIBLE_DEVICES and
  // ZEUSD_SOCK_PATH (set: the setters ask the Zeus daemon on that socket).
  // The AMD SMI backend reads ZEUS_AMDSMI_LIBRARY (unset or empty:
  // libamd_smi.so, else $ROCM_PATH/lib/libamd_smi.so, ROCM_PATH defaulting to
  // /opt/rocm), HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES and
  // ZEUS_AMDSMI_ENERGY_CHECK_MS (the energy counter check at open; "0" skips
  // it). Default: none (the process environment).
  std::map<std::string, std::optional<std::string>> environment;

  // `name`'s value: the override when `environment` has one, else the
  // process environment's; nullopt when unset.
  std::optional<std::string> GetEnv(const std::string& name) const;
};

// The GPUs visible to this process, from the first backend (NVML, then AMD
// SMI) whose library is present and finds GPUs; later backends are not used,
// so one process drives one GPU vendor (DescribeGpuBackends says which and
// why). Within the backend, in its runtime's order (NVIDIA: CUDA order; with
// CUDA_VISIBLE_DEVICES set, the i-th GPU is its i-th entry; AMD: HIP order
// after HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES). Gpu::index() is the
// position in the result. The returned GPUs keep their backend's library
// loaded and initialised while any of them lives. Empty when libraries are
// present but none finds a GPU; kUnavailable (naming what each backend tried)
// when no backend's library is present; a present backend's failure fails
// the call (kInvalidArgument for a malformed or MIG CUDA_VISIBLE_DEVICES or a
// malformed HIP_VISIBLE_DEVICES, the vendor's error when its library refuses
// to initialise). Changes no device state.
StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus(const GpuOptions& options = {});

// One GPU backend (a vendor's management library) as found on this machine.
struct GpuBackendDescription {
  // Short name, e.g. "nvml".
  std::string name;
  // The name for people, e.g. "NVML".
  std::string display_name;
  // True when the library loaded and initialised, even if it lacks the
  // version queries (old drivers).
  bool loaded = false;
  // (component, version) as the backend reports them, e.g. {"driver",
  // "580.159.04"}, {"nvml", "12.580.159.04"}; empty when unknown.
  std::vector<std::pair<std::string, std::string>> versions;
  // OK when loaded with its versions; else why not (kUnavailable when the
  // library is missing, kNotSupported when it lacks the version queries).
  Status status;
  // True for the backend OpenGpus uses (the first that finds GPUs).
  bool in_use = false;
  // Why it is or is not used, for people: "in use: 2 GPUs", "no GPUs",
  // "not used: NVML found 2 GPUs first (one GPU vendor per process)"; empty
  // when the library is not loaded.
  std::string selection;
};

// Every backend compiled in, present or not, in OpenGpus's order, with which
// one OpenGpus uses (`in_use`, `selection`). Counts GPUs, opening them only
// for backends without a count function. Changes no device state.
std::vector<GpuBackendDescription> DescribeGpuBackends(const GpuOptions& options = {});

// The powercap sysfs tree, and where the original Zeus's Docker setup mounts
// the host's (`-v /sys/class/powercap:/zeus_sys/class/powercap`).
inline constexpr char kDefaultPowercapRoot[] = "/sys/class/powercap";
inline constexpr char kContainerPowercapRoot[] = "/zeus_sys/class/powercap";

// With ZEUSD_SOCK_PATH set (and non-empty), the CPUs the Zeus daemon there
// lists, whose energy it reads for us (no privilege needed). Otherwise:
// one Cpu per RAPL package zone under `powercap_root` (intel-rapl:N), with its
// DRAM subzone when present; when `powercap_root` is kDefaultPowercapRoot and
// holds no package zone, those under kContainerPowercapRoot if it has any.
// Empty when the tree has no RAPL zones; kPermissionDenied (explaining that
// energy_uj is root-only since Linux 5.10) when the zones exist but cannot be
// read.
StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenCpus(
    const std::string& powercap_root = "/sys/class/powercap");

// Parses a comma-separated list of device indices such as "0,2" (a --gpus or
// --cpus value). kInvalidArgument naming `what` and the list when an entry is
// not an integer in [0, 1000000]. Duplicates are left to OpenSelectedDevices.
StatusOr<std::vector<int>> ParseDeviceIndexList(std::string_view what, std::string_view list);

// Which devices to open, as a user names them.
struct DeviceSelection {
  // Gpu::index() values, opened in this order; nullopt: every visible GPU;
  // an empty list: no GPU (OpenGpus is not called). Default: every GPU.
  std::optional<std::vector<int>> gpu_indices;
  // Cpu::index() (socket) values, likewise. Default: every RAPL socket.
  std::optional<std::vector<int>> cpu_indices;
  // How errors name the two lists, e.g. "--gpus". Default: "gpus", "cpus".
  std::string gpus_name = "gpus";
  std::string cpus_name = "cpus";
  // When nothing is selected: true makes it kUnavailable ("nothing to
  // measure: ..." with the reasons), false an empty result. Default: true.
  bool require_device = true;
  // Passed to OpenGpus. Default: the process environment.
  GpuOptions gpu_options;
  // Passed to OpenCpus. Default: /sys/class/powercap.
  std::string powercap_root = "/sys/class/powercap";
};

// The devices OpenSelectedDevices opened, in selection order; devices not
// selected are closed.
struct SelectedDevices {
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<std::unique_ptr<Cpu>> cpus;
  // Why GPUs (CPUs) could not be opened when every one was asked for, so a
  // caller can warn; OK otherwise.
  Status gpus_status;
  Status cpus_status;

  std::vector<Gpu*> GpuPointers() const;
  std::vector<Cpu*> CpuPointers() const;
  // Gpu::index() and Cpu::index() of the devices, in order.
  std::vector<int> GpuIndices() const;
  std::vector<int> CpuIndices() const;
};

// Opens what `selection` asks for. kInvalidArgument naming the list and the
// index for an index no device has ("--gpus: no GPU 5 (this machine has 2)")
// or one listed twice ("--gpus: GPU 0 is listed twice"); when a list names
// devices whose backend cannot be opened, that error with the list as
// context ("--gpus 0: ..."). See DeviceSelection::require_device for an empty
// result.
StatusOr<SelectedDevices> OpenSelectedDevices(const DeviceSelection& selection);

}  // namespace zeus

#endif  // ZEUS_DEVICE_DEVICES_H_
