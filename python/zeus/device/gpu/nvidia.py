"""NVIDIA GPUs through the Zeus core (NVML, loaded by libzeus_c.so).

The classes here that reach the core (_CoreGPU, _CoreGPUs, on the handle of
zeus.device.gpu._core) are vendor-neutral: zeus.device.gpu.amd builds
AMDGPU/AMDGPUs on them. The core
drives one GPU vendor per process (NVML first, then AMD SMI: the first
backend that finds GPUs), so NVIDIAGPUs cannot be opened where the core uses
AMD SMI, and AMDGPUs not where it uses NVML.

Every call goes to the core's Gpu of the GPU, so the core's rules apply:
ZEUS_NVML_LIBRARY picks the library, CUDA_VISIBLE_DEVICES the GPUs and their
order, ZEUS_DRY_RUN makes every setter log the change instead of making it,
and with ZEUSD_SOCK_PATH set the setters are relayed to the Zeus daemon
(which has the privilege) and the GPUs are ZeusdNVIDIAGPU objects; with
ZEUSD_HOST_PORT set instead (zeusd over TCP), get_gpus() returns
ZeusdNVIDIAGPU objects whose setters are requests of a
zeus.utils.zeusd.ZeusdClient, as ZeusdNVIDIAGPU(index, client) makes.

Restore on exit (a difference from the original, which leaves changed
settings in place): power limits, persistence modes and clock locks changed
through these objects stay while the process runs (dropping the objects does
not undo them) and are put back when it exits (atexit, also after an uncaught
exception), power limits also on SIGINT/SIGTERM/SIGHUP, like the power-limit
optimizer's; NVIDIAGPUs.restore() and close() put them back at once. Set
ZEUS_DEVICE_RESTORE_ON_EXIT=0 before the GPUs are opened to keep the changes
(values: 1/true/yes/on or 0/false/no/off; anything else is
ZeusGPUInvalidArgError).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import logging
import os
import threading
import warnings
from typing import Sequence

from zeus.device.exception import ZeusdError
# Re-exported: RESTORE_ENV is public; amd and zeus.device.gpu reach the rest here.
from zeus.device.gpu._core import (RESTORE_ENV, _Handle, _backend_available,  # noqa: F401
                                   _uint, _zeusd_socket)
import zeus.device.gpu.common as gpu_common

logger = logging.getLogger(__name__)

_DEVICE_INSTANT, _DEVICE_AVERAGE, _MEMORY_AVERAGE = 0, 1, 2

def nvml_is_available() -> bool:
    """Whether NVML loads and initialises (through the core) and the core
    does not use another vendor's GPUs."""
    return _backend_available("nvml")


class _CoreGPU(gpu_common.GPU):
    """One GPU of the core's backend `_BACKEND`, `gpu_index` in its runtime's
    order (NVIDIA: CUDA order; AMD: HIP order)."""

    _BACKEND = "nvml"

    def __init__(self, gpu_index: int) -> None:
        super().__init__(gpu_index)
        self._attach(_Handle(self._BACKEND))

    @classmethod
    def _on(cls, gpu_index: int, handle: _Handle) -> "_CoreGPU":
        """The GPU `gpu_index` of an open handle (the GPUs object shares one)."""
        gpu = cls.__new__(cls)
        gpu_common.GPU.__init__(gpu, gpu_index)
        gpu._attach(handle)
        return gpu

    def _attach(self, handle: _Handle) -> None:
        self._handle = handle
        if isinstance(self.gpu_index, bool) or not isinstance(self.gpu_index, int) or \
                not 0 <= self.gpu_index < len(handle.infos):
            raise gpu_common._UnknownGpuIndexError(
                f"zeus.device: no GPU with index {self.gpu_index!r}: this process sees "
                f"{len(handle.infos)} GPU(s)")
        self._info = handle.infos[self.gpu_index]

    def _static(self, key: str):
        value = self._info.get(key)
        if value is None:
            raise gpu_common.ZeusGPUNotSupportedError(
                f"zeus.device: GPU {self.gpu_index}: {key} could not be read when the GPU "
                "was opened")
        return value

    def _read(self, name: str, ctype):
        value = ctype(0)
        self._handle.call(name, self.gpu_index, ctypes.byref(value))
        return value.value

    def _clocks(self, name: str, *args) -> list[int]:
        """The clock list zeus_gpus_`name`(handle, gpu, *args, ...) returns,
        in MHz."""
        capacity = 64
        while True:
            clocks = (ctypes.c_uint32 * capacity)()
            count = ctypes.c_size_t(0)
            self._handle.call(name, self.gpu_index, *args, clocks, capacity, ctypes.byref(count))
            if count.value <= capacity:
                return list(clocks[:count.value])
            capacity = count.value

    @property
    def supports_nonblocking_setters(self) -> bool:
        return False

    def get_name(self) -> str:
        return self._static("name")

    def get_gpu_uuid(self) -> str:
        """(extra) The backend's UUID of the GPU (NVML: "GPU-...")."""
        return self._static("uuid")

    def get_power_management_limit_constraints(self) -> tuple[int, int]:
        return (self._static("min_power_limit_mw"), self._static("max_power_limit_mw"))

    def get_power_management_limit(self) -> int:
        return self._read("power_limit_mw", ctypes.c_uint32)

    def get_default_power_management_limit(self) -> int:
        """(extra) The board's default power limit, in mW."""
        return self._read("default_power_limit_mw", ctypes.c_uint32)

    def set_power_management_limit(self, power_limit_mw: int, block: bool = True) -> None:
        self._handle.call("set_power_limit_mw", self.gpu_index, _uint(power_limit_mw,
                                                                     "power_limit_mw"),
                          setter=True)

    def reset_power_management_limit(self, block: bool = True) -> None:
        self._handle.call("reset_power_limit", self.gpu_index, setter=True)

    def set_persistence_mode(self, enabled: bool, block: bool = True) -> None:
        self._handle.call("set_persistence_mode", self.gpu_index, 1 if enabled else 0,
                          setter=True)

    def get_persistence_mode(self) -> bool:
        return bool(self._read("persistence_mode", ctypes.c_int32))

    def get_supported_memory_clocks(self) -> list[int]:
        """The memory clocks this GPU supports, in MHz, highest first (the
        core's list: NVML's nvmlDeviceGetSupportedMemoryClocks, AMD SMI's
        memory DPM levels). ZeusGPUNotSupportedError where the GPU cannot
        list them."""
        return self._clocks("supported_memory_clocks_mhz")

    def set_memory_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        self._handle.call("set_locked_clocks", self.gpu_index, 1,
                          _uint(min_clock_mhz, "min_clock_mhz"),
                          _uint(max_clock_mhz, "max_clock_mhz"), setter=True)

    def reset_memory_locked_clocks(self, block: bool = True) -> None:
        self._handle.call("reset_locked_clocks", self.gpu_index, 1, setter=True)

    def get_supported_graphics_clocks(self, memory_clock_mhz: int | None = None) -> list[int]:
        """The graphics clocks this GPU supports at the memory clock
        `memory_clock_mhz`, in MHz, highest first (NVML's
        nvmlDeviceGetSupportedGraphicsClocks through the core). None (or 0):
        at the supported memory clock nearest the current one. A memory
        clock the GPU does not support raises ZeusGPUNotFoundError naming it
        (NVML answers NVML_ERROR_NOT_FOUND there)."""
        memory = 0 if memory_clock_mhz is None else _uint(memory_clock_mhz, "memory_clock_mhz")
        return self._clocks("supported_graphics_clocks_at_mhz", memory)

    def set_gpu_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        self._handle.call("set_locked_clocks", self.gpu_index, 0,
                          _uint(min_clock_mhz, "min_clock_mhz"),
                          _uint(max_clock_mhz, "max_clock_mhz"), setter=True)

    def reset_gpu_locked_clocks(self, block: bool = True) -> None:
        self._handle.call("reset_locked_clocks", self.gpu_index, 0, setter=True)

    def _domain_power_mw(self, domain: int) -> int:
        value = ctypes.c_uint32(0)
        self._handle.call("domain_power_mw", self.gpu_index, domain, ctypes.byref(value))
        return value.value

    def get_average_power_usage(self) -> int:
        """Board power averaged over about 1 s (NVML field
        NVML_FI_DEV_POWER_AVERAGE), in mW."""
        return self._domain_power_mw(_DEVICE_AVERAGE)

    def get_instant_power_usage(self) -> int:
        """Instant board power (NVML field NVML_FI_DEV_POWER_INSTANT where the
        core reads fields), in mW."""
        return self._domain_power_mw(_DEVICE_INSTANT)

    def get_average_memory_power_usage(self) -> int:
        """Memory power averaged over about 1 s, in mW (Hopper and newer;
        ZeusGPUNotSupportedError elsewhere). Warns when NVML answers 0."""
        power_mw = self._domain_power_mw(_MEMORY_AVERAGE)
        if power_mw == 0:
            warnings.warn("Average memory power returned 0: this GPU may not support it.",
                          stacklevel=2)
        return power_mw

    def supports_get_total_energy_consumption(self) -> bool:
        return bool(self._info.get("has_energy_counter"))

    def get_total_energy_consumption(self) -> int:
        return self._read("energy_mj", ctypes.c_uint64)

    def get_gpu_temperature(self) -> int:
        """GPU die temperature, in degrees Celsius."""
        return self._read("temperature_c", ctypes.c_int32)


class NVIDIAGPU(_CoreGPU):
    """One NVIDIA GPU, `gpu_index` in CUDA order (after CUDA_VISIBLE_DEVICES)."""

    _BACKEND = "nvml"

    @property
    def handle(self):
        """The GPU's pynvml handle (nvidia-ml-py), for the user's own pynvml
        calls, as the original's attribute: found by the GPU's UUID after
        pynvml.nvmlInit(). The core reaches NVML without pynvml, so where
        nvidia-ml-py is not importable this raises ZeusGPULibraryNotFoundError
        saying so."""
        cached = getattr(self, "_pynvml_handle", None)
        if cached is not None:
            return cached
        try:
            import pynvml
        except ImportError:
            raise gpu_common.ZeusGPULibraryNotFoundError(
                f"zeus.device: GPU {self.gpu_index}: .handle is a pynvml handle, and pynvml "
                "(the nvidia-ml-py package) is not importable here; install nvidia-ml-py to "
                "make your own NVML calls (Zeus itself does not need it)") from None
        pynvml.nvmlInit()
        self._pynvml_handle = pynvml.nvmlDeviceGetHandleByUUID(self.get_gpu_uuid())
        return self._pynvml_handle


def _daemon_index(gpu_index: int) -> int:
    """The daemon's index of this process's GPU `gpu_index`: its entry of
    CUDA_VISIBLE_DEVICES when that lists integers (zeusd numbers every GPU
    of the machine), else `gpu_index`."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        entries = [e.strip() for e in visible.split(",")]
        if all(e.isdigit() for e in entries) and gpu_index < len(entries):
            return int(entries[gpu_index])
    return gpu_index


_relay_queue = None
_relay_queue_lock = threading.Lock()


def _forget_relay_queue() -> None:
    """In a forked child: the parent's worker thread and lock state do not
    come along, so the child makes its own on first use."""
    global _relay_queue, _relay_queue_lock
    _relay_queue = None
    _relay_queue_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_relay_queue)


def _relay_queue_executor():
    """The one worker of this process that runs the core relay's changes in
    order (created on first use; the interpreter joins it at exit, before
    exit hooks restore)."""
    global _relay_queue
    with _relay_queue_lock:
        if _relay_queue is None:
            _relay_queue = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="zeusd-relay")
        return _relay_queue


def _log_relay_failure(future) -> None:
    error = future.exception()
    if error is not None:
        logger.error("zeus.device: a non-blocking change through the Zeus daemon failed: %s",
                     error)


class _ZeusdRelayed:
    """Mixin for a vendor's GPU whose setters go to the Zeus daemon (reads
    stay local, as in the original). With a `client` (a
    zeus.utils.zeusd.ZeusdClient, over the Unix socket or TCP), every setter
    is a request of that client, for the daemon's index of this GPU (see
    _daemon_index); changes made so are the daemon's to keep or put back,
    not this process's restore on exit. With client None (get_gpus under
    ZEUSD_SOCK_PATH), the core relays the setters to ZEUSD_SOCK_PATH, and the
    daemon puts them back when this process ends, however it ends.

    Setters honour `block` either way: block=False returns at once and the
    change follows (through the client, the daemon applies it after
    answering; through the core relay, one worker thread of this process
    sends the changes in the order they were made, and a failure is logged,
    as the daemon's own is). A blocking setter waits for the changes made
    before it."""

    def __init__(self, gpu_index: int, client) -> None:
        if client is None and _zeusd_socket() is None:
            raise ZeusdError(f"{type(self).__name__}: pass a ZeusdClient, or set "
                             "ZEUSD_SOCK_PATH to the Zeus daemon's socket")
        super().__init__(gpu_index)
        self._client = client

    @classmethod
    def _on(cls, gpu_index: int, handle, client=None):
        gpu = super()._on(gpu_index, handle)
        gpu._client = client
        return gpu

    @property
    def supports_nonblocking_setters(self) -> bool:
        return True

    def _relay(self, method: str, *args, block: bool = True):
        """Calls ZeusdClient.`method`([daemon index], *args, block=block)."""
        getattr(self._client, method)([_daemon_index(self.gpu_index)], *args, block=block)

    @staticmethod
    def _through_core(setter, *args, block: bool = True):
        """Runs `setter(*args, True)` (the core relay, which waits for the
        daemon) on the relay worker; waits for it when `block`."""
        future = _relay_queue_executor().submit(setter, *args, True)
        if block:
            return future.result()
        future.add_done_callback(_log_relay_failure)
        return None

    def set_power_management_limit(self, power_limit_mw: int, block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().set_power_management_limit, power_limit_mw,
                                      block=block)
        self._relay("set_power_limit", _uint(power_limit_mw, "power_limit_mw"), block=block)

    def reset_power_management_limit(self, block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().reset_power_management_limit, block=block)
        self._relay("set_power_limit", self.get_default_power_management_limit(), block=block)

    def set_persistence_mode(self, enabled: bool, block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().set_persistence_mode, enabled, block=block)
        self._relay("set_persistence_mode", bool(enabled), block=block)

    def set_memory_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                                 block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().set_memory_locked_clocks, min_clock_mhz,
                                      max_clock_mhz, block=block)
        self._relay("set_mem_locked_clocks", _uint(min_clock_mhz, "min_clock_mhz"),
                    _uint(max_clock_mhz, "max_clock_mhz"), block=block)

    def reset_memory_locked_clocks(self, block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().reset_memory_locked_clocks, block=block)
        self._relay("reset_mem_locked_clocks", block=block)

    def set_gpu_locked_clocks(self, min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().set_gpu_locked_clocks, min_clock_mhz,
                                      max_clock_mhz, block=block)
        self._relay("set_gpu_locked_clocks", _uint(min_clock_mhz, "min_clock_mhz"),
                    _uint(max_clock_mhz, "max_clock_mhz"), block=block)

    def reset_gpu_locked_clocks(self, block: bool = True) -> None:
        if self._client is None:
            return self._through_core(super().reset_gpu_locked_clocks, block=block)
        self._relay("reset_gpu_locked_clocks", block=block)

    def reset_locked_clocks(self, block: bool = True) -> None:
        """Unlocks both clock domains: one request to the daemon with a
        client (zeusd's reset_locked_clocks), else the vendor's own reset
        through the core relay."""
        if self._client is None:
            return super().reset_locked_clocks(block)
        self._relay("reset_locked_clocks", block=block)


class ZeusdNVIDIAGPU(_ZeusdRelayed, NVIDIAGPU):
    """An NVIDIAGPU whose setters go through the Zeus daemon."""


class _CoreGPUs(gpu_common.GPUs):
    """The GPUs of this process on the core's backend `_BACKEND`, made of
    `_GPU` objects; `_ZEUSD_GPU` objects with ZEUSD_SOCK_PATH set (the core
    relays their setters) or, without it, with ZEUSD_HOST_PORT set (their
    setters go through a ZeusdClient of the daemon there, as the
    original's)."""

    _BACKEND = "nvml"
    _GPU = NVIDIAGPU
    _ZEUSD_GPU = ZeusdNVIDIAGPU

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        self._on_handle(_Handle(self._BACKEND), ensure_homogeneous)

    @classmethod
    def _from_handle(cls, handle: _Handle) -> "_CoreGPUs":
        """The GPUs of an open handle (get_gpus opens one for either vendor)."""
        gpus = cls.__new__(cls)
        gpus._on_handle(handle, False)
        return gpus

    def _on_handle(self, handle: _Handle, ensure_homogeneous: bool) -> None:
        self._handle = handle
        if _zeusd_socket() is not None:
            self._gpus = [self._ZEUSD_GPU._on(i, handle) for i in range(len(handle.infos))]
        elif os.environ.get("ZEUSD_HOST_PORT"):
            # Imported here: zeus.utils.zeusd needs httpx, as the original's.
            from zeus.utils.zeusd import ZeusdClient
            client = ZeusdClient()
            self._gpus = [self._ZEUSD_GPU._on(i, handle, client)
                          for i in range(len(handle.infos))]
        else:
            self._gpus = [self._GPU._on(i, handle) for i in range(len(handle.infos))]
        if ensure_homogeneous:
            self._ensure_homogeneous()

    @property
    def gpus(self) -> Sequence[_CoreGPU]:
        return self._gpus

    # Extras of this package (used by its own modules).
    def position(self, gpu_index: int) -> int:
        """The position of `gpu_index` (its index: GPUs are in runtime order)."""
        self._gpu(gpu_index)
        return gpu_index

    def info(self, position: int) -> dict:
        """Static facts of the GPU at `position` (name, uuid, architecture,
        power limits in mW)."""
        return dict(self._gpu(position)._info)

    def get_gpu_uuid(self, gpu_index: int) -> str:
        """The backend's UUID of the GPU."""
        return self._gpu(gpu_index).get_gpu_uuid()

    getGpuUUID = get_gpu_uuid

    def get_default_power_management_limit(self, gpu_index: int) -> int:
        """The board's default power limit, in mW."""
        return self._gpu(gpu_index).get_default_power_management_limit()

    getDefaultPowerManagementLimit = get_default_power_management_limit

    def getPowerManagementLimit(self, gpu_index: int) -> int:  # noqa: N802 - older name.
        """Older name of get_power_management_limit."""
        return self.get_power_management_limit(gpu_index)

    def restore(self) -> None:
        """(extra) Puts back now every setting changed through these GPUs
        (otherwise done at exit)."""
        self._handle.restore()

    def close(self) -> None:
        """(extra) Restores and releases the GPUs; get_gpus() then opens them
        afresh."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        """(extra) Whether close() was called."""
        return self._handle.handle is None


class NVIDIAGPUs(_CoreGPUs):
    """The NVIDIA GPUs of this process. CUDA_VISIBLE_DEVICES is respected:
    index i is its i-th entry. With ZEUSD_SOCK_PATH or ZEUSD_HOST_PORT set,
    the GPUs are ZeusdNVIDIAGPU objects (setters relayed to the daemon)."""

    _BACKEND = "nvml"
    _GPU = NVIDIAGPU
    _ZEUSD_GPU = ZeusdNVIDIAGPU

    def __init__(self, ensure_homogeneous: bool = False) -> None:
        super().__init__(ensure_homogeneous)

    @property
    def gpus(self) -> Sequence[NVIDIAGPU]:
        return self._gpus
