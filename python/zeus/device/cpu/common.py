"""The vendor-neutral CPU classes: one CPU per socket, whose energy counters
are read as a CpuDramMeasurement (mJ, arbitrary origin)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Optional, Sequence

from zeus.device.common import DeprecatedAliasABCMeta, deprecated_alias
from zeus.device.exception import ZeusBaseCPUError


@dataclass
class CpuDramMeasurement:
    """Energy counters of one CPU socket, in mJ: the package (`cpu_mj`) and
    its DRAM (`dram_mj`, None when the socket has no DRAM zone)."""

    cpu_mj: float
    dram_mj: Optional[float] = None

    def __sub__(self, other: "CpuDramMeasurement") -> "CpuDramMeasurement":
        dram = None
        if self.dram_mj is not None and other.dram_mj is not None:
            dram = self.dram_mj - other.dram_mj
        return CpuDramMeasurement(cpu_mj=self.cpu_mj - other.cpu_mj, dram_mj=dram)

    def __truediv__(self, divisor) -> "CpuDramMeasurement":
        return CpuDramMeasurement(
            cpu_mj=self.cpu_mj / divisor,
            dram_mj=None if self.dram_mj is None else self.dram_mj / divisor)


class ZeusCPUInitError(ZeusBaseCPUError):
    """No CPU energy interface could be opened."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusCPUNoPermissionError(ZeusBaseCPUError):
    """The CPU energy counters are not readable by this process."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusCPUNotFoundError(ZeusBaseCPUError):
    """No such CPU."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class CPU(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """One CPU socket."""

    def __init__(self, cpu_index: int) -> None:
        self.cpu_index = cpu_index

    @deprecated_alias("getTotalEnergyConsumption")
    @abc.abstractmethod
    def get_total_energy_consumption(self) -> CpuDramMeasurement:
        """The package and DRAM counters, in mJ."""

    @deprecated_alias("supportsGetDramEnergyConsumption")
    @abc.abstractmethod
    def supports_get_dram_energy_consumption(self) -> bool:
        """Whether the socket has a DRAM zone."""


class CPUs(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """The CPU sockets; methods take a socket's index in `cpus`."""

    @abc.abstractmethod
    def __init__(self) -> None:
        """Opens the CPUs."""

    @property
    @abc.abstractmethod
    def cpus(self) -> Sequence[CPU]:
        """The CPU objects, by index."""

    def __len__(self) -> int:
        return len(self.cpus)

    def _cpu(self, index: int) -> CPU:
        cpus = self.cpus
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cpus):
            raise ZeusCPUNotFoundError(
                f"zeus.device: no CPU with index {index!r} (this machine has {len(cpus)})")
        return cpus[index]

    @deprecated_alias("getTotalEnergyConsumption")
    def get_total_energy_consumption(self, index: int) -> CpuDramMeasurement:
        """The counters of CPU `index`, in mJ."""
        return self._cpu(index).get_total_energy_consumption()

    @deprecated_alias("supportsGetDramEnergyConsumption")
    def supports_get_dram_energy_consumption(self, index: int) -> bool:
        """Whether CPU `index` has a DRAM zone."""
        return self._cpu(index).supports_get_dram_energy_consumption()


class EmptyCPUs(CPUs):
    """No CPU: every per-CPU method raises ValueError."""

    def __init__(self) -> None:
        pass

    @property
    def cpus(self) -> Sequence[CPU]:
        return []

    @deprecated_alias("getTotalEnergyConsumption")
    def get_total_energy_consumption(self, index: int) -> CpuDramMeasurement:
        raise ValueError("No CPUs available.")

    @deprecated_alias("supportsGetDramEnergyConsumption")
    def supports_get_dram_energy_consumption(self, index: int) -> bool:
        raise ValueError("No CPUs available.")
