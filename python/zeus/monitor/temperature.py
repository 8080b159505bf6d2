"""TemperatureMonitor: GPU temperature timelines, sampled in the background.

A daemon thread reads every GPU's die temperature (NVML
nvmlDeviceGetTemperature, in whole degrees C) each update_period; only
changes are stored (a run of equal readings keeps its first and last point),
within max_samples_per_gpu points per GPU. The reads are C calls that
release the GIL. Times are Unix timestamps (time.time()), as in the original.
"""

import collections
import logging
import threading
import time as _time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from zeus.monitor.power import _GpuReader

logger = logging.getLogger(__name__)


@dataclass
class TemperatureSample:
    """One temperature reading of one GPU."""

    timestamp: float
    gpu_index: int
    temperature_c: int


class TemperatureMonitor:
    """Samples GPU temperatures.

    Args:
        gpu_indices: CUDA indices of the GPUs; None: every GPU.
        update_period: Seconds between samples (> 0). Default 1.0.
        max_samples_per_gpu: Bound on stored points per GPU (oldest
            dropped); None: unbounded.

    Raises zeus.exception.NotSupportedError when a GPU reports no
    temperature. Thread-safety: queries may be made from any thread.
    """

    def __init__(self, gpu_indices: Optional[List[int]] = None, update_period: float = 1.0,
                 max_samples_per_gpu: Optional[int] = None) -> None:
        if update_period is None or update_period <= 0:
            raise ValueError(
                f"TemperatureMonitor: update_period must be positive, got {update_period}")
        if max_samples_per_gpu is not None and max_samples_per_gpu < 2:
            raise ValueError("TemperatureMonitor: max_samples_per_gpu must be at least 2, got "
                             f"{max_samples_per_gpu}")
        self._reader = _GpuReader(gpu_indices)
        self.gpu_indices = list(self._reader.gpu_indices)
        self.update_period = float(update_period)
        self._lock = threading.Lock()
        self.temperature_samples: Dict[int, "collections.deque[TemperatureSample]"] = {
            index: collections.deque(maxlen=max_samples_per_gpu) for index in self.gpu_indices}
        self._sample()  # A GPU without a sensor fails here, not in the thread.
        # The original's inter-process plumbing; a thread samples here.
        self.temperature_queue = None
        self.temperature_ready_event = threading.Event()
        self.temperature_stop_event = threading.Event()
        self.temperature_process = threading.Thread(
            target=self._run, name="zeus-temperature-monitor", daemon=True)
        self.temperature_process.start()
        self.temperature_ready_event.wait(timeout=10.0)

    def _sample(self):
        now = _time.time()
        for index in self.gpu_indices:
            value = self._reader.temperature_c(index)
            with self._lock:
                samples = self.temperature_samples[index]
                if (len(samples) >= 2 and samples[-1].temperature_c == value
                        and samples[-2].temperature_c == value):
                    samples[-1] = TemperatureSample(now, index, value)
                else:
                    samples.append(TemperatureSample(now, index, value))

    def _run(self):
        self.temperature_ready_event.set()
        while not self.temperature_stop_event.wait(self.update_period):
            try:
                self._sample()
            except Exception as e:  # Keep sampling; the GPU may recover.
                logger.warning("TemperatureMonitor: %s", e)

    def get_temperature_timeline(self, gpu_index: Optional[int] = None,
                                 start_time: Optional[float] = None,
                                 end_time: Optional[float] = None
                                 ) -> Dict[int, List[Tuple[float, int]]]:
        """GPU index -> [(unix time, temperature C)] of the stored points in
        [start_time, end_time] (default: everything kept)."""
        indices = self.gpu_indices if gpu_index is None else [gpu_index]
        out = {}
        with self._lock:
            for index in indices:
                if index not in self.temperature_samples:
                    raise ValueError(f"TemperatureMonitor: GPU {index} is not monitored "
                                     f"(monitoring {self.gpu_indices})")
                out[index] = [(s.timestamp, s.temperature_c)
                              for s in self.temperature_samples[index]
                              if (start_time is None or s.timestamp >= start_time)
                              and (end_time is None or s.timestamp <= end_time)]
        return out

    def get_temperature(self, time: Optional[float] = None) -> Optional[Dict[int, int]]:
        """GPU index -> temperature in C at `time` (the sample closest to
        it; default: the latest). None when a GPU has no sample."""
        out = {}
        with self._lock:
            for index in self.gpu_indices:
                samples = self.temperature_samples[index]
                if not samples:
                    return None
                if time is None:
                    out[index] = samples[-1].temperature_c
                else:
                    closest = min(samples, key=lambda s: abs(s.timestamp - time))
                    out[index] = closest.temperature_c
        return out

    def stop(self) -> None:
        """Stops sampling (joins the thread); the kept samples stay readable."""
        self.temperature_stop_event.set()
        if self.temperature_process.is_alive() and (
                threading.current_thread() is not self.temperature_process):
            self.temperature_process.join(timeout=10.0)
        if self._reader is not None:
            self._reader.close()

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass
