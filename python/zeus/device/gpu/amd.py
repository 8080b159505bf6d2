"""AMD GPUs (amdsmi). The core has no AMD backend yet: amdsmi_is_available()
is False and AMDGPU/AMDGPUs raise ZeusGPUInitError, as the original does on
a machine where amdsmi cannot be loaded."""

from __future__ import annotations

import logging
from typing import Sequence

import zeus.device.gpu.common as gpu_common

logger = logging.getLogger(__name__)

_UNAVAILABLE = ("AMD GPUs are not supported by this build of Zeus (the core has no amdsmi "
                "backend yet), so amdsmi is unavailable")


def amdsmi_is_available() -> bool:
    """Whether AMD GPUs can be managed: always False in this build."""
    logger.info("zeus.device: %s", _UNAVAILABLE)
    return False


class AMDGPU(gpu_common.GPU):
    """One AMD GPU: cannot be created in this build (ZeusGPUInitError)."""

    def __init__(self, gpu_index: int) -> None:
        raise gpu_common.ZeusGPUInitError(f"AMDGPU({gpu_index}): {_UNAVAILABLE}")

    @property
    def supports_nonblocking_setters(self) -> bool:
        return False

    def get_name(self) -> str:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_power_management_limit_constraints(self) -> tuple[int, int]:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_power_management_limit(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def set_power_management_limit(self, power_limit_mw: int, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def reset_power_management_limit(self, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def set_persistence_mode(self, enabled: bool, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_persistence_mode(self) -> bool:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_supported_memory_clocks(self) -> list[int]:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def set_memory_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def reset_memory_locked_clocks(self, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_supported_graphics_clocks(self, memory_clock_mhz: int | None = None) -> list[int]:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def set_gpu_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def reset_gpu_locked_clocks(self, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def reset_locked_clocks(self, block: bool = True) -> None:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_average_power_usage(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_instant_power_usage(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_average_memory_power_usage(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def supports_get_total_energy_consumption(self) -> bool:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_total_energy_consumption(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    def get_gpu_temperature(self) -> int:
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)


class ZeusdAMDGPU(AMDGPU):
    """An AMDGPU whose setters go through the Zeus daemon (unavailable)."""

    def __init__(self, gpu_index: int, client) -> None:
        super().__init__(gpu_index)

    # The original overrides these setters (they go to the daemon).
    set_power_management_limit = AMDGPU.set_power_management_limit
    reset_power_management_limit = AMDGPU.reset_power_management_limit
    set_memory_locked_clocks = AMDGPU.set_memory_locked_clocks
    set_gpu_locked_clocks = AMDGPU.set_gpu_locked_clocks
    reset_locked_clocks = AMDGPU.reset_locked_clocks


class AMDGPUs(gpu_common.GPUs):
    """The AMD GPUs of this process: ZeusGPUInitError in this build."""

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        raise gpu_common.ZeusGPUInitError(f"AMDGPUs: {_UNAVAILABLE}")

    @property
    def gpus(self) -> Sequence[AMDGPU]:
        return []
