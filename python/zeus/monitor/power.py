"""PowerMonitor: power timelines of GPUs, one per power domain, and energy
between any two times.

One C++ thread samples every GPU's power in each monitored domain every
update_period; only changes are stored, within a memory bound. Beside them,
one reader thread per GPU samples the GPU's energy counter, so that
get_energy() on a GPU with a counter is computed from the counter (which is
the reference: it does not depend on the domain or on how bursty the load
is); see docs/PERFORMANCE.md for measured errors. Times in this API are Unix
timestamps (time.time()), as in the original.

Power domains (NVML): "device_instant" is the instant power field,
"device_average" the ~1 s moving average (what nvmlDeviceGetPowerUsage
returns on A100 and newer), "memory_average" the average power of the GPU
memory (Hopper and newer). Under bursty loads the instant and averaged
timelines differ; a timeline always says which it holds.
"""

import collections
import ctypes
import enum
import logging
import math
import numbers
import time as _time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from zeus import _lib
from zeus.exception import InvalidArgumentError, NotFoundError, NotSupportedError

logger = logging.getLogger(__name__)


class PowerDomain(enum.Enum):
    """Which power a timeline holds."""

    DEVICE_INSTANT = "device_instant"
    DEVICE_AVERAGE = "device_average"
    MEMORY_AVERAGE = "memory_average"


DomainLike = Union[PowerDomain, str]

# Seconds on the core's clock beyond any sample (and within int64 ns).
_FAR_S = 1e9


@dataclass
class PowerSample:
    """One power reading of one GPU."""

    timestamp: float
    gpu_index: int
    power_mw: float


class _GpuReader:
    """Direct reads of GPU temperature and domain power (C ABI zeus_gpu_reader)."""

    def __init__(self, gpu_indices: Optional[List[int]] = None):
        self._lib = _lib.lib()
        self._handle = None
        handle = ctypes.c_void_p()
        options = dict(gpu_indices=None if gpu_indices is None else list(gpu_indices))
        _lib.call(self._lib.zeus_gpu_reader_create, _lib.options_json(options),
                  ctypes.byref(handle))
        self._handle = handle
        self.gpu_indices = [self._lib.zeus_gpu_reader_gpu_index(handle, i)
                            for i in range(self._lib.zeus_gpu_reader_num_gpus(handle))]

    def position(self, gpu_index: int) -> int:
        try:
            return self.gpu_indices.index(gpu_index)
        except ValueError:
            raise InvalidArgumentError(
                f"zeus.monitor: GPU {gpu_index} is not monitored (monitoring {self.gpu_indices})")

    def name(self, gpu_index: int) -> str:
        return _lib.call_text(self._lib.zeus_gpu_reader_name, self._handle,
                              self.position(gpu_index))

    def power_mw(self, gpu_index: int, domain: DomainLike) -> int:
        value = ctypes.c_uint32(0)
        _lib.call(self._lib.zeus_gpu_reader_power_mw, self._handle, self.position(gpu_index),
                  PowerDomain(domain).value.encode(), ctypes.byref(value))
        return value.value

    def temperature_c(self, gpu_index: int) -> int:
        value = ctypes.c_int32(0)
        _lib.call(self._lib.zeus_gpu_reader_temperature_c, self._handle,
                  self.position(gpu_index), ctypes.byref(value))
        return value.value

    def close(self):
        if self._handle is not None:
            self._lib.zeus_gpu_reader_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _infer_single(reader: _GpuReader, gpu_index: int, samples: int = 1000,
                  min_duration_s: float = 0.25) -> float:
    """The shortest time between two changes of one GPU's power reading,
    read back to back (instant power, else the average) at least `samples`
    times and for at least `min_duration_s` (reads can take microseconds,
    too few to see a change)."""
    read = None
    for domain in (PowerDomain.DEVICE_INSTANT, PowerDomain.DEVICE_AVERAGE):
        try:
            reader.power_mw(gpu_index, domain)
            read = domain
            break
        except NotSupportedError:
            continue
    if read is None:
        logger.warning("GPU %d reports neither instant nor average power; assuming a 0.2 s "
                       "update period", gpu_index)
        return 0.2
    for _ in range(10):  # Warm up.
        reader.power_mw(gpu_index, read)
    changed = []
    previous = reader.power_mw(gpu_index, read)
    start = _time.time()
    count = 0
    while count < samples or _time.time() - start < min_duration_s:
        now, value = _time.time(), reader.power_mw(gpu_index, read)
        count += 1
        if value != previous:
            changed.append(now)
            previous = value
    intervals = [b - a for a, b in zip(changed, changed[1:])]
    return min(intervals) if intervals else 0.1


def infer_counter_update_period(gpu_indicies: List[int]) -> float:
    """How often to poll power, in seconds: half the fastest update period
    of the GPUs' power readings (measured once per GPU model by reading as
    fast as possible), at most 0.1 s."""
    reader = _GpuReader(list(gpu_indicies))
    try:
        period = float("inf")
        models = set()
        for index in gpu_indicies:
            model = reader.name(index)
            if model in models:
                continue
            models.add(model)
            detected = _infer_single(reader, index)
            logger.info("Power reading update period of %s: %.3f s", model, detected)
            period = min(period, detected)
    finally:
        reader.close()
    if period == float("inf"):
        period = 0.2
    period /= 2.0
    if period > 0.1:
        logger.warning("Inferred update period (%.2f s) is too long; using 0.1 s", period)
        period = 0.1
    return period


class PowerMonitor:
    """Samples the power of GPUs in one or more power domains.

    Args:
        gpu_indices: CUDA indices of the GPUs; None: every GPU.
        update_period: Seconds between samples; None: inferred with
            infer_counter_update_period (half the fastest update period of
            the power reading, at most 0.1 s).
        max_samples_per_gpu: Bound on stored points per GPU and domain
            (oldest dropped); None: 65536 (the core's bound, stored only
            when the power changes).
        power_domains: Domains to sample (PowerDomain or their names); None:
            every domain the GPUs support. A domain a GPU lacks raises
            ValueError.

    Beyond the original: get_energy() on GPUs with an energy counter is
    computed from counter samples taken beside the power samples.
    Thread-safety: queries may be made from any thread.
    """

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 update_period: Optional[float] = None,
                 max_samples_per_gpu: Optional[int] = None,
                 power_domains: Optional[List[DomainLike]] = None) -> None:
        if power_domains is not None and not power_domains:
            raise ValueError("PowerMonitor: power_domains must be None or non-empty")
        domains = None
        if power_domains is not None:
            domains = []
            for domain in power_domains:
                name = PowerDomain(domain).value
                if name not in domains:
                    domains.append(name)
        self._lib = _lib.lib()
        self._handle = None
        if gpu_indices is None:
            reader = _GpuReader(None)
            gpu_indices = list(reader.gpu_indices)
            reader.close()
        gpu_indices = list(gpu_indices)
        if update_period is None:
            update_period = infer_counter_update_period(gpu_indices) if gpu_indices else 0.1
        elif isinstance(update_period, bool) or not isinstance(update_period, numbers.Real) or \
                not math.isfinite(update_period) or update_period <= 0:
            raise InvalidArgumentError(
                f"PowerMonitor: update_period must be a finite number of s > 0, got "
                f"{update_period!r}")
        elif update_period < 0.05:
            logger.warning("A GPU update period of %g s might be too fast for the power "
                           "readings (zero or repeated values)", update_period)
        handle = ctypes.c_void_p()
        options = dict(gpu_indices=gpu_indices, period_s=float(update_period),
                       max_points_per_gpu=max_samples_per_gpu, domains=domains,
                       sample_energy_counters=True)
        try:
            _lib.call(self._lib.zeus_power_monitor_create, _lib.options_json(options),
                      ctypes.byref(handle))
        except NotSupportedError as e:
            raise ValueError(f"PowerMonitor: requested power domain is not supported: {e}") from e
        self._handle = handle
        # Unix time minus the core's monotonic time.
        self._offset_s = _time.time() - _lib.now_s()
        self._created_at = _time.time()
        self.gpu_indices = [self._lib.zeus_power_monitor_gpu_index(handle, i)
                            for i in range(self._lib.zeus_power_monitor_num_gpus(handle))]
        self.update_period = float(update_period)
        self.measurement_domains = [
            PowerDomain(self._lib.zeus_power_monitor_domain_name(handle, i).decode())
            for i in range(self._lib.zeus_power_monitor_num_domains(handle))]
        self._has_counter = {
            index: bool(self._lib.zeus_power_monitor_has_counter(handle, i))
            for i, index in enumerate(self.gpu_indices)}
        # The original's inter-process plumbing; sampling runs on C++ threads
        # here, so these stay empty.
        self.data_queues: Dict = {}
        self.ready_events: Dict = {}
        self.stop_events: Dict = {}
        self.processes: Dict = {}
        logger.info("Monitoring power of GPUs %s in domains %s every %.3f s", self.gpu_indices,
                    [d.value for d in self.measurement_domains], self.update_period)

    # ---- helpers -------------------------------------------------------------

    def _require_open(self):
        if self._handle is None:
            raise RuntimeError("PowerMonitor: stopped")

    def _position(self, gpu_index: int) -> int:
        try:
            return self.gpu_indices.index(gpu_index)
        except ValueError:
            raise InvalidArgumentError(
                f"PowerMonitor: GPU {gpu_index} is not monitored (monitoring {self.gpu_indices})")

    def _monitored(self, power_domain: DomainLike) -> PowerDomain:
        domain = PowerDomain(power_domain)
        if domain not in self.measurement_domains:
            raise ValueError(
                f"Power domain {domain.value} is not being monitored. Monitored domains: "
                f"{[d.value for d in self.measurement_domains]}")
        return domain

    def _core_time(self, unix_time: float) -> float:
        # Bounded so that the core's nanosecond conversion cannot overflow.
        return min(max(unix_time - self._offset_s, -_FAR_S), _FAR_S)

    def _timeline(self, position: int, domain: PowerDomain, start: float, end: float):
        count = ctypes.c_size_t(0)
        capacity = 1024
        while True:
            times = (ctypes.c_double * capacity)()
            powers = (ctypes.c_double * capacity)()
            message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
            code = self._lib.zeus_power_monitor_domain_timeline(
                self._handle, position, domain.value.encode(), start, end, times, powers,
                capacity, ctypes.byref(count), message, _lib.MESSAGE_SIZE)
            if code == 1 and count.value > capacity:
                capacity = count.value + 64
                continue
            _lib.raise_for(code, message)
            return [(times[i] + self._offset_s, powers[i]) for i in range(count.value)]

    # ---- the original's API --------------------------------------------------

    def get_power_timeline(self, power_domain: DomainLike, gpu_index: Optional[int] = None,
                           start_time: Optional[float] = None, end_time: Optional[float] = None
                           ) -> Dict[int, List[Tuple[float, float]]]:
        """GPU index -> [(unix time, power W)] of the stored points of
        `power_domain` in [start_time, end_time] (default: everything kept).
        Raises ValueError for a domain not monitored."""
        self._require_open()
        domain = self._monitored(power_domain)
        indices = self.gpu_indices if gpu_index is None else [gpu_index]
        start = -_FAR_S if start_time is None else self._core_time(start_time)
        end = _FAR_S if end_time is None else self._core_time(end_time)
        if end < start:
            return {index: [] for index in indices}
        return {index: self._timeline(self._position(index), domain, start, end)
                for index in indices}

    def get_all_power_timelines(self, gpu_index: Optional[int] = None,
                                start_time: Optional[float] = None,
                                end_time: Optional[float] = None
                                ) -> Dict[str, Dict[int, List[Tuple[float, float]]]]:
        """Domain name -> get_power_timeline of that domain."""
        return {domain.value: self.get_power_timeline(domain, gpu_index, start_time, end_time)
                for domain in self.measurement_domains}

    def get_energy(self, start_time: float, end_time: float,
                   power_domain: Optional[DomainLike] = None) -> Optional[Dict[int, float]]:
        """GPU index -> J between two Unix times.

        With power_domain None, GPUs with an energy counter are measured from
        the counter samples (whatever the domains); others integrate
        device_instant power when monitored, else device_average. With a
        domain, that domain's timeline is integrated (trapezoid,
        interpolated at both ends). The window is clamped to the time the
        monitor has covered (its start to now): nothing is extrapolated past
        now. Returns None when nothing was sampled yet or when the window
        lies wholly outside the covered time (in the future, or before the
        monitor started); 0.0 for every GPU when end_time <= start_time.
        Raises InvalidArgumentError for a time that is not a number.
        """
        self._require_open()
        for name, value in (("start_time", start_time), ("end_time", end_time)):
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or math.isnan(value)):
                raise InvalidArgumentError(
                    f"PowerMonitor.get_energy: {name} must be a Unix time in s, got {value!r}")
        now = _time.time()
        clamped_start, clamped_end = max(start_time, self._created_at), min(end_time, now)
        if end_time > start_time and clamped_end <= clamped_start:
            return None
        if power_domain is not None:
            fallback = self._monitored(power_domain)
        elif PowerDomain.DEVICE_INSTANT in self.measurement_domains:
            fallback = PowerDomain.DEVICE_INSTANT
        elif PowerDomain.DEVICE_AVERAGE in self.measurement_domains:
            fallback = PowerDomain.DEVICE_AVERAGE
        else:
            fallback = None
        start = self._core_time(clamped_start)
        end = self._core_time(clamped_end)
        out = {}
        for position, index in enumerate(self.gpu_indices):
            if end <= start:
                out[index] = 0.0
                continue
            if power_domain is None and self._has_counter[index]:
                domain_arg = None
            elif fallback is not None:
                domain_arg = fallback.value.encode()
            else:
                raise ValueError("PowerMonitor: neither device_instant nor device_average is "
                                 f"monitored, and GPU {index} has no energy counter")
            energy = ctypes.c_double(0.0)
            try:
                _lib.call(self._lib.zeus_power_monitor_domain_energy, self._handle, position,
                          domain_arg, start, end, ctypes.byref(energy))
            except NotFoundError:
                return None
            out[index] = energy.value
        return out

    def get_power(self, time: Optional[float] = None,
                  power_domain: DomainLike = PowerDomain.DEVICE_INSTANT
                  ) -> Optional[Dict[int, float]]:
        """GPU index -> power in W of `power_domain` at `time` (the value
        held then: the last stored point at or before it, else the first
        after it); default: the latest. None when a GPU has no sample yet.
        Raises ValueError for a domain not monitored."""
        self._require_open()
        domain = self._monitored(power_domain)
        out = {}
        for position, index in enumerate(self.gpu_indices):
            points = self._timeline(position, domain, -_FAR_S, _FAR_S)
            if not points:
                return None
            if time is None:
                out[index] = points[-1][1]
                continue
            before = [p for p in points if p[0] <= time]
            out[index] = before[-1][1] if before else points[0][1]
        return out

    @property
    def samples(self) -> Dict[PowerDomain, Dict[int, "collections.deque[PowerSample]"]]:
        """Domain -> GPU index -> the stored samples (a snapshot)."""
        out = {}
        for domain in self.measurement_domains:
            out[domain] = {}
            for index, points in self.get_power_timeline(domain).items():
                out[domain][index] = collections.deque(
                    PowerSample(timestamp=t, gpu_index=index, power_mw=w * 1000.0)
                    for t, w in points)
        return out

    def stop(self) -> None:
        """Stops sampling; the object is unusable afterwards."""
        if self._handle is not None:
            self._lib.zeus_power_monitor_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass
