"""Zeus measurements as Prometheus metrics, pushed to a Pushgateway.

Three metrics, each labelled `window` (the name given to begin_window) and
`index` (the device index):

- EnergyHistogram: the energy of each occurrence of a window, observed into
  histograms `energy_monitor_{gpu,cpu,dram}_energy_joules` when the window
  ends, then pushed (job `job`, grouping key: the job alone).
- EnergyCumulativeCounter: counters `energy_monitor_{gpu,cpu,dram}_energy_joules`
  (exposed with the `_total` suffix) growing by the energy of every
  `update_period` seconds while the window is open.
- PowerGauge: gauges `power_monitor_gpu_power_watts` set to each GPU's latest
  power every `update_period` seconds while the window is open.

The counter and gauge run in a helper process started with multiprocessing's
`spawn` method (energy_monitoring_loop, power_monitoring_loop); each window
pushes under grouping key {job, window}, so windows of one job do not replace
each other's series on the Pushgateway. A window's last partial period is
counted and pushed when it ends.

Needs the prometheus_client package (Debian: python3-prometheus-client),
imported when a metric is created: a clear ImportError without it.
"""

import abc
import logging
import multiprocessing as mp
import queue as queue_module
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

from zeus.exception import ZeusBaseError
from zeus.monitor.energy import ZeusMonitor
from zeus.utils.framework import sync_execution as _sync_execution

logger = logging.getLogger(__name__)

# How long end_window waits for a helper process's final push and exit
# beyond one update period.
_STOP_GRACE_S = 30.0
# How long begin_window waits for a helper process to open its window.
_START_TIMEOUT_S = 120.0


def _prometheus():
    try:
        import prometheus_client
    except ImportError as e:
        raise ImportError(
            "zeus.metric needs the prometheus_client package: install Debian's "
            "python3-prometheus-client (or `pip install prometheus-client`)") from e
    return prometheus_client


# The longest one push may take in all (a Pushgateway that hangs or drips
# its answer does not hold training up for longer).
PUSH_TIMEOUT_S = 5.0


def _push(pushgateway_url, job, registry, grouping_key=None, who="zeus.metric"):
    from zeus.utils import http_limits

    prometheus_client = _prometheus()
    try:
        http_limits.with_deadline(
            lambda: prometheus_client.push_to_gateway(
                pushgateway_url, job=job, registry=registry, grouping_key=grouping_key or {},
                timeout=PUSH_TIMEOUT_S),
            PUSH_TIMEOUT_S)
    except Exception as e:
        reason = getattr(e, "reason", e)
        # The socket's timeout or the deadline, whichever fired first.
        text = (f"no complete answer within {PUSH_TIMEOUT_S:.3g} s"
                if isinstance(reason, TimeoutError) else str(e))
        raise ZeusBaseError(f"{who}: pushing job {job!r} to the Pushgateway at "
                            f"{pushgateway_url} failed: {text}") from e


@dataclass
class MonitoringProcessState:
    """The helper process of one open counter or gauge window.

    Attributes:
        queue: Where end_window sends the stop message.
        proc: The spawned process.
    """

    queue: Any
    proc: Any


class Metric(abc.ABC):
    """A Prometheus metric measured over named windows."""

    @abc.abstractmethod
    def begin_window(self, name: str, sync_execution: bool = True) -> None:
        """Opens window `name`."""

    @abc.abstractmethod
    def end_window(self, name: str, sync_execution: bool = True) -> None:
        """Closes window `name` and pushes what it measured."""


def _check_buckets(buckets, what):
    buckets = [float(b) for b in buckets]
    if not buckets:
        raise ValueError(f"EnergyHistogram: {what}_bucket_range is empty; give at least one "
                         "bucket bound (J) or omit it for the defaults")
    if any(b2 <= b1 for b1, b2 in zip(buckets, buckets[1:])):
        raise ValueError(f"EnergyHistogram: {what}_bucket_range must increase, got {buckets}")
    return buckets


class EnergyHistogram(Metric):
    """Histograms of the energy of every occurrence of a window.

    Args:
        cpu_indices: CPU sockets to measure ([] for none).
        gpu_indices: GPUs to measure.
        pushgateway_url: e.g. "http://localhost:9091".
        job: The Prometheus job name pushed under.
        gpu_bucket_range, cpu_bucket_range, dram_bucket_range: Upper bucket
            bounds, J (increasing).

    end_window raises ZeusBaseError when the push fails or does not complete
    within PUSH_TIMEOUT_S (5 s); the observation is kept in the registry and
    goes out with the next successful push.
    Thread-safety: as ZeusMonitor's.
    """

    def __init__(self, cpu_indices: list, gpu_indices: list, pushgateway_url: str, job: str,
                 gpu_bucket_range: Sequence[float] = [50.0, 100.0, 200.0, 500.0, 1000.0],
                 cpu_bucket_range: Sequence[float] = [10.0, 50.0, 100.0, 500.0, 1000.0],
                 dram_bucket_range: Sequence[float] = [5.0, 10.0, 20.0, 50.0, 150.0]) -> None:
        prometheus_client = _prometheus()
        self.gpu_bucket_range = _check_buckets(gpu_bucket_range, "gpu")
        self.cpu_bucket_range = _check_buckets(cpu_bucket_range, "cpu")
        self.dram_bucket_range = _check_buckets(dram_bucket_range, "dram")
        self.cpu_indices = cpu_indices
        self.gpu_indices = gpu_indices
        self.pushgateway_url = pushgateway_url
        self.job = job
        self.registry = prometheus_client.CollectorRegistry()
        self.max_gpu_bucket = max(self.gpu_bucket_range)
        self.max_cpu_bucket = max(self.cpu_bucket_range)
        self.max_dram_bucket = max(self.dram_bucket_range)
        self.min_gpu_bucket = min(self.gpu_bucket_range)
        self.min_cpu_bucket = min(self.cpu_bucket_range)
        self.min_dram_bucket = min(self.dram_bucket_range)
        self.energy_monitor = ZeusMonitor(cpu_indices=cpu_indices, gpu_indices=gpu_indices)
        Histogram = prometheus_client.Histogram
        self.gpu_histograms = None
        self.cpu_histograms = None
        self.dram_histograms = None
        if self.energy_monitor.gpu_indices:
            self.gpu_histograms = Histogram(
                "energy_monitor_gpu_energy_joules", "GPU energy of a window, J",
                ["window", "index"], buckets=self.gpu_bucket_range, registry=self.registry)
        if self.energy_monitor.cpu_indices:
            self.cpu_histograms = Histogram(
                "energy_monitor_cpu_energy_joules", "CPU package energy of a window, J",
                ["window", "index"], buckets=self.cpu_bucket_range, registry=self.registry)
            self.dram_histograms = Histogram(
                "energy_monitor_dram_energy_joules", "DRAM energy of a window, J",
                ["window", "index"], buckets=self.dram_bucket_range, registry=self.registry)

    def _window(self, name):
        return f"__EnergyHistogram_{name}"

    def begin_window(self, name: str, sync_execution: bool = True) -> None:
        """Opens window `name` (ValueError when it is open already)."""
        self.energy_monitor.begin_window(self._window(name), sync_execution=sync_execution)

    def end_window(self, name: str, sync_execution: bool = True) -> None:
        """Closes window `name`, observes its energies and pushes."""
        measurement = self.energy_monitor.end_window(self._window(name),
                                                     sync_execution=sync_execution)
        for histogram, energies, low, high, what in (
                (self.gpu_histograms, measurement.gpu_energy, self.min_gpu_bucket,
                 self.max_gpu_bucket, "GPU"),
                (self.cpu_histograms, measurement.cpu_energy, self.min_cpu_bucket,
                 self.max_cpu_bucket, "CPU"),
                (self.dram_histograms, measurement.dram_energy, self.min_dram_bucket,
                 self.max_dram_bucket, "DRAM")):
            if histogram is None or not energies:
                continue
            for index, joules in energies.items():
                if joules > high:
                    logger.warning("EnergyHistogram: %s %d used %.3f J in window '%s', above the "
                                   "largest bucket (%.1f J)", what, index, joules, name, high)
                elif joules < low:
                    logger.warning("EnergyHistogram: %s %d used %.3f J in window '%s', below the "
                                   "smallest bucket (%.1f J)", what, index, joules, name, low)
                histogram.labels(window=name, index=str(index)).observe(joules)
        _push(self.pushgateway_url, self.job, self.registry, who="EnergyHistogram")


def _start_loop(target, name, args, who):
    context = mp.get_context("spawn")
    pipe = context.Queue()
    ready = context.Event()
    proc = context.Process(target=target, args=(name, pipe) + tuple(args),
                           kwargs={"_ready": ready}, daemon=True,
                           name=f"zeus.metric {who} {name}")
    proc.start()
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not ready.wait(timeout=0.1):
        if not proc.is_alive():
            raise ZeusBaseError(f"{who}: the monitoring process of window '{name}' exited "
                                f"(code {proc.exitcode}) before it began measuring; see its "
                                "log on stderr")
        if time.monotonic() > deadline:
            proc.terminate()
            proc.join(timeout=5)
            raise ZeusBaseError(f"{who}: the monitoring process of window '{name}' did not "
                                f"begin measuring within {_START_TIMEOUT_S:.0f} s")
    return MonitoringProcessState(queue=pipe, proc=proc)


def _stop_loop(state, name, update_period, who):
    state.queue.put("stop")
    state.proc.join(timeout=float(update_period) + _STOP_GRACE_S)
    if state.proc.is_alive():
        state.proc.terminate()
        state.proc.join(timeout=5)
        raise ZeusBaseError(f"{who}: the monitoring process of window '{name}' did not stop "
                            "in time and was terminated; its last period was not pushed")
    if state.proc.exitcode != 0:
        raise ZeusBaseError(f"{who}: the monitoring process of window '{name}' failed (exit "
                            f"code {state.proc.exitcode}); see its log on stderr")


def _wait_or_stop(pipe, timeout_s):
    """True when a stop message arrives within timeout_s."""
    try:
        pipe.get(timeout=timeout_s)
        return True
    except queue_module.Empty:
        return False


class _LoopMetric(Metric):
    """A metric whose open windows each run a spawned helper process that
    pushes every `update_period` seconds (> 0). Subclasses set `_who` (their
    name in messages) and give `_loop()`: the helper's body and its arguments
    after (name, pipe)."""

    _who = "zeus.metric"

    def __init__(self, gpu_indices: list, update_period: int, pushgateway_url: str,
                 job: str) -> None:
        _prometheus()
        if not update_period > 0:
            raise ValueError(f"{self._who}: update_period must be > 0 s, got {update_period!r}")
        self.gpu_indices = gpu_indices
        self.update_period = update_period
        self.pushgateway_url = pushgateway_url
        self.job = job
        self.window_state: Dict[str, MonitoringProcessState] = {}

    def _loop(self) -> Tuple[Callable, tuple]:
        raise NotImplementedError

    def begin_window(self, name: str, sync_execution: bool = False) -> None:
        if name in self.window_state:
            raise ValueError(f"{self._who}: window '{name}' is already open")
        if sync_execution:
            _sync_execution(list(self.gpu_indices or []))
        target, args = self._loop()
        self.window_state[name] = _start_loop(target, name, args, self._who)

    def end_window(self, name: str, sync_execution: bool = False) -> None:
        state = self.window_state.pop(name, None)
        if state is None:
            raise ValueError(f"{self._who}: window '{name}' is not open")
        if sync_execution:
            _sync_execution(list(self.gpu_indices or []))
        _stop_loop(state, name, self.update_period, self._who)


def _push_period(pushgateway_url, job, registry, name, who, final, retried):
    """Pushes window `name`'s `registry`; a failure raises at the `final`
    push and is otherwise logged with `retried` (when the counts go out)."""
    try:
        _push(pushgateway_url, job, registry, {"window": name}, who)
    except ZeusBaseError as e:
        if final:
            raise
        logger.warning("%s (%s)", e.message, retried)


class EnergyCumulativeCounter(_LoopMetric):
    """Counters of the energy spent while a window is open, pushed every
    `update_period` seconds by a spawned helper process.

    Args:
        cpu_indices, gpu_indices: Devices to measure.
        update_period: Seconds between pushes (> 0).
        pushgateway_url, job: Where and as what to push.

    begin_window returns once the helper has begun measuring (raising
    ZeusBaseError if it dies first); end_window stops it after its final
    push (ZeusBaseError if it failed).
    """

    _who = "EnergyCumulativeCounter"

    def __init__(self, cpu_indices: list, gpu_indices: list, update_period: int,
                 pushgateway_url: str, job: str) -> None:
        super().__init__(gpu_indices, update_period, pushgateway_url, job)
        self.cpu_indices = cpu_indices

    def _loop(self):
        return energy_monitoring_loop, (self.cpu_indices, self.gpu_indices, self.update_period,
                                        self.pushgateway_url, self.job)


def energy_monitoring_loop(name: str, pipe: mp.Queue, cpu_indices: list, gpu_indices: list,
                           update_period: int, pushgateway_url: str, job: str, *,
                           _ready=None) -> None:
    """Body of an EnergyCumulativeCounter helper process: every
    update_period seconds, adds the energy since the last update to the
    counters of window `name` and pushes them; on any message from `pipe`,
    counts the last partial period, pushes and returns. `_ready` (an
    Event) is set once measuring has begun."""
    prometheus_client = _prometheus()
    registry = prometheus_client.CollectorRegistry()
    monitor = ZeusMonitor(cpu_indices=cpu_indices, gpu_indices=gpu_indices)
    Counter = prometheus_client.Counter
    counters = {}
    if monitor.gpu_indices:
        counters["gpu_energy"] = Counter("energy_monitor_gpu_energy_joules",
                                         "GPU energy while the window is open, J",
                                         ["window", "index"], registry=registry)
    if monitor.cpu_indices:
        counters["cpu_energy"] = Counter("energy_monitor_cpu_energy_joules",
                                         "CPU package energy while the window is open, J",
                                         ["window", "index"], registry=registry)
        counters["dram_energy"] = Counter("energy_monitor_dram_energy_joules",
                                          "DRAM energy while the window is open, J",
                                          ["window", "index"], registry=registry)
    piece = 0
    current = f"__EnergyCumulativeCounter_{name}_{piece}"
    monitor.begin_window(current, sync_execution=False)
    if _ready is not None:
        _ready.set()
    stop = False
    while not stop:
        stop = _wait_or_stop(pipe, update_period)
        measurement = monitor.end_window(current, sync_execution=False)
        if not stop:
            piece += 1
            current = f"__EnergyCumulativeCounter_{name}_{piece}"
            monitor.begin_window(current, sync_execution=False)
        for attr, counter in counters.items():
            for index, joules in (getattr(measurement, attr) or {}).items():
                counter.labels(window=name, index=str(index)).inc(max(joules, 0.0))
        _push_period(pushgateway_url, job, registry, name, "EnergyCumulativeCounter", stop,
                     "the counts go out with the next push")


class PowerGauge(_LoopMetric):
    """Gauges of each GPU's power while a window is open, pushed every
    `update_period` seconds by a spawned helper process.

    Args:
        gpu_indices: GPUs to watch.
        update_period: Seconds between pushes (> 0).
        pushgateway_url, job: Where and as what to push.
    """

    _who = "PowerGauge"

    def _loop(self):
        return power_monitoring_loop, (self.gpu_indices, self.update_period, self.pushgateway_url,
                                       self.job)


def power_monitoring_loop(name: str, pipe: mp.Queue, gpu_indices: List[int],
                          update_period: int, pushgateway_url: str, job: str, *,
                          _ready=None) -> None:
    """Body of a PowerGauge helper process: every update_period seconds,
    sets window `name`'s gauges to each GPU's latest power (W) and pushes;
    returns on any message from `pipe` after a last update."""
    from zeus.monitor.power import PowerMonitor

    prometheus_client = _prometheus()
    registry = prometheus_client.CollectorRegistry()
    monitor = PowerMonitor(gpu_indices=gpu_indices,
                           update_period=min(0.1, float(update_period)))
    gauge = prometheus_client.Gauge("power_monitor_gpu_power_watts",
                                    "Latest GPU power while the window is open, W",
                                    ["window", "index"], registry=registry)
    if _ready is not None:
        _ready.set()
    stop = False
    try:
        while not stop:
            stop = _wait_or_stop(pipe, update_period)
            for index, watts in (monitor.get_power() or {}).items():
                gauge.labels(window=name, index=str(index)).set(watts)
            _push_period(pushgateway_url, job, registry, name, "PowerGauge", stop,
                         "retried at the next period")
    finally:
        monitor.stop()


__all__ = ["MonitoringProcessState", "Metric", "EnergyHistogram", "EnergyCumulativeCounter",
           "energy_monitoring_loop", "PowerGauge", "power_monitoring_loop"]
