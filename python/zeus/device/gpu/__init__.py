"""GPUs: get_gpus() returns this process's GPUs as a GPUs object.

See zeus.device.gpu.common for the classes and exceptions and
zeus.device.gpu.nvidia for how calls reach the core (ZEUS_DRY_RUN,
ZEUSD_SOCK_PATH, restore on exit).
"""

from __future__ import annotations

import threading

from zeus.device.gpu.common import *  # noqa: F401,F403 - the exceptions and classes.
from zeus.device.gpu.common import GPUs, ZeusGPUInitError
from zeus.device.gpu.nvidia import nvml_is_available, NVIDIAGPUs
from zeus.device.gpu import nvidia as _nvidia
from zeus.device.gpu.amd import amdsmi_is_available, AMDGPUs

_gpus: GPUs | None = None
_lock = threading.Lock()


def get_gpus(ensure_homogeneous: bool = False) -> GPUs:
    """This process's GPUs, opened once and shared by every caller.

    NVIDIA (NVML through the core) first, then AMD (AMD SMI through the
    core): AMDGPUs where the core uses AMD SMI. Raises ZeusGPUInitError when
    neither can be used (the message says why NVML could not be opened),
    and ZeusGPUHeterogeneousError with ensure_homogeneous when the GPUs are of
    different models.
    """
    global _gpus
    with _lock:
        if _gpus is not None and getattr(_gpus, "closed", False):
            _gpus = None  # Closed by its user (close()): open afresh.
        if _gpus is None:
            try:
                # One open for either vendor: the core uses the first backend
                # (NVML, then AMD SMI) that finds GPUs.
                handle = _nvidia._Handle(None)
                cls = AMDGPUs if handle.backend == "amdsmi" else NVIDIAGPUs
                _gpus = cls._from_handle(handle)
            except ZeusGPUInitError as nvidia_error:
                if not amdsmi_is_available():
                    raise ZeusGPUInitError(
                        f"{nvidia_error}; AMD GPUs: amdsmi is unavailable (the core's AMD SMI "
                        "backend found no usable library: see `zeus show-env`)") from nvidia_error
                _gpus = AMDGPUs()
        gpus = _gpus
    if ensure_homogeneous:
        gpus._ensure_homogeneous()
    return gpus
