"""NVIDIA Jetson. jetson_is_available() detects a Jetson (Linux on aarch64
with the Tegra libraries or /etc/nv_tegra_release). Jetson() finds the
CPU, GPU and total power rails of the INA3221 monitors under
/sys/bus/i2c/drivers/ina3221x (a rail named by `in<i>_label` reads
`power<i>_input`, else `in<i>_input` x `curr<i>_input`; one named by
`rail_name_<i>` reads `in_power<i>_input`, else `in_voltage<i>_input` x
`in_current<i>_input`; a name holding "cpu" is the CPU rail, "gpu" the GPU
rail, "system", "_in" or "total" the total), and a thread integrates their
power (mW) into energy (mJ) every 0.1 s from its creation, as the original's
polling process does."""

from __future__ import annotations

import abc
import atexit
import enum
import os
import platform
import sys
import threading
import time
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
    """A Jetson's rail energies since the object was created, in mJ (a rail
    not found stays None), with named windows. ZeusJetsonInitError off a
    Jetson.

    Attributes (the original's): power_measurement (the DeviceMap of the
    rails found), available_metrics, measurement_states (window key ->
    JetsonMeasurement at its beginning), process (the integrating thread;
    None once stopped); command_queue and result_queue are None (the
    original's queues to its process: a thread needs none).
    Thread-safety: every method may be called from any thread."""

    def __init__(self) -> None:
        if not jetson_is_available():
            raise ZeusJetsonInitError("This machine is not an NVIDIA Jetson")
        self.power_measurement: DeviceMap = _discover_rails(Path(_INA3221_ROOT))
        self.available_metrics: Optional[set[str]] = None
        self.measurement_states: dict[str, JetsonMeasurement] = {}
        self.command_queue = self.result_queue = None
        self._lock = threading.Lock()
        self._energy_mj = {rail: 0.0 for rail in self.power_measurement}
        self._last_s = time.monotonic()
        self._stop_event = threading.Event()
        self.process: Optional[threading.Thread] = threading.Thread(
            target=self._integrate_forever, daemon=True, name="zeus Jetson rails")
        self.process.start()
        atexit.register(self._stop)

    def _advance(self) -> None:
        """Adds each rail's power now x the time since the last call."""
        with self._lock:
            now = time.monotonic()
            elapsed_s = now - self._last_s
            self._last_s = now
            for rail, reader in self.power_measurement.items():
                try:
                    self._energy_mj[rail] += reader.measure_power() * elapsed_s
                except (OSError, ValueError):
                    pass  # An unreadable sample adds nothing; the next may read.

    def _integrate_forever(self) -> None:
        while not self._stop_event.wait(_POLL_PERIOD_S):
            self._advance()

    def _stop(self) -> None:
        self._stop_event.set()
        if self.process is not None:
            self.process.join(timeout=1.0)
            self.process = None

    def get_available_metrics(self) -> set[str]:
        """The measured fields: cpu_energy_mj, gpu_energy_mj and/or
        total_energy_mj."""
        if self.available_metrics is None:
            self.available_metrics = {f"{rail[:-len('_power_mw')]}_energy_mj"
                                      for rail in self.power_measurement}
        return set(self.available_metrics)

    def get_total_energy_consumption(self, timeout: float = 15.0) -> JetsonMeasurement:
        """Each rail's energy since the object was created, in mJ (up to
        now). `timeout` is the original's wait for its process; unused."""
        self._advance()
        with self._lock:
            return JetsonMeasurement(
                cpu_energy_mj=self._energy_mj.get("cpu_power_mw"),
                gpu_energy_mj=self._energy_mj.get("gpu_power_mw"),
                total_energy_mj=self._energy_mj.get("total_power_mw"))

    def begin_window(self, key: str, restart: bool = False) -> None:
        """Opens window `key`; ValueError when it is open, unless `restart`."""
        start = self.get_total_energy_consumption()
        with self._lock:
            if key in self.measurement_states and not restart:
                raise ValueError(f"Measurement window '{key}' already exists")
            self.measurement_states[key] = start

    def end_window(self, key: str) -> JetsonMeasurement:
        """Closes window `key` and returns each rail's energy in it (mJ);
        ValueError when it is not open."""
        end = self.get_total_energy_consumption()
        with self._lock:
            start = self.measurement_states.pop(key, None)
        if start is None:
            raise ValueError(f"Measurement window '{key}' does not exist")
        return JetsonMeasurement(**{
            name: None if getattr(end, name) is None else getattr(end, name) - getattr(start, name)
            for name in ("cpu_energy_mj", "gpu_energy_mj", "total_energy_mj")})

    def __del__(self):
        try:
            self._stop()
        except Exception:
            pass


# Where the INA3221 power monitors are; the integration period.
_INA3221_ROOT = "/sys/bus/i2c/drivers/ina3221x"
_POLL_PERIOD_S = 0.1


def _rail_key(name: str) -> Optional[str]:
    """The DeviceMap key of a rail named `name`; None for another rail."""
    lower = name.lower()
    if "cpu" in lower:
        return "cpu_power_mw"
    if "gpu" in lower:
        return "gpu_power_mw"
    if "system" in lower or "_in" in lower or "total" in lower:
        return "total_power_mw"
    return None


def _rail_reader(power: Path, voltage: Path, current: Path) -> Optional[PowerMeasurementStrategy]:
    if check_file(power):
        return DirectPower(power)
    if check_file(voltage) and check_file(current):
        return VoltageCurrentProduct(voltage, current)
    return None


def _discover_rails(root: Path) -> DeviceMap:
    """The CPU, GPU and total rails of the INA3221 monitors under `root`
    (<root>/<device>/<hwmon or iio dir>/...; see the module doc)."""
    rails: dict = {}
    for directory in sorted(p for p in root.glob("*/*") if p.is_dir()):
        found = []
        for label in sorted(directory.glob("in*_label")):
            index = label.name[len("in"):-len("_label")]
            found.append((label, directory / f"power{index}_input", directory / f"in{index}_input",
                          directory / f"curr{index}_input"))
        for label in sorted(directory.glob("rail_name_*")):
            index = label.name[len("rail_name_"):]
            found.append((label, directory / f"in_power{index}_input",
                          directory / f"in_voltage{index}_input",
                          directory / f"in_current{index}_input"))
        for label, power, voltage, current in found:
            try:
                key = _rail_key(label.read_text().strip())
            except OSError:
                continue
            reader = _rail_reader(power, voltage, current) if key else None
            if reader is not None:
                rails[key] = reader
    return rails
