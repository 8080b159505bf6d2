"""NVIDIA Jetson. jetson_is_available() detects a Jetson (Linux on aarch64
with the Tegra libraries or /etc/nv_tegra_release); the power readers
(DirectPower, VoltageCurrentProduct) read sysfs files. Jetson() itself,
which integrates the rails in a background process, is not implemented by
this build: it raises ZeusJetsonInitError, on a Jetson too."""

from __future__ import annotations

import abc
import enum
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TypedDict

from zeus.device.soc.common import SoC, SoCMeasurement, ZeusSoCInitError


class ZeusJetsonInitError(ZeusSoCInitError):
    """A Jetson cannot be measured here."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def check_file(path: Path) -> bool:
    """Whether `path` is an existing regular file."""
    return Path(path).is_file()


class PowerMeasurementStrategy(abc.ABC):
    """How one rail's power is read, in mW."""

    @abc.abstractmethod
    def measure_power(self) -> float:
        """The rail's power now, in mW."""


def _read_number(path: Path) -> float:
    with open(path) as f:
        return float(f.read().strip())


class DirectPower(PowerMeasurementStrategy):
    """A rail with a power file (mW)."""

    def __init__(self, power_path: Path) -> None:
        self.power_path = Path(power_path)

    def measure_power(self) -> float:
        return _read_number(self.power_path)


class VoltageCurrentProduct(PowerMeasurementStrategy):
    """A rail with voltage (mV) and current (mA) files: power = V * I / 1000."""

    def __init__(self, voltage_path: Path, current_path: Path) -> None:
        self.voltage_path = Path(voltage_path)
        self.current_path = Path(current_path)

    def measure_power(self) -> float:
        return _read_number(self.voltage_path) * _read_number(self.current_path) / 1000.0


@dataclass
class JetsonMeasurement(SoCMeasurement):
    """Energy of a Jetson's rails, in mJ (None: not measured)."""

    cpu_energy_mj: Optional[float] = None
    gpu_energy_mj: Optional[float] = None
    total_energy_mj: Optional[float] = None

    def zero_all_fields(self) -> None:
        for name in ("cpu_energy_mj", "gpu_energy_mj", "total_energy_mj"):
            if getattr(self, name) is not None:
                setattr(self, name, 0.0)


class DeviceMap(TypedDict):
    """The power reader of each rail."""

    cpu_power_mw: PowerMeasurementStrategy
    gpu_power_mw: PowerMeasurementStrategy
    total_power_mw: PowerMeasurementStrategy


class Command(enum.Enum):
    """Commands to the measuring process."""

    READ = "read"
    STOP = "stop"


def jetson_is_available() -> bool:
    """Whether this machine is an NVIDIA Jetson."""
    if sys.platform != "linux" or platform.machine() != "aarch64":
        return False
    return (os.path.exists("/usr/lib/aarch64-linux-gnu/tegra")
            or os.path.exists("/etc/nv_tegra_release"))


class Jetson(SoC):
    """A Jetson's energy: not implemented by this build (ZeusJetsonInitError)."""

    def __init__(self) -> None:
        self.available_metrics: set[str] = set()
        if not jetson_is_available():
            raise ZeusJetsonInitError("This machine is not an NVIDIA Jetson")
        raise ZeusJetsonInitError("Jetson energy measurement is not implemented by this build "
                                  "of Zeus")

    def get_available_metrics(self) -> set[str]:
        return set(self.available_metrics)

    def get_total_energy_consumption(self, timeout: float = 15.0) -> JetsonMeasurement:
        raise ZeusJetsonInitError("Jetson is not available")

    def begin_window(self, key: str, restart: bool = False) -> None:
        raise ZeusJetsonInitError("Jetson is not available")

    def end_window(self, key: str) -> JetsonMeasurement:
        raise ZeusJetsonInitError("Jetson is not available")
