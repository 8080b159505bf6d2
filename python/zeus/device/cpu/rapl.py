"""Intel/AMD RAPL CPUs through the Zeus core (powercap sysfs, wraparound
corrected by the core; with ZEUSD_SOCK_PATH set, the Zeus daemon reads the
root-only counters). Energies in mJ."""

from __future__ import annotations

import atexit
import ctypes
import multiprocessing
import os
import threading
from typing import Literal, Sequence, Union

from zeus import _lib
from zeus.device.exception import ZeusBaseCPUError
from zeus.exception import ZeusError
import zeus.device.cpu.common as cpu_common

RAPL_DIR = "/sys/class/powercap/intel-rapl"
CONTAINER_RAPL_DIR = "/zeus_sys/class/powercap/intel-rapl"
# Largest plausible counter increase between two reads (uJ): 1000 W for 0.1 s.
RAPL_COUNTER_MAX_INCREASE = 1000 * 1000000.0 * 0.1


class ZeusRAPLNotSupportedError(ZeusBaseCPUError):
    """This machine has no RAPL package zone."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusRAPLFileInitError(ZeusBaseCPUError):
    """A RAPL zone could not be opened or read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusRAPLPermissionError(cpu_common.ZeusCPUNoPermissionError):
    """The RAPL counters are root-only (Linux 5.10 and newer)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def rapl_dir() -> str:
    """The directory of RAPL zones (`intel-rapl:N`) the core reads, for
    get_cpus() and ZeusMonitor alike: RAPL_DIR, else the container mount."""
    if not os.path.exists(RAPL_DIR) and os.path.exists(CONTAINER_RAPL_DIR):
        return CONTAINER_RAPL_DIR
    return RAPL_DIR


def rapl_is_available() -> bool:
    """Whether RAPL can be asked: the powercap directory exists (or the Zeus
    daemon reads it for us, ZEUSD_SOCK_PATH)."""
    return bool(os.environ.get("ZEUSD_SOCK_PATH")) or os.path.isdir(rapl_dir())


class RaplWraparoundTracker:
    """Counts the wraparounds of one RAPL energy counter file (uJ) whose
    range is `max_energy_uj`: a thread reads the file every second, every
    0.1 s once the counter is within RAPL_COUNTER_MAX_INCREASE of its range,
    and counts each read lower than the one before. ValueError when the
    file does not exist. The CPUs of get_cpus() do not need one: the core
    corrects the wraps of what they read.

    Attributes: rapl_file_path, max_energy_uj, wraparound_counter (a
    multiprocessing.Value("i"), as the original's), process (the polling
    thread; None once stopped)."""

    def __init__(self, rapl_file_path: str, max_energy_uj: float) -> None:
        if not os.path.exists(rapl_file_path):
            raise ValueError(f"{rapl_file_path} is not a valid file path")
        self.rapl_file_path = rapl_file_path
        self.max_energy_uj = max_energy_uj
        self.wraparound_counter = multiprocessing.Value("i", 0)
        self._stop_event = threading.Event()
        last_uj = self._read_uj()
        self.process = threading.Thread(target=self._poll, args=(last_uj,), daemon=True,
                                        name=f"zeus RAPL wraparound {rapl_file_path}")
        self.process.start()
        atexit.register(self._stop)

    def _read_uj(self) -> float:
        with open(self.rapl_file_path) as f:
            return float(f.read().strip())

    def _poll(self, last_uj: float) -> None:
        while True:
            period_s = 0.1 if self.max_energy_uj - last_uj < RAPL_COUNTER_MAX_INCREASE else 1.0
            if self._stop_event.wait(period_s):
                return
            try:
                energy_uj = self._read_uj()
            except (OSError, ValueError):
                continue  # A read that failed counts nothing; the next may succeed.
            if energy_uj < last_uj:
                with self.wraparound_counter.get_lock():
                    self.wraparound_counter.value += 1
            last_uj = energy_uj

    def _stop(self) -> None:
        self._stop_event.set()
        if self.process is not None:
            self.process.join(timeout=1.0)
            self.process = None

    def get_num_wraparounds(self) -> int:
        """The wraparounds counted so far."""
        with self.wraparound_counter.get_lock():
            return self.wraparound_counter.value


def get_current_rapl_zone_id(pid: Union[int, Literal["current"]] = "current") -> int:
    """The RAPL package (socket) of the CPU that `pid` last ran on."""
    path = "/proc/self/stat" if pid == "current" else f"/proc/{int(pid)}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = int(fields[36])  # Field 39 of stat(5), counted after "pid (comm)".
    with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id") as f:
        return int(f.read().strip())


class RAPLFile:
    """One RAPL zone directory: read() is its energy counter in mJ plus the
    wraps its RaplWraparoundTracker counted (x max_energy_range_uj), as the
    original's; last_energy is the counter when opened, uJ."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.energy_uj_path = os.path.join(path, "energy_uj")
        try:
            with open(os.path.join(path, "name")) as f:
                self.name = f.read().strip()
            with open(os.path.join(path, "max_energy_range_uj")) as f:
                self.max_energy_range_uj = float(f.read().strip())
        except OSError as e:
            raise ZeusRAPLFileInitError(f"RAPL zone {path}: {e}") from e
        self.last_energy = self._read_uj()
        self._tracker = RaplWraparoundTracker(self.energy_uj_path, self.max_energy_range_uj)

    @property
    def wraparound_tracker(self) -> RaplWraparoundTracker:
        return self._tracker

    def _read_uj(self) -> float:
        try:
            with open(self.energy_uj_path) as f:
                return float(f.read().strip())
        except PermissionError as e:
            raise ZeusRAPLPermissionError(
                f"{self.energy_uj_path}: permission denied (RAPL is root-only since Linux "
                "5.10)") from e
        except (OSError, ValueError) as e:
            raise ZeusRAPLFileInitError(f"{self.energy_uj_path}: {e}") from e

    def read(self) -> float:
        wraps = self._tracker.get_num_wraparounds()
        return (self._read_uj() + wraps * self.max_energy_range_uj) / 1000.0


class _Handle:
    """One zeus_cpus handle of the core."""

    def __init__(self, root: str) -> None:
        self.lib = _lib.lib()
        handle = ctypes.c_void_p()
        try:
            _lib.call(self.lib.zeus_cpus_open, _lib.options_json({"powercap_root": root}),
                      ctypes.byref(handle))
        except ZeusError as e:
            raise _cpu_error(e) from e
        self.handle = handle
        self.sockets = []
        socket, has_dram = ctypes.c_int32(0), ctypes.c_int32(0)
        for position in range(self.lib.zeus_cpus_count(handle)):
            self.lib.zeus_cpus_info(handle, position, ctypes.byref(socket), ctypes.byref(has_dram))
            self.sockets.append((socket.value, bool(has_dram.value)))

    def energy_uj(self, position: int):
        package, dram = ctypes.c_uint64(0), ctypes.c_uint64(0)
        try:
            _lib.call(self.lib.zeus_cpus_energy_uj, self.handle, position, ctypes.byref(package),
                      ctypes.byref(dram))
        except ZeusError as e:
            raise _cpu_error(e) from e
        return package.value, dram.value

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None:
            self.lib.zeus_cpus_destroy(handle)
            self.handle = None


def _cpu_error(error: ZeusError) -> ZeusBaseCPUError:
    if error.code == 4:
        return ZeusRAPLPermissionError(str(error))
    return ZeusRAPLFileInitError(str(error))


class RAPLCPU(cpu_common.CPU):
    """One CPU socket's RAPL package zone (and its DRAM zone). `rapl_dir` is
    the directory holding the intel-rapl:N zones."""

    def __init__(self, cpu_index: int, rapl_dir: str) -> None:
        super().__init__(cpu_index)
        self.rapl_dir = rapl_dir
        self._attach(_Handle(rapl_dir), None)

    @classmethod
    def _on(cls, cpu_index: int, rapl_dir: str, handle: _Handle, position: int) -> "RAPLCPU":
        """The CPU at `position` of an open handle (RAPLCPUs shares one)."""
        cpu = cls.__new__(cls)
        cpu_common.CPU.__init__(cpu, cpu_index)
        cpu.rapl_dir = rapl_dir
        cpu._attach(handle, position)
        return cpu

    def _attach(self, handle: _Handle, position) -> None:
        self._handle = handle
        if position is None:
            sockets = [s for s, _ in handle.sockets]
            if self.cpu_index not in sockets:
                raise cpu_common.ZeusCPUNotFoundError(
                    f"RAPLCPU: no RAPL package zone of socket {self.cpu_index} in "
                    f"{self.rapl_dir} (sockets found: {sockets})")
            position = sockets.index(self.cpu_index)
        self._position = position
        self.dram_available = handle.sockets[position][1]

    def get_total_energy_consumption(self) -> cpu_common.CpuDramMeasurement:
        package_uj, dram_uj = self._handle.energy_uj(self._position)
        return cpu_common.CpuDramMeasurement(
            cpu_mj=package_uj / 1000.0, dram_mj=dram_uj / 1000.0 if self.dram_available else None)

    def supports_get_dram_energy_consumption(self) -> bool:
        return self.dram_available


class ZeusdRAPLCPU(RAPLCPU):
    """A RAPLCPU read through the Zeus daemon: with a `client` (a
    zeus.utils.zeusd.ZeusdClient, Unix socket or TCP), each read is its
    get_cpu_energy for this socket (the daemon's counters, uJ, as mJ); with
    client None (RAPLCPUs under ZEUSD_SOCK_PATH), the core reads through
    ZEUSD_SOCK_PATH."""

    def __init__(self, cpu_index: int, client) -> None:
        if client is None:
            if not os.environ.get("ZEUSD_SOCK_PATH"):
                raise ZeusRAPLFileInitError(
                    "ZeusdRAPLCPU: pass a ZeusdClient, or set ZEUSD_SOCK_PATH to the Zeus "
                    "daemon's socket")
            super().__init__(cpu_index, rapl_dir())
            self._client = None
            return
        cpu_common.CPU.__init__(self, cpu_index)
        self.rapl_dir = None
        self._client = client
        served = {c.id: c.dram_available for c in client.cpus}
        if cpu_index not in served:
            raise cpu_common.ZeusCPUNotFoundError(
                f"ZeusdRAPLCPU: the Zeus daemon at {client.endpoint} serves no CPU {cpu_index} "
                f"(CPUs: {sorted(served)})")
        self.dram_available = served[cpu_index]

    def get_total_energy_consumption(self) -> cpu_common.CpuDramMeasurement:
        if self._client is None:
            return super().get_total_energy_consumption()
        result = self._client.get_cpu_energy([self.cpu_index], cpu=True,
                                             dram=self.dram_available)[self.cpu_index]
        dram_uj = result.dram_energy_uj if self.dram_available else None
        return cpu_common.CpuDramMeasurement(
            cpu_mj=(result.cpu_energy_uj or 0) / 1000.0,
            dram_mj=None if dram_uj is None else dram_uj / 1000.0)


class RAPLCPUs(cpu_common.CPUs):
    """Every CPU socket with a RAPL package zone, by socket order."""

    def __init__(self) -> None:
        self.rapl_dir = rapl_dir()
        if not os.environ.get("ZEUSD_SOCK_PATH") and not os.path.isdir(self.rapl_dir):
            raise ZeusRAPLNotSupportedError(f"RAPL is not supported: no {self.rapl_dir}")
        handle = _Handle(self.rapl_dir)
        if not handle.sockets:
            raise ZeusRAPLNotSupportedError(
                f"RAPL is not supported: no package zone (intel-rapl:N) in {self.rapl_dir}")
        cls = ZeusdRAPLCPU if os.environ.get("ZEUSD_SOCK_PATH") else RAPLCPU
        self._cpus = [cls._on(socket, self.rapl_dir, handle, i)
                      for i, (socket, _) in enumerate(handle.sockets)]

    @property
    def cpus(self) -> Sequence[RAPLCPU]:
        return self._cpus
