"""CPUs: get_cpus() returns the CPU sockets whose energy can be read (RAPL
through the core on Linux)."""

from __future__ import annotations

import threading

from zeus.device.cpu.common import CPUs, ZeusCPUInitError
from zeus.device.cpu.emi import EMICPUs, emi_is_available
from zeus.device.cpu.rapl import rapl_is_available, RAPLCPUs

_cpus: CPUs | None = None
_lock = threading.Lock()


def get_cpus() -> CPUs:
    """The CPU sockets, opened once and shared. Raises ZeusCPUInitError when
    no CPU energy interface is available (no RAPL powercap directory, no EMI);
    the RAPL errors (ZeusRAPLPermissionError when the counters are root-only,
    ZeusRAPLNotSupportedError without a package zone) pass through."""
    global _cpus
    with _lock:
        if _cpus is None:
            if emi_is_available():
                _cpus = EMICPUs()
            elif rapl_is_available():
                _cpus = RAPLCPUs()
            else:
                raise ZeusCPUInitError(
                    "No supported CPU energy monitoring interface is available: RAPL needs "
                    "Linux with the intel-rapl powercap zones (/sys/class/powercap/intel-rapl) "
                    "or the Zeus daemon (ZEUSD_SOCK_PATH); EMI needs Windows.")
        return _cpus
