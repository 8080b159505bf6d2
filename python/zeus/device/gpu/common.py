"""The vendor-neutral GPU classes and the GPU exceptions.

`GPU` is one device; `GPUs` the devices this process sees (CUDA order), whose
methods take the GPU's index and forward to `gpus[index]`. Units: power and
limits mW, energy mJ, clocks MHz, temperature degrees Celsius. Every method
has a snake_case name; the camelCase names of older releases remain as
deprecated aliases (DeprecatedAliasABCMeta). Setters accept `block` for
compatibility; ours always block.

Exceptions, one per vendor error (NVML's names): ZeusGPUInitError (the
library cannot start), ZeusGPUInvalidArgError (also a ValueError: a bad
argument or an unknown GPU index), ZeusGPUNotSupportedError,
ZeusGPUNoPermissionError (also a PermissionError: changing a setting needs
root, CAP_SYS_ADMIN, or the Zeus daemon), ZeusGPUNotFoundError,
ZeusGPULostError, ..., ZeusGPUUnknownError, and ZeusGPUHeterogeneousError
(get_gpus(ensure_homogeneous=True) over different models).
"""

from __future__ import annotations

import abc
from typing import Sequence

from zeus.device.common import DeprecatedAliasABCMeta, deprecated_alias, has_sys_admin
from zeus.device.exception import ZeusBaseGPUError


class ZeusGPUInitError(ZeusBaseGPUError):
    """The GPU library cannot be loaded or initialised, or the GPUs opened."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUInvalidArgError(ZeusBaseGPUError, ValueError):
    """A bad argument (also a ValueError), e.g. a limit out of range."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUNotSupportedError(ZeusBaseGPUError):
    """The GPU or this build does not support the call."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUNoPermissionError(ZeusBaseGPUError, PermissionError):
    """The call needs root (CAP_SYS_ADMIN) or the Zeus daemon (also a PermissionError)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUAlreadyInitializedError(ZeusBaseGPUError):
    """NVML_ERROR_ALREADY_INITIALIZED."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUNotFoundError(ZeusBaseGPUError):
    """NVML_ERROR_NOT_FOUND: no such GPU or object."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUInsufficientSizeError(ZeusBaseGPUError):
    """NVML_ERROR_INSUFFICIENT_SIZE."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUInsufficientPowerError(ZeusBaseGPUError):
    """NVML_ERROR_INSUFFICIENT_POWER: a power cable is not connected."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUDriverNotLoadedError(ZeusBaseGPUError):
    """NVML_ERROR_DRIVER_NOT_LOADED."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUTimeoutError(ZeusBaseGPUError):
    """NVML_ERROR_TIMEOUT."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUIRQError(ZeusBaseGPUError):
    """NVML_ERROR_IRQ_ISSUE."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPULibraryNotFoundError(ZeusBaseGPUError):
    """NVML_ERROR_LIBRARY_NOT_FOUND."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUFunctionNotFoundError(ZeusBaseGPUError):
    """NVML_ERROR_FUNCTION_NOT_FOUND: the driver is too old."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUCorruptedInfoROMError(ZeusBaseGPUError):
    """NVML_ERROR_CORRUPTED_INFOROM."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPULostError(ZeusBaseGPUError):
    """NVML_ERROR_GPU_IS_LOST: the GPU fell off the bus."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUResetRequiredError(ZeusBaseGPUError):
    """NVML_ERROR_RESET_REQUIRED."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUOperatingSystemError(ZeusBaseGPUError):
    """NVML_ERROR_OPERATING_SYSTEM."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPULibRMVersionMismatchError(ZeusBaseGPUError):
    """NVML_ERROR_LIB_RM_VERSION_MISMATCH: library and driver differ."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUMemoryError(ZeusBaseGPUError):
    """NVML_ERROR_MEMORY."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUUnknownError(ZeusBaseGPUError):
    """Any other error of the GPU library."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusGPUHeterogeneousError(ZeusBaseGPUError):
    """ensure_homogeneous=True over GPUs of different models."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class _UnknownGpuIndexError(ZeusGPUInvalidArgError, IndexError):
    """An index no GPU of this process has (also an IndexError, as indexing
    the original's list of GPUs raised)."""


class GPU(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """One GPU; `gpu_index` is its index in this process (CUDA order)."""

    def __init__(self, gpu_index: int) -> None:
        self.gpu_index = gpu_index

    @property
    @abc.abstractmethod
    def supports_nonblocking_setters(self) -> bool:
        """Whether setters honour block=False (return before the change)."""

    @deprecated_alias("getName")
    @abc.abstractmethod
    def get_name(self) -> str:
        """The GPU's model name."""

    @deprecated_alias("getPowerManagementLimitConstraints")
    @abc.abstractmethod
    def get_power_management_limit_constraints(self) -> tuple[int, int]:
        """(min, max) power limit, in mW."""

    @abc.abstractmethod
    def get_power_management_limit(self) -> int:
        """The power limit set now, in mW."""

    @deprecated_alias("setPowerManagementLimit")
    @abc.abstractmethod
    def set_power_management_limit(self, power_limit_mw: int, block: bool = True) -> None:
        """Sets the power limit, in mW."""

    @deprecated_alias("resetPowerManagementLimit")
    @abc.abstractmethod
    def reset_power_management_limit(self, block: bool = True) -> None:
        """Sets the board's default power limit."""

    @deprecated_alias("setPersistenceMode")
    @abc.abstractmethod
    def set_persistence_mode(self, enabled: bool, block: bool = True) -> None:
        """Enables or disables persistence mode."""

    @abc.abstractmethod
    def get_persistence_mode(self) -> bool:
        """Whether persistence mode is enabled."""

    @deprecated_alias("getSupportedMemoryClocks")
    @abc.abstractmethod
    def get_supported_memory_clocks(self) -> list[int]:
        """Supported memory clocks, in MHz."""

    @deprecated_alias("setMemoryLockedClocks")
    @abc.abstractmethod
    def set_memory_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        """Locks the memory clock to [min, max] MHz."""

    @deprecated_alias("resetMemoryLockedClocks")
    @abc.abstractmethod
    def reset_memory_locked_clocks(self, block: bool = True) -> None:
        """Unlocks the memory clock."""

    @deprecated_alias("getSupportedGraphicsClocks")
    @abc.abstractmethod
    def get_supported_graphics_clocks(self, memory_clock_mhz: int | None = None) -> list[int]:
        """Supported graphics clocks, in MHz."""

    @deprecated_alias("setGpuLockedClocks")
    @abc.abstractmethod
    def set_gpu_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        """Locks the graphics clock to [min, max] MHz."""

    @deprecated_alias("resetGpuLockedClocks")
    @abc.abstractmethod
    def reset_gpu_locked_clocks(self, block: bool = True) -> None:
        """Unlocks the graphics clock."""

    @deprecated_alias("getAveragePowerUsage")
    @abc.abstractmethod
    def get_average_power_usage(self) -> int:
        """Average board power, in mW."""

    @deprecated_alias("getInstantPowerUsage")
    @abc.abstractmethod
    def get_instant_power_usage(self) -> int:
        """Instant board power, in mW."""

    @deprecated_alias("getAverageMemoryPowerUsage")
    @abc.abstractmethod
    def get_average_memory_power_usage(self) -> int:
        """Average memory power, in mW."""

    @deprecated_alias("supportsGetTotalEnergyConsumption")
    @abc.abstractmethod
    def supports_get_total_energy_consumption(self) -> bool:
        """Whether the GPU has an energy counter (Volta and newer)."""

    @deprecated_alias("getTotalEnergyConsumption")
    @abc.abstractmethod
    def get_total_energy_consumption(self) -> int:
        """Energy since the driver loaded, in mJ."""

    @deprecated_alias("getGpuTemperature")
    @abc.abstractmethod
    def get_gpu_temperature(self) -> int:
        """GPU temperature, in degrees Celsius."""

    def reset_locked_clocks(self, block: bool = True) -> None:
        """Unlocks the graphics and the memory clocks."""
        self.reset_gpu_locked_clocks(block)
        self.reset_memory_locked_clocks(block)


class GPUs(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """The GPUs this process sees; methods take a GPU's index in `gpus` and
    forward to that GPU. An unknown index raises ZeusGPUInvalidArgError (also
    an IndexError, as indexing the original's list did)."""

    @abc.abstractmethod
    def __init__(self, ensure_homogeneous: bool = False) -> None:
        """Opens the GPUs; with ensure_homogeneous, ZeusGPUHeterogeneousError
        unless every GPU has the same name."""

    @property
    @abc.abstractmethod
    def gpus(self) -> Sequence[GPU]:
        """The GPU objects, by index."""

    def __len__(self) -> int:
        return len(self.gpus)

    def _gpu(self, gpu_index: int) -> GPU:
        gpus = self.gpus
        if isinstance(gpu_index, bool) or not isinstance(gpu_index, int):
            raise ZeusGPUInvalidArgError(
                f"zeus.device: GPU index must be an int, got {gpu_index!r}")
        if not 0 <= gpu_index < len(gpus):
            raise _UnknownGpuIndexError(
                f"zeus.device: no GPU with index {gpu_index}: this process sees "
                f"{len(gpus)} GPU(s) (indices 0..{len(gpus) - 1}, after CUDA_VISIBLE_DEVICES)")
        return gpus[gpu_index]

    def _ensure_homogeneous(self) -> None:
        names = [gpu.get_name() for gpu in self.gpus]
        if len(set(names)) > 1:
            raise ZeusGPUHeterogeneousError(f"Heterogeneous GPUs found: {names}")

    @deprecated_alias("getName")
    def get_name(self, gpu_index: int) -> str:
        """The GPU's model name."""
        return self._gpu(gpu_index).get_name()

    @deprecated_alias("getPowerManagementLimitConstraints")
    def get_power_management_limit_constraints(self, gpu_index: int) -> tuple[int, int]:
        """(min, max) power limit, in mW."""
        return self._gpu(gpu_index).get_power_management_limit_constraints()

    def get_power_management_limit(self, gpu_index: int) -> int:
        """The power limit set now, in mW."""
        return self._gpu(gpu_index).get_power_management_limit()

    @deprecated_alias("setPowerManagementLimit")
    def set_power_management_limit(self, gpu_index: int, power_limit_mw: int,
                                   block: bool = True) -> None:
        """Sets the power limit, in mW."""
        self._gpu(gpu_index).set_power_management_limit(power_limit_mw, block)

    @deprecated_alias("resetPowerManagementLimit")
    def reset_power_management_limit(self, gpu_index: int, block: bool = True) -> None:
        """Sets the board's default power limit."""
        self._gpu(gpu_index).reset_power_management_limit(block)

    @deprecated_alias("setPersistenceMode")
    def set_persistence_mode(self, gpu_index: int, enabled: bool, block: bool = True) -> None:
        """Enables or disables persistence mode."""
        self._gpu(gpu_index).set_persistence_mode(enabled, block)

    def get_persistence_mode(self, gpu_index: int) -> bool:
        """Whether persistence mode is enabled."""
        return self._gpu(gpu_index).get_persistence_mode()

    @deprecated_alias("getSupportedMemoryClocks")
    def get_supported_memory_clocks(self, gpu_index: int) -> list[int]:
        """Supported memory clocks, in MHz."""
        return self._gpu(gpu_index).get_supported_memory_clocks()

    @deprecated_alias("setMemoryLockedClocks")
    def set_memory_locked_clocks(self, gpu_index: int, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        """Locks the memory clock to [min, max] MHz."""
        self._gpu(gpu_index).set_memory_locked_clocks(min_clock_mhz, max_clock_mhz, block)

    @deprecated_alias("resetMemoryLockedClocks")
    def reset_memory_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Unlocks the memory clock."""
        self._gpu(gpu_index).reset_memory_locked_clocks(block)

    @deprecated_alias("getSupportedGraphicsClocks")
    def get_supported_graphics_clocks(self, gpu_index: int,
                                      memory_clock_mhz: int | None = None) -> list[int]:
        """Supported graphics clocks, in MHz."""
        return self._gpu(gpu_index).get_supported_graphics_clocks(memory_clock_mhz)

    @deprecated_alias("setGpuLockedClocks")
    def set_gpu_locked_clocks(self, gpu_index: int, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        """Locks the graphics clock to [min, max] MHz."""
        self._gpu(gpu_index).set_gpu_locked_clocks(min_clock_mhz, max_clock_mhz, block)

    @deprecated_alias("resetGpuLockedClocks")
    def reset_gpu_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Unlocks the graphics clock."""
        self._gpu(gpu_index).reset_gpu_locked_clocks(block)

    @deprecated_alias("getAveragePowerUsage")
    def get_average_power_usage(self, gpu_index: int) -> int:
        """Average board power, in mW."""
        return self._gpu(gpu_index).get_average_power_usage()

    @deprecated_alias("getInstantPowerUsage")
    def get_instant_power_usage(self, gpu_index: int) -> int:
        """Instant board power, in mW."""
        return self._gpu(gpu_index).get_instant_power_usage()

    @deprecated_alias("getAverageMemoryPowerUsage")
    def get_average_memory_power_usage(self, gpu_index: int) -> int:
        """Average memory power, in mW."""
        return self._gpu(gpu_index).get_average_memory_power_usage()

    @deprecated_alias("supportsGetTotalEnergyConsumption")
    def supports_get_total_energy_consumption(self, gpu_index: int) -> bool:
        """Whether the GPU has an energy counter (Volta and newer)."""
        return self._gpu(gpu_index).supports_get_total_energy_consumption()

    @deprecated_alias("getTotalEnergyConsumption")
    def get_total_energy_consumption(self, gpu_index: int) -> int:
        """Energy since the driver loaded, in mJ."""
        return self._gpu(gpu_index).get_total_energy_consumption()

    @deprecated_alias("getGpuTemperature")
    def get_gpu_temperature(self, gpu_index: int) -> int:
        """GPU temperature, in degrees Celsius."""
        return self._gpu(gpu_index).get_gpu_temperature()

    def reset_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Unlocks the graphics and the memory clocks of the GPU."""
        self._gpu(gpu_index).reset_locked_clocks(block)


class EmptyGPUs(GPUs):
    """No GPU: every per-GPU method raises ValueError."""

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        pass

    @property
    def gpus(self) -> Sequence["GPU"]:
        return []

    def __len__(self) -> int:
        return 0

    def _ensure_homogeneous(self) -> None:
        raise ValueError("No GPUs available to ensure homogeneity.")

    @deprecated_alias("getName")
    def get_name(self, gpu_index: int) -> str:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getPowerManagementLimitConstraints")
    def get_power_management_limit_constraints(self, gpu_index: int) -> tuple[int, int]:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    def get_power_management_limit(self, gpu_index: int) -> int:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("setPowerManagementLimit")
    def set_power_management_limit(self, gpu_index: int, power_limit_mw: int,
                                   block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("resetPowerManagementLimit")
    def reset_power_management_limit(self, gpu_index: int, block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("setPersistenceMode")
    def set_persistence_mode(self, gpu_index: int, enabled: bool, block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    def get_persistence_mode(self, gpu_index: int) -> bool:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getSupportedMemoryClocks")
    def get_supported_memory_clocks(self, gpu_index: int) -> list[int]:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("setMemoryLockedClocks")
    def set_memory_locked_clocks(self, gpu_index: int, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("resetMemoryLockedClocks")
    def reset_memory_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getSupportedGraphicsClocks")
    def get_supported_graphics_clocks(self, gpu_index: int,
                                      memory_clock_mhz: int | None = None) -> list[int]:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("setGpuLockedClocks")
    def set_gpu_locked_clocks(self, gpu_index: int, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("resetGpuLockedClocks")
    def reset_gpu_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getInstantPowerUsage")
    def get_instant_power_usage(self, gpu_index: int) -> int:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("supportsGetTotalEnergyConsumption")
    def supports_get_total_energy_consumption(self, gpu_index: int) -> bool:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getTotalEnergyConsumption")
    def get_total_energy_consumption(self, gpu_index: int) -> int:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    @deprecated_alias("getGpuTemperature")
    def get_gpu_temperature(self, gpu_index: int) -> int:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")

    def reset_locked_clocks(self, gpu_index: int, block: bool = True) -> None:
        """Raises ValueError: there is no GPU."""
        raise ValueError("No GPUs available.")
