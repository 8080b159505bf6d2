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
(supports_get_total_energy_consumption()). Locked clocks and the lists of
supported clocks are not offered by the core's AMD SMI backend
(ZeusGPUNotSupportedError).
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


class ZeusdAMDGPU(nvidia._ZeusdRelayed, AMDGPU):
    """An AMDGPU whose setters go through the Zeus daemon."""


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
