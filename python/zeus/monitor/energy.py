"""ZeusMonitor: time and energy of named measurement windows.

Windows are keyed by name and may nest and overlap freely; each Measurement
is what a window would have measured alone. Backed by the C++ EnergyMonitor:
in the default exact mode every boundary reads every GPU's energy counter
(all GPUs concurrently); with mode="low_overhead" a background reader keeps
the counters and a boundary costs microseconds (see docs/PERFORMANCE.md for
its error bound).
"""

import ctypes
import logging
import threading
import time as _time
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Optional

from zeus import _lib
from zeus.device.cpu import rapl
from zeus.exception import AlreadyExistsError, NotFoundError, PermissionDeniedError, \
    ZeusBaseError
from zeus.utils.framework import sync_execution as _sync_execution
from zeus.utils.multiprocessing import warn_if_global_in_subprocess

logger = logging.getLogger(__name__)

# The original's warning for a window in which a GPU's energy reads 0 J.
ZERO_ENERGY_WARNING = (
    "The energy consumption of one or more GPUs was measured as zero. This means that the time "
    "duration of the measurement window was shorter than the GPU's energy counter update "
    "period. Consider turning on the `approx_instant_energy` option in `ZeusMonitor`, which "
    "approximates the energy consumption of a short time window as instant power draw x window "
    "duration.")


class WindowNotFoundError(NotFoundError, ValueError):
    """end_window of a window that is not open: a ValueError as in the
    original, and this package's NotFoundError (a KeyError)."""



@dataclass
class Measurement:
    """What one window measured.

    Attributes:
        time: Elapsed time of the window, in seconds.
        gpu_energy: GPU index -> energy in J.
        cpu_energy: CPU socket -> package energy in J (None without CPUs).
        dram_energy: CPU socket -> DRAM energy in J (None without CPUs).
    """

    time: float
    gpu_energy: Dict[int, float]
    cpu_energy: Optional[Dict[int, float]] = None
    dram_energy: Optional[Dict[int, float]] = None
    # The SoC's (a Jetson's) energy in the window, when one is present.
    soc_energy: Optional[Any] = None
    # When the window began, in seconds of the monitor's monotonic clock.
    start_time: float = field(default=0.0, repr=False, compare=False)

    @cached_property
    def total_energy(self) -> float:
        """Total GPU energy of the window, in J (as the original defines it)."""
        return sum(self.gpu_energy.values())


@dataclass
class MeasurementState:
    """Where an open window began.

    Attributes:
        time: Unix time of the window's beginning, in seconds.
        gpu_energy: GPU index -> the GPU's energy counter at the beginning, in J.
        cpu_energy: CPU socket -> package energy counter at the beginning, in J
            (None without CPUs).
        dram_energy: CPU socket -> DRAM energy counter at the beginning, in J
            (None without CPUs; 0 for a socket without a DRAM zone).
    """

    time: float
    gpu_energy: Dict[int, float]
    cpu_energy: Optional[Dict[int, float]] = None
    dram_energy: Optional[Dict[int, float]] = None

    @cached_property
    def total_energy(self) -> float:
        return sum(self.gpu_energy.values())


def _check_key(method: str, key) -> bytes:
    """The window name as bytes; TypeError for a non-string key."""
    if not isinstance(key, str):
        raise TypeError(f"zeus: ZeusMonitor.{method}: the window key must be a str, got "
                        f"{key!r} ({type(key).__name__})")
    return key.encode()


class ZeusMonitor:
    """Measures the time and energy of named windows on GPUs and CPUs.

    Args:
        gpu_indices: CUDA indices of the GPUs to measure (respecting
            CUDA_VISIBLE_DEVICES); None: every GPU (none when NVML is
            missing).
        cpu_indices: RAPL sockets to measure; None: every readable socket
            (none when RAPL cannot be read, e.g. energy_uj is root-only;
            with a list, root-only counters raise the original's
            RuntimeError "Root privilege is required to read RAPL metrics.").
        approx_instant_energy: For windows shorter than the energy counter's
            ~100 ms update period, report mean instant power x time instead
            of a counter difference that may read 0.
        log_file: CSV file each finished window is appended to.
        sync_execution_with: "torch", "jax" or "cupy": what to synchronise at window
            boundaries when sync_execution is True.
        mode: "exact" (default) or "low_overhead" (extra, see module doc).

    Errors raise zeus.exception.ZeusError subclasses carrying the core's
    message; a failed call leaves every other window as it was.
    Thread-safety: windows may be opened and closed from any thread.
    """

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 cpu_indices: Optional[List[int]] = None, approx_instant_energy: bool = False,
                 log_file: Optional[str] = None, sync_execution_with: str = "torch", *,
                 mode: str = "exact", power_sample_period_s: Optional[float] = None,
                 counter_poll_period_s: Optional[float] = None):
        if sync_execution_with not in ("torch", "jax", "cupy"):
            raise ValueError('zeus: sync_execution_with must be "torch", "jax" or "cupy", got '
                             f'{sync_execution_with!r}')
        warn_if_global_in_subprocess(self)
        self.sync_with = sync_execution_with
        self.approx_instant_energy = bool(approx_instant_energy)
        self.log_file = log_file
        self.soc_is_present = False
        self.soc = None
        try:
            from zeus.device.soc import ZeusSoCInitError, get_soc
            try:
                self.soc = get_soc()
                self.soc_is_present = True
            except ZeusSoCInitError:
                pass
        except ImportError:
            pass
        self.power_monitor = None
        # Open windows opened through this object -> where each began, as
        # the original's attribute: begin_window adds, end_window removes.
        self.measurement_states: Dict[str, MeasurementState] = {}
        self._lib = _lib.lib()
        self._handle = None
        self._callback_error = None

        # The core calls this at the boundaries of windows it opens itself (the
        # power-limit optimizer's); begin/end_window synchronise in Python.
        def sync_trampoline(_user):
            try:
                _sync_execution(self.gpu_indices, self.sync_with)
                return 0
            except BaseException as e:  # Never let an exception cross into C.
                self._callback_error = e
                return 1

        self._sync_fn = _lib.SYNC_FN(sync_trampoline)  # Lives as long as the handle.
        handle = ctypes.c_void_p()
        options = dict(gpu_indices=None if gpu_indices is None else list(gpu_indices),
                       cpu_indices=None if cpu_indices is None else list(cpu_indices),
                       approx_instant_energy=bool(approx_instant_energy),
                       log_file=None if log_file is None else str(log_file),
                       mode=mode, power_sample_period_s=power_sample_period_s,
                       counter_poll_period_s=counter_poll_period_s,
                       powercap_root=rapl.rapl_dir())  # The sockets get_cpus() reads.
        self.gpu_indices = []  # Set below; the sync trampoline reads it.
        try:
            _lib.call(self._lib.zeus_monitor_create, _lib.options_json(options), self._sync_fn,
                      None, ctypes.byref(handle))
        except PermissionDeniedError as e:
            if cpu_indices:
                # The original's words for root-only RAPL counters.
                raise RuntimeError(
                    "Root privilege is required to read RAPL metrics. See "
                    "https://ml.energy/zeus/getting_started/#system-privileges for more "
                    "information or disable CPU measurement by passing cpu_indices=[] to "
                    "ZeusMonitor") from e
            raise
        self._handle = handle
        n_gpus = self._lib.zeus_monitor_num_gpus(handle)
        n_cpus = self._lib.zeus_monitor_num_cpus(handle)
        self.gpu_indices = [self._lib.zeus_monitor_gpu_index(handle, i) for i in range(n_gpus)]
        self.cpu_indices = [self._lib.zeus_monitor_cpu_index(handle, i) for i in range(n_cpus)]
        self._num_values = 2 + n_gpus + 2 * n_cpus
        # Per-thread result and message buffers: windows may close on any thread.
        self._buffers = threading.local()

    def _thread_buffers(self):
        buffers = self._buffers
        try:
            return buffers.values, buffers.message
        except AttributeError:
            buffers.values = (ctypes.c_double * self._num_values)()
            buffers.message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
            return buffers.values, buffers.message

    # The original's names for the NVML indices of the monitored GPUs.
    @property
    def nvml_gpu_indices(self):
        return list(self.gpu_indices)

    def _check(self, code, message):
        if self._callback_error is not None:
            e, self._callback_error = self._callback_error, None
            raise e
        _lib.raise_for(code, message)

    def _require_open(self):
        if self._handle is None:
            raise ZeusBaseError("zeus: the monitor is closed")

    @property
    def gpus(self):
        """The GPUs this process sees (zeus.device.get_gpus())."""
        from zeus.device import get_gpus
        return get_gpus()

    @property
    def cpus(self):
        """The CPUs (zeus.device.get_cpus()), or None where unavailable."""
        try:
            from zeus.device import get_cpus
        except ImportError:
            return None
        return get_cpus()

    def begin_window(self, key: str, sync_execution: bool = True, restart: bool = False) -> None:
        """Opens window `key`. Raises AlreadyExistsError (a ValueError:
        "Measurement window '<key>' already exists") when a window of that
        name is open, unless `restart`, which drops the open one first;
        TypeError for a key that is not a str."""
        name = _check_key("begin_window", key)
        self._require_open()
        if restart and self.is_window_open(key):
            self.end_window(key, sync_execution=False, cancel=True)
        _, message = self._thread_buffers()
        # Synchronised here rather than through the core's callback: a call
        # from C back into Python costs more than the window itself.
        if sync_execution:
            _sync_execution(self.gpu_indices, self.sync_with)
        code = self._lib.zeus_monitor_begin_nosync(self._handle, name, message,
                                                   _lib.MESSAGE_SIZE)
        if code == AlreadyExistsError.code:
            raise AlreadyExistsError(f"Measurement window '{key}' already exists")
        self._check(code, message)
        begin_time = _time.time()
        if self.soc_is_present:
            self.soc.begin_window(key, restart=True)
        # The counters the core read at begin, copied out (no device read).
        state = self._measurement_state(key, begin_time)
        if state is not None:
            self.measurement_states[key] = state

    def _measurement_state(self, key: str, begin_time: float) -> Optional[MeasurementState]:
        """The MeasurementState of open window `key`; None when it is no
        longer open (closed by another thread meanwhile)."""
        if self._handle is None:
            return None
        values, message = self._thread_buffers()
        code = self._lib.zeus_monitor_window_begin(self._handle, key.encode(), values,
                                                   len(values), message, _lib.MESSAGE_SIZE)
        if code == NotFoundError.code:
            return None
        self._check(code, message)
        n_gpus = len(self.gpu_indices)
        gpu = {index: values[1 + i] for i, index in enumerate(self.gpu_indices)}
        cpu = dram = None
        if self.cpu_indices:
            base = 1 + n_gpus
            n_cpus = len(self.cpu_indices)
            cpu = {index: values[base + i] for i, index in enumerate(self.cpu_indices)}
            dram = {index: values[base + n_cpus + i] for i, index in enumerate(self.cpu_indices)}
        return MeasurementState(time=begin_time, gpu_energy=gpu, cpu_energy=cpu, dram_energy=dram)

    def end_window(self, key: str, sync_execution: bool = True,
                   cancel: bool = False) -> Measurement:
        """Closes window `key` and returns what it measured. With cancel,
        drops it and returns an all-zero Measurement. Raises
        WindowNotFoundError (a ValueError as in the original, and a KeyError:
        "Measurement window '<key>' does not exist") for a window that is not
        open, TypeError for a key that is not a str; other windows are kept.
        Warns (UserWarning, the original's words) when a GPU measured 0 J
        without approx_instant_energy.
        """
        name = _check_key("end_window", key)
        self._require_open()
        self.measurement_states.pop(key, None)
        values, message = self._thread_buffers()
        soc_energy = None
        if self.soc_is_present:
            try:
                soc_energy = self.soc.end_window(key)
            except ValueError:
                pass  # Not open on the SoC: the core's answer below decides.
        if cancel:
            code = self._lib.zeus_monitor_cancel(self._handle, name, message, _lib.MESSAGE_SIZE)
            if code == NotFoundError.code:
                raise WindowNotFoundError(f"Measurement window '{key}' does not exist")
            self._check(code, message)
            return Measurement(time=0.0, gpu_energy={i: 0.0 for i in self.gpu_indices},
                               cpu_energy={i: 0.0 for i in self.cpu_indices} or None,
                               dram_energy={i: 0.0 for i in self.cpu_indices} or None)
        if sync_execution:
            _sync_execution(self.gpu_indices, self.sync_with)
        code = self._lib.zeus_monitor_end_nosync(self._handle, name, values, len(values), message,
                                                 _lib.MESSAGE_SIZE)
        if code == NotFoundError.code:
            raise WindowNotFoundError(f"Measurement window '{key}' does not exist")
        self._check(code, message)
        n_gpus = len(self.gpu_indices)
        gpu = {index: values[2 + i] for i, index in enumerate(self.gpu_indices)}
        cpu = dram = None
        if self.cpu_indices:
            base = 2 + n_gpus
            n_cpus = len(self.cpu_indices)
            cpu = {index: values[base + i] for i, index in enumerate(self.cpu_indices)}
            dram = {index: values[base + n_cpus + i] for i, index in enumerate(self.cpu_indices)}
        measurement = Measurement(time=values[0], gpu_energy=gpu, cpu_energy=cpu,
                                  dram_energy=dram, soc_energy=soc_energy, start_time=values[1])
        if not self.approx_instant_energy and any(e == 0.0 for e in gpu.values()):
            warnings.warn(ZERO_ENERGY_WARNING, stacklevel=1)
        return measurement

    def is_window_open(self, key: str) -> bool:
        return self._handle is not None and bool(
            self._lib.zeus_monitor_is_open(self._handle, _check_key("is_window_open", key)))

    def reset_windows(self) -> None:
        """Drops every window opened through this object."""
        for key in list(self.measurement_states):
            if self.is_window_open(key):
                self.end_window(key, sync_execution=False, cancel=True)
        self.measurement_states.clear()

    def _handle_for_optimizer(self):
        self._require_open()
        return self._handle

    def close(self) -> None:
        """Stops the monitor's background threads; open windows are dropped.
        An optimizer built on this monitor keeps working."""
        if self._handle is not None:
            self._lib.zeus_monitor_destroy(self._handle)
            self._handle = None
        self.measurement_states.clear()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
