"""AMD GPUs through the Zeus core (AMD SMI, loaded by libzeus_c.so).

The calls go to the core's Gpu of the GPU exactly as for NVIDIA
(zeus.device.gpu.nvidia describes ZEUS_DRY_RUN, ZEUSD_SOCK_PATH and the
restore on exit, which apply alike): ZEUS_AMDSMI_LIBRARY picks the library
(default libamd_smi.so, then $ROCM_PATH/lib/libamd_smi.so),
HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) the GPUs and their order.
The core drives one GPU vendor per process, NVML first: AMD GPUs are used
when NVML is absent or finds no GPU.

Where AMD differs from NVIDIA (as in the original): no persistence mode
(ZeusGPUNotSupportedError), no memory power, and the energy counter is used
only when the core's check at open found it consistent with power x time
(supports_get_total_energy_consumption()). Average power is AMD SMI's
average_socket_power (ZeusGPUNotSupportedError on GPUs that report only the
current socket power, MI300 and newer). The supported graphics and memory
clocks are the DPM levels of AMDSMI_CLK_TYPE_SYS and AMDSMI_CLK_TYPE_MEM;
locking sets a range with amdsmi_set_gpu_clk_range; resetting one domain
alone raises ZeusGPUNotSupportedError (AMD SMI resets every domain at once),
reset_locked_clocks() and the restore at exit lift each lock by locking the
domain to its whole range of levels.
"""

from __future__ import annotations

import logging
from typing import Sequence

import zeus.device.gpu.common as gpu_common
from zeus.device.gpu import nvidia

logger = logging.getLogger(__name__)


def amdsmi_is_available() -> bool:
    """Whether AMD SMI loads and initialises (through the core) and the core
    does not use another vendor's GPUs (it drives one vendor per process,
    NVML first)."""
    return nvidia._backend_available("amdsmi")


class AMDGPU(nvidia._CoreGPU):
    """One AMD GPU, `gpu_index` in HIP order (after HIP_VISIBLE_DEVICES, else
    CUDA_VISIBLE_DEVICES). ZeusGPUInitError where AMD SMI is unavailable or
    the core uses NVIDIA GPUs."""

    _BACKEND = "amdsmi"

    def __init__(self, gpu_index: int) -> None:
        super().__init__(gpu_index)

    def _attach(self, handle) -> None:
        found = len(handle.infos)
        if isinstance(self.gpu_index, int) and not isinstance(self.gpu_index, bool) and \
                not 0 <= self.gpu_index < found:
            # The original's class and words.
            raise gpu_common.ZeusGPUNotFoundError(
                f"GPU with HIP index {self.gpu_index} not found. Found HIP indices: "
                f"{list(range(found))}.")
        super()._attach(handle)

    def _no_persistence_mode(self):
        raise gpu_common.ZeusGPUNotSupportedError(
            f"zeus.device: AMD GPU {self.gpu_index}: persistence mode is not supported for "
            "AMD GPUs")

    def set_persistence_mode(self, enabled: bool, block: bool = True) -> None:
        """Not supported on AMD GPUs (ZeusGPUNotSupportedError), as in the
        original."""
        self._no_persistence_mode()

    def get_persistence_mode(self) -> bool:
        """Not supported on AMD GPUs (ZeusGPUNotSupportedError)."""
        self._no_persistence_mode()

    def get_average_memory_power_usage(self) -> int:
        """Not supported on AMD GPUs (ZeusGPUNotSupportedError), as in the
        original."""
        raise gpu_common.ZeusGPUNotSupportedError(
            f"zeus.device: AMD GPU {self.gpu_index}: average memory power is not supported "
            "for AMD GPUs")

    def get_gpu_uuid(self) -> str:
        """(extra) AMD SMI's UUID of the GPU."""
        return self._static("uuid")

    @property
    def handle(self):
        """The GPU's handle of the `amdsmi` Python package, as the original's
        attribute: the processor handle whose UUID is this GPU's, after
        amdsmi.amdsmi_init(). Where `amdsmi` is not importable (the core loads
        libamd_smi without it), ZeusGPULibraryNotFoundError says so."""
        cached = getattr(self, "_amdsmi_handle", None)
        if cached is not None:
            return cached
        try:
            import amdsmi
        except ImportError:
            raise gpu_common.ZeusGPULibraryNotFoundError(
                f"zeus.device: AMD GPU {self.gpu_index}: .handle is a handle of the amdsmi "
                "Python package, which is not importable here (Zeus itself does not need "
                "it)") from None
        amdsmi.amdsmi_init()
        uuid = self.get_gpu_uuid()
        for candidate in amdsmi.amdsmi_get_processor_handles():
            if amdsmi.amdsmi_get_gpu_device_uuid(candidate) == uuid:
                self._amdsmi_handle = candidate
                return candidate
        raise gpu_common.ZeusGPUNotFoundError(
            f"zeus.device: AMD GPU {self.gpu_index}: amdsmi lists no GPU with UUID {uuid}")

    def get_supported_graphics_clocks(self, memory_clock_mhz: int | None = None) -> list[int]:
        """The graphics clock's DPM levels in MHz, highest first (the core's
        amdsmi_get_clk_freq(AMDSMI_CLK_TYPE_SYS), AMD SMI's Hz rounded to the
        nearest MHz, repeated levels once). `memory_clock_mhz` is ignored, as
        in the original: AMD SMI lists the levels for the GPU, not per memory
        clock. ZeusGPUNotSupportedError where AMD SMI lists none."""
        return self._clocks("supported_graphics_clocks_at_mhz", 0)

    def _no_single_domain_reset(self, domain: str):
        raise gpu_common.ZeusGPUNotSupportedError(
            f"zeus.device: AMD GPU {self.gpu_index}: resetting only the {domain} locked clocks "
            "is not supported (AMD SMI resets every clock domain at once)")

    def reset_gpu_locked_clocks(self, block: bool = True) -> None:
        """Not supported on AMD GPUs (ZeusGPUNotSupportedError), as in the
        original: AMD SMI cannot reset one clock domain alone."""
        self._no_single_domain_reset("GPU")

    def reset_memory_locked_clocks(self, block: bool = True) -> None:
        """Not supported on AMD GPUs (ZeusGPUNotSupportedError), as in the
        original."""
        self._no_single_domain_reset("memory")

    def reset_locked_clocks(self, block: bool = True) -> None:
        """Unlocks the graphics and the memory clocks, as the original's reset
        of every domain: AMD SMI resets no single domain, so each is locked
        to its whole range of levels (the core's UnlockClocks)."""
        through_core = getattr(self, "_through_core", None)
        if through_core is not None:
            # A ZeusdAMDGPU relayed by the core: in order with its other changes.
            return through_core(self._unlock_every_domain, block=block)
        return self._unlock_every_domain(block)

    def _unlock_every_domain(self, block: bool = True) -> None:
        for memory in (0, 1):
            self._handle.call("unlock_clocks", self.gpu_index, memory, setter=True)


class ZeusdAMDGPU(nvidia._ZeusdRelayed, AMDGPU):
    """An AMDGPU whose setters go through the Zeus daemon (`client`, or the
    core's relay to ZEUSD_SOCK_PATH); what AMD GPUs lack stays unsupported."""

    set_persistence_mode = AMDGPU.set_persistence_mode
    reset_gpu_locked_clocks = AMDGPU.reset_gpu_locked_clocks
    reset_memory_locked_clocks = AMDGPU.reset_memory_locked_clocks


class AMDGPUs(nvidia._CoreGPUs):
    """The AMD GPUs of this process, in HIP order (HIP_VISIBLE_DEVICES, else
    CUDA_VISIBLE_DEVICES: index i is its i-th entry). With ZEUSD_SOCK_PATH
    set, the GPUs are ZeusdAMDGPU objects (setters relayed to the daemon).
    ZeusGPUInitError where AMD SMI is unavailable or the core uses NVIDIA
    GPUs. Same extras as NVIDIAGPUs (restore(), close(), info())."""

    _BACKEND = "amdsmi"
    _GPU = AMDGPU
    _ZEUSD_GPU = ZeusdAMDGPU

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        super().__init__(ensure_homogeneous)

    @property
    def gpus(self) -> Sequence[AMDGPU]:
        return self._gpus
