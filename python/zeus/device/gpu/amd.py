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

    def _unavailable(self, *args, **kwargs):
        raise gpu_common.ZeusGPUInitError(_UNAVAILABLE)

    get_name = get_power_management_limit_constraints = get_power_management_limit = _unavailable
    set_power_management_limit = reset_power_management_limit = _unavailable
    set_persistence_mode = get_persistence_mode = _unavailable
    get_supported_memory_clocks = set_memory_locked_clocks = _unavailable
    reset_memory_locked_clocks = get_supported_graphics_clocks = _unavailable
    set_gpu_locked_clocks = reset_gpu_locked_clocks = reset_locked_clocks = _unavailable
    get_average_power_usage = get_instant_power_usage = _unavailable
    get_average_memory_power_usage = supports_get_total_energy_consumption = _unavailable
    get_total_energy_consumption = get_gpu_temperature = _unavailable


class ZeusdAMDGPU(AMDGPU):
    """An AMDGPU whose setters go through the Zeus daemon (unavailable)."""

    def __init__(self, gpu_index: int, client) -> None:
        super().__init__(gpu_index)


class AMDGPUs(gpu_common.GPUs):
    """The AMD GPUs of this process: ZeusGPUInitError in this build."""

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        raise gpu_common.ZeusGPUInitError(f"AMDGPUs: {_UNAVAILABLE}")

    @property
    def gpus(self) -> Sequence[AMDGPU]:
        return []
