"""Intel's Energy Meter Interface (EMI), a Windows driver interface. This
package runs on Linux only, where EMI does not exist: emi_is_available() is
False and the classes raise ZeusEMINotSupportedError."""

from __future__ import annotations

import ctypes
import re
import sys
from typing import Optional, Sequence

from zeus.device.exception import ZeusBaseCPUError
import zeus.device.cpu.common as cpu_common

_WINDOWS = sys.platform == "win32"
_PKG_CHANNEL_RE = re.compile(r"RAPL_Package(\d+)_PKG$", re.IGNORECASE)
_DRAM_CHANNEL_RE = re.compile(r"RAPL_Package(\d+)_DRAM$", re.IGNORECASE)
_EMI_GUID_DATA1 = 1170047812
_EMI_GUID_DATA2 = 32470
_EMI_GUID_DATA3 = 18895
_EMI_GUID_DATA4 = (164, 64, 194, 118, 201, 51, 176, 83)
_IOCTL_EMI_GET_VERSION = 2244608
_IOCTL_EMI_GET_METADATA_SIZE = 2244612
_IOCTL_EMI_GET_METADATA = 2244616
_IOCTL_EMI_GET_MEASUREMENT = 2244620
_EMI_VERSION_V1 = 1
_EMI_VERSION_V2 = 2
_EMI_NAME_MAX = 16
_EMI_MEASUREMENT_UNIT_PICOWATT_HOURS = 0
_PICOWATT_HOURS_TO_MILLIJOULES = 3.6e-06
_GENERIC_READ = 2147483648
_FILE_SHARE_READ = 1
_OPEN_EXISTING = 3
_INVALID_HANDLE_VALUE = 2 ** (ctypes.sizeof(ctypes.c_void_p) * 8) - 1
_DIGCF_PRESENT = 2
_DIGCF_DEVICEINTERFACE = 16
_DETAIL_DATA_CBSIZE = 8 if ctypes.sizeof(ctypes.c_void_p) == 8 else 6

_NOT_SUPPORTED = (f"EMI (Intel's Windows Energy Meter Interface) is not supported here: this "
                  f"platform is {sys.platform!r} and this Zeus build reads CPU energy through "
                  f"RAPL (zeus.device.cpu.rapl)")


class ZeusEMINotSupportedError(ZeusBaseCPUError):
    """EMI is not available on this platform."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusEMIInitError(ZeusBaseCPUError):
    """An EMI device could not be opened."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def emi_is_available() -> bool:
    """Whether EMI can be used: False (Linux-only build)."""
    return False


def get_current_emi_cpu_index() -> int:
    """The EMI package of the current processor: EMI is not supported."""
    raise ZeusEMINotSupportedError(_NOT_SUPPORTED)


class EMIFile:
    """One EMI device: cannot be opened here (ZeusEMINotSupportedError)."""

    def __init__(self, path: str) -> None:
        self.path = path
        raise ZeusEMINotSupportedError(f"EMIFile({path!r}): {_NOT_SUPPORTED}")

    def read(self, channel_index: int) -> float:
        raise ZeusEMINotSupportedError(_NOT_SUPPORTED)


class EMICPU(cpu_common.CPU):
    """One CPU package read through EMI: not supported here."""

    def __init__(self, cpu_index: int, emi_file: EMIFile, pkg_channel_index: int,
                 dram_channel_index: Optional[int]) -> None:
        raise ZeusEMINotSupportedError(f"EMICPU({cpu_index}): {_NOT_SUPPORTED}")

    def get_total_energy_consumption(self) -> cpu_common.CpuDramMeasurement:
        raise ZeusEMINotSupportedError(_NOT_SUPPORTED)

    def supports_get_dram_energy_consumption(self) -> bool:
        raise ZeusEMINotSupportedError(_NOT_SUPPORTED)


class EMICPUs(cpu_common.CPUs):
    """Every CPU package through EMI: not supported here."""

    def __init__(self) -> None:
        raise ZeusEMINotSupportedError(f"EMICPUs: {_NOT_SUPPORTED}")

    @property
    def cpus(self) -> Sequence[EMICPU]:
        return []
