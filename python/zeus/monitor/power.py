"""PowerMonitor: instant-power timelines of GPUs, sampled in the background.

One C++ thread samples every GPU's instant power each update_period; only
changes are stored, within a memory bound. Times in this API are Unix
timestamps (time.time()), as in the original.
"""

import ctypes
import enum
import time
from typing import Dict, List, Optional, Tuple

from zeus import _lib
from zeus.exception import InvalidArgumentError


class PowerDomain(enum.Enum):
    """Which power a timeline holds. Only DEVICE_INSTANT is measured here."""

    DEVICE_INSTANT = "device_instant"
    DEVICE_AVERAGE = "device_average"
    MEMORY_AVERAGE = "memory_average"


class PowerMonitor:
    """Samples the instant power of GPUs.

    Args:
        gpu_indices: CUDA indices of the GPUs; None: every GPU.
        update_period: Seconds between samples. Default 0.1.
        max_samples_per_gpu: Bound on stored points per GPU (oldest dropped).
        power_domains: Accepted for compatibility; only
            PowerDomain.DEVICE_INSTANT is sampled.
    """

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 update_period: Optional[float] = None,
                 max_samples_per_gpu: Optional[int] = None,
                 power_domains: Optional[List[PowerDomain]] = None):
        for domain in power_domains or []:
            if PowerDomain(domain) is not PowerDomain.DEVICE_INSTANT:
                raise InvalidArgumentError(
                    f"PowerMonitor: power domain {domain} is not supported (device_instant is)")
        self._lib = _lib.lib()
        self._handle = None
        handle = ctypes.c_void_p()
        options = dict(gpu_indices=None if gpu_indices is None else list(gpu_indices),
                       period_s=update_period, max_points_per_gpu=max_samples_per_gpu)
        _lib.call(self._lib.zeus_power_monitor_create, _lib.options_json(options),
                  ctypes.byref(handle))
        self._handle = handle
        self.gpu_indices = [
            self._lib.zeus_power_monitor_gpu_index(handle, i)
            for i in range(self._lib.zeus_power_monitor_num_gpus(handle))
        ]
        self.update_period = 0.1 if update_period is None else update_period
        # Unix time minus the core's monotonic time.
        self._offset_s = time.time() - _lib.now_s()

    def _position(self, gpu_index):
        try:
            return self.gpu_indices.index(gpu_index)
        except ValueError:
            raise InvalidArgumentError(
                f"PowerMonitor: GPU {gpu_index} is not monitored (monitoring {self.gpu_indices})")

    def _span(self, start_time, end_time):
        now = time.time()
        start = (0.0 if start_time is None else start_time) - self._offset_s
        end = (now if end_time is None else end_time) - self._offset_s
        return max(start, 0.0), end

    def get_power_timeline(self, power_domain: PowerDomain = PowerDomain.DEVICE_INSTANT,
                           gpu_index: Optional[int] = None, start_time: Optional[float] = None,
                           end_time: Optional[float] = None
                           ) -> Dict[int, List[Tuple[float, float]]]:
        """GPU index -> [(unix time, power W)] of stored points in
        [start_time, end_time] (default: everything kept)."""
        if PowerDomain(power_domain) is not PowerDomain.DEVICE_INSTANT:
            return {}
        indices = self.gpu_indices if gpu_index is None else [gpu_index]
        start, end = self._span(start_time, end_time)
        out = {}
        for index in indices:
            position = self._position(index)
            count = ctypes.c_size_t(0)
            capacity = 1024
            while True:
                times = (ctypes.c_double * capacity)()
                powers = (ctypes.c_double * capacity)()
                message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
                code = self._lib.zeus_power_monitor_timeline(
                    self._handle, position, start, end, times, powers, capacity,
                    ctypes.byref(count), message, _lib.MESSAGE_SIZE)
                if code == 1 and count.value > capacity:
                    capacity = count.value + 64
                    continue
                _lib.raise_for(code, message)
                break
            out[index] = [(times[i] + self._offset_s, powers[i]) for i in range(count.value)]
        return out

    def get_all_power_timelines(self, start_time=None, end_time=None):
        return {PowerDomain.DEVICE_INSTANT.value:
                self.get_power_timeline(start_time=start_time, end_time=end_time)}

    def get_energy(self, start_time: Optional[float] = None,
                   end_time: Optional[float] = None) -> Dict[int, float]:
        """GPU index -> J between two Unix times (trapezoid over the samples;
        default: from the first kept sample to now). Raises NotFoundError
        when start_time precedes every kept sample."""
        start, end = self._span(start_time, end_time)
        out = {}
        for position, index in enumerate(self.gpu_indices):
            energy = ctypes.c_double(0.0)
            _lib.call(self._lib.zeus_power_monitor_energy, self._handle, position, start, end,
                      ctypes.byref(energy))
            out[index] = energy.value
        return out

    def get_power(self, time: Optional[float] = None) -> Dict[int, float]:
        """GPU index -> the latest sampled power in W at or before `time`
        (default: now)."""
        timelines = self.get_power_timeline(end_time=time)
        return {index: points[-1][1] for index, points in timelines.items() if points}

    def stop(self):
        """Stops sampling; the object is unusable afterwards."""
        if self._handle is not None:
            self._lib.zeus_power_monitor_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass
