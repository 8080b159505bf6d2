"""Thermally stable energy profiling of a repeated piece of GPU work.

A *trial* runs `target_function` (one iteration of the workload): it sleeps
`cooldown_duration` seconds so the GPU cools, runs warmup iterations, then
measures, in one ZeusMonitor window, as many iterations as fill
`measurement_duration` seconds (from a calibrated iteration time). A *sweep*
repeats trials for each value of one duration and calls the value valid when
the trials' energy per iteration varies little: its coefficient of variation
(sample standard deviation / mean) is at most `trial_stddev_threshold`.

The GPU temperature (mean over the monitor's GPUs, deg C) is read right after
the measurement window opens and right after it closes. It is NaN where no
temperature can be read (no temperature support in this build's device
layer, or the GPU does not report one); energies and times are unaffected.

In a torch.distributed job every rank runs the same calls; energies are
summed over ranks, times and the calibrated iteration time are the maximum
over ranks, temperatures the mean (zeus.utils.framework.all_reduce).
"""

import logging
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from zeus.monitor.energy import ZeusMonitor
from zeus.utils import framework

logger = logging.getLogger(__name__)

_DEFAULT_SEARCH_RANGE = [float(x) for x in range(1, 11)]

_WINDOW = "__zeus_profile_trial"
_CALIBRATION_WINDOW = "__zeus_profile_calibration"


@dataclass
class TrialResult:
    """One measured trial.

    Attributes:
        energy_per_iter: J per iteration (all GPUs, all ranks).
        time_per_iter: s per iteration.
        total_energy: J of the measured iterations.
        total_time: s of the measured iterations.
        iterations: How many iterations were measured.
        temperature_before, temperature_after: Mean GPU temperature, deg C,
            when the measurement began and ended (NaN when unreadable).
    """

    energy_per_iter: float
    time_per_iter: float
    total_energy: float
    total_time: float
    iterations: int
    temperature_before: float
    temperature_after: float


@dataclass
class SweepResult:
    """The trials of one (measurement_duration, cooldown_duration) pair.

    energy_mean and energy_std are the mean and sample standard deviation of
    energy_per_iter over the trials (std 0 for one trial); is_valid says
    energy_std / energy_mean <= the sweep's trial_stddev_threshold.
    """

    measurement_duration: float
    cooldown_duration: float
    trials: List[TrialResult]
    energy_mean: float
    energy_std: float
    avg_temperature_before: float
    avg_temperature_after: float
    avg_total_time: float
    avg_total_energy: float
    is_valid: bool


@dataclass
class SweepReport:
    """A sweep of one duration with the other fixed.

    Attributes:
        sweep_param: (name, values swept), name "measurement_duration" or
            "cooldown_duration".
        fixed_param: (name, value) of the other duration.
        entries: One SweepResult per swept value, in sweep order.
    """

    sweep_param: Tuple[str, List[float]]
    fixed_param: Tuple[str, float]
    entries: List[SweepResult]


def _read_avg_gpu_temperature(zeus_monitor) -> float:
    """Mean temperature (deg C) of the monitor's GPUs; NaN when none can be
    read. Uses the monitor's `gpus` (as the original's ZeusMonitor has) or
    zeus.device.get_gpus(), whichever offers get_gpu_temperature."""
    gpus = getattr(zeus_monitor, "gpus", None)
    if gpus is None or not hasattr(gpus, "get_gpu_temperature"):
        try:
            from zeus.device import get_gpus
            gpus = get_gpus()
        except Exception as e:  # No device layer with GPUs in this build.
            logger.debug("zeus.profile: no GPU temperature (%s)", e)
            return math.nan
    read = getattr(gpus, "get_gpu_temperature", None)
    if read is None:
        return math.nan
    temperatures = []
    for index in getattr(zeus_monitor, "gpu_indices", []):
        try:
            temperatures.append(float(read(index)))
        except Exception as e:  # Not supported by this GPU or build.
            logger.debug("zeus.profile: GPU %s temperature unreadable (%s)", index, e)
    return sum(temperatures) / len(temperatures) if temperatures else math.nan


def _reduce(values, operation):
    if framework.is_distributed():
        return framework.all_reduce(list(values), operation)
    return list(values)


def _reduce_mean(value):
    if not framework.is_distributed():
        return value
    total = framework.all_reduce([value], "sum")[0]
    get_world_size = getattr(framework, "get_world_size", None)
    if get_world_size is None:  # A zeus.utils.framework without the helper.
        import torch.distributed
        get_world_size = torch.distributed.get_world_size
    return total / get_world_size()


def _check_duration(value, what, positive):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or (value <= 0 if positive else value < 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"zeus.profile: {what} must be a finite number {bound} s, got {value!r}")
    return float(value)


def _check_count(value, what, minimum):
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"zeus.profile: {what} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_range(values, what, positive):
    if values is None:
        return list(_DEFAULT_SEARCH_RANGE)
    values = list(values)
    if not values:
        raise ValueError(f"zeus.profile: {what} is empty")
    return [_check_duration(v, f"every value of {what}", positive) for v in values]


def _calibrate_iteration_duration(target_function, zeus_monitor, num_warmup_iterations,
                                  num_calibration_iterations) -> float:
    """Seconds one iteration takes (max over ranks), after warmup."""
    for _ in range(num_warmup_iterations):
        target_function()
    zeus_monitor.begin_window(_CALIBRATION_WINDOW)
    try:
        for _ in range(num_calibration_iterations):
            target_function()
    except BaseException:  # Ctrl-C included: never leave the window open.
        zeus_monitor.end_window(_CALIBRATION_WINDOW, sync_execution=False)
        raise
    measurement = zeus_monitor.end_window(_CALIBRATION_WINDOW)
    duration = _reduce([measurement.time / num_calibration_iterations], "max")[0]
    duration = max(duration, 1e-9)  # A no-op target still takes some time.
    logger.info("Calibrated iteration duration: %.3f ms", duration * 1e3)
    return duration


def _run_trial(target_function, zeus_monitor, measurement_duration, cooldown_duration,
               num_warmup_iterations, iteration_duration) -> TrialResult:
    iterations = max(1, math.ceil(measurement_duration / iteration_duration))
    if cooldown_duration > 0:
        time.sleep(cooldown_duration)
    for _ in range(num_warmup_iterations):
        target_function()
    zeus_monitor.begin_window(_WINDOW)
    temperature_before = _read_avg_gpu_temperature(zeus_monitor)
    try:
        for _ in range(iterations):
            target_function()
    except BaseException:
        zeus_monitor.end_window(_WINDOW, sync_execution=False)
        raise
    measurement = zeus_monitor.end_window(_WINDOW)
    temperature_after = _read_avg_gpu_temperature(zeus_monitor)
    local_energy = sum(measurement.gpu_energy.values())
    total_energy = _reduce([local_energy], "sum")[0]
    total_time = _reduce([measurement.time], "max")[0]
    return TrialResult(
        energy_per_iter=total_energy / iterations,
        time_per_iter=total_time / iterations,
        total_energy=total_energy,
        total_time=total_time,
        iterations=iterations,
        temperature_before=_reduce_mean(temperature_before),
        temperature_after=_reduce_mean(temperature_after))


def _mean(values):
    values = list(values)
    return sum(values) / len(values) if values else math.nan


def _summarize(measurement_duration, cooldown_duration, trials, threshold) -> SweepResult:
    energies = [t.energy_per_iter for t in trials]
    mean = _mean(energies)
    std = statistics.stdev(energies) if len(energies) > 1 else 0.0
    valid = mean > 0 and std / mean <= threshold
    return SweepResult(
        measurement_duration=measurement_duration,
        cooldown_duration=cooldown_duration,
        trials=trials,
        energy_mean=mean,
        energy_std=std,
        avg_temperature_before=_mean(t.temperature_before for t in trials),
        avg_temperature_after=_mean(t.temperature_after for t in trials),
        avg_total_time=_mean(t.total_time for t in trials),
        avg_total_energy=_mean(t.total_energy for t in trials),
        is_valid=valid)


def _sweep(target_function, zeus_monitor, sweep_name, values, fixed_name, fixed_value,
           num_trials, num_warmup_trials, trial_stddev_threshold, num_warmup_iterations,
           iteration_duration) -> SweepReport:
    def durations(value):
        if sweep_name == "measurement_duration":
            return value, fixed_value
        return fixed_value, value

    logger.info("Sweeping %s (%s fixed at %.3g s)", sweep_name, fixed_name, fixed_value)
    if num_warmup_trials:
        logger.info("Running %d warmup trial(s)", num_warmup_trials)
    for i in range(num_warmup_trials):
        measurement_duration, cooldown_duration = durations(values[0])
        _run_trial(target_function, zeus_monitor, measurement_duration, cooldown_duration,
                   num_warmup_iterations, iteration_duration)
        logger.info("Warmup trial %d/%d done", i + 1, num_warmup_trials)
    entries = []
    for value in values:
        measurement_duration, cooldown_duration = durations(value)
        logger.info("Starting %s=%.3g s [%d trials]", sweep_name, value, num_trials)
        trials = []
        for i in range(num_trials):
            trials.append(_run_trial(target_function, zeus_monitor, measurement_duration,
                                     cooldown_duration, num_warmup_iterations,
                                     iteration_duration))
            logger.info("Trial %d/%d done", i + 1, num_trials)
        entry = _summarize(measurement_duration, cooldown_duration, trials,
                           trial_stddev_threshold)
        logger.info("%s=%.3g s: energy/iter %.6g J +- %.3g (%s)", sweep_name, value,
                    entry.energy_mean, entry.energy_std, "valid" if entry.is_valid else "unstable")
        entries.append(entry)
    return SweepReport(sweep_param=(sweep_name, list(values)),
                       fixed_param=(fixed_name, fixed_value), entries=entries)


def _check_common(zeus_monitor, num_trials, num_warmup_trials, trial_stddev_threshold,
                  num_warmup_iterations, num_calibration_iterations):
    if not hasattr(zeus_monitor, "begin_window") or not hasattr(zeus_monitor, "end_window"):
        raise TypeError(f"zeus.profile: zeus_monitor must be a ZeusMonitor, got "
                        f"{type(zeus_monitor).__name__}")
    _check_count(num_trials, "num_trials", 1)
    _check_count(num_warmup_trials, "num_warmup_trials", 0)
    _check_count(num_warmup_iterations, "num_warmup_iterations", 0)
    _check_count(num_calibration_iterations, "num_calibration_iterations", 1)
    if not (isinstance(trial_stddev_threshold, (int, float)) and trial_stddev_threshold >= 0):
        raise ValueError("zeus.profile: trial_stddev_threshold must be >= 0, got "
                         f"{trial_stddev_threshold!r}")


def _checked_iteration_duration(target_function, zeus_monitor, num_trials, num_warmup_trials,
                                trial_stddev_threshold, num_warmup_iterations,
                                num_calibration_iterations, iteration_duration):
    """Checks the arguments every sweep takes (raising as _check_common);
    returns `iteration_duration` (s, checked > 0) or, when None, one
    calibrated on `target_function`."""
    _check_common(zeus_monitor, num_trials, num_warmup_trials, trial_stddev_threshold,
                  num_warmup_iterations, num_calibration_iterations)
    if iteration_duration is None:
        return _calibrate_iteration_duration(
            target_function, zeus_monitor, num_warmup_iterations, num_calibration_iterations)
    return _check_duration(iteration_duration, "iteration_duration", True)


def _checked_sweep(target_function, zeus_monitor, swept, search_range, fixed, fixed_value,
                   num_trials, num_warmup_trials, trial_stddev_threshold, num_warmup_iterations,
                   num_calibration_iterations, iteration_duration) -> SweepReport:
    """Checks a sweep's arguments (the range of `swept` first, then the
    `fixed` duration, then the rest) and runs it: `swept` and `fixed` are
    "measurement_duration" (> 0) and "cooldown_duration" (>= 0) either way
    round."""
    values = _check_range(search_range, f"{swept}_search_range",
                          positive=swept == "measurement_duration")
    fixed_value = _check_duration(fixed_value, fixed, positive=fixed == "measurement_duration")
    iteration_duration = _checked_iteration_duration(
        target_function, zeus_monitor, num_trials, num_warmup_trials, trial_stddev_threshold,
        num_warmup_iterations, num_calibration_iterations, iteration_duration)
    return _sweep(target_function, zeus_monitor, swept, values, fixed, fixed_value, num_trials,
                  num_warmup_trials, trial_stddev_threshold, num_warmup_iterations,
                  iteration_duration)


def profile_measurement_duration(
        target_function: Callable[[], Any], zeus_monitor: ZeusMonitor,
        measurement_duration_search_range: Optional[List[float]] = None,
        cooldown_duration: float = 10.0, num_trials: int = 10, num_warmup_trials: int = 2,
        trial_stddev_threshold: float = 0.01, num_warmup_iterations: int = 10,
        num_calibration_iterations: int = 100,
        iteration_duration: Optional[float] = None) -> SweepReport:
    """Sweeps measurement durations (default 1..10 s) with the cooldown
    fixed; the shortest valid entry is a measurement long enough to be
    repeatable. `iteration_duration` skips the calibration when given."""
    return _checked_sweep(target_function, zeus_monitor, "measurement_duration",
                          measurement_duration_search_range, "cooldown_duration",
                          cooldown_duration, num_trials, num_warmup_trials,
                          trial_stddev_threshold, num_warmup_iterations,
                          num_calibration_iterations, iteration_duration)


def profile_cooldown_duration(
        target_function: Callable[[], Any], zeus_monitor: ZeusMonitor,
        cooldown_duration_search_range: Optional[List[float]] = None,
        measurement_duration: float = 10.0, num_trials: int = 10, num_warmup_trials: int = 2,
        trial_stddev_threshold: float = 0.01, num_warmup_iterations: int = 10,
        num_calibration_iterations: int = 100,
        iteration_duration: Optional[float] = None) -> SweepReport:
    """Sweeps cooldown durations (default 1..10 s) with the measurement
    duration fixed; the shortest valid entry is a cooldown long enough for
    repeatable trials."""
    return _checked_sweep(target_function, zeus_monitor, "cooldown_duration",
                          cooldown_duration_search_range, "measurement_duration",
                          measurement_duration, num_trials, num_warmup_trials,
                          trial_stddev_threshold, num_warmup_iterations,
                          num_calibration_iterations, iteration_duration)


def profile_parameters(
        target_function: Callable[[], Any], zeus_monitor: ZeusMonitor,
        measurement_duration_search_range: Optional[List[float]] = None,
        cooldown_duration_search_range: Optional[List[float]] = None, num_trials: int = 10,
        num_warmup_trials: int = 2, trial_stddev_threshold: float = 0.01,
        num_warmup_iterations: int = 10,
        num_calibration_iterations: int = 100) -> Tuple[SweepReport, SweepReport]:
    """Both sweeps, calibrating once: measurement durations with the cooldown
    fixed at the longest cooldown of its range, then cooldowns with the
    measurement fixed at the longest measurement duration of its range.
    Returns (measurement report, cooldown report)."""
    measurement_values = _check_range(measurement_duration_search_range,
                                      "measurement_duration_search_range", positive=True)
    cooldown_values = _check_range(cooldown_duration_search_range,
                                   "cooldown_duration_search_range", positive=False)
    iteration_duration = _checked_iteration_duration(
        target_function, zeus_monitor, num_trials, num_warmup_trials, trial_stddev_threshold,
        num_warmup_iterations, num_calibration_iterations, None)
    common = dict(num_trials=num_trials, num_warmup_trials=num_warmup_trials,
                  trial_stddev_threshold=trial_stddev_threshold,
                  num_warmup_iterations=num_warmup_iterations,
                  num_calibration_iterations=num_calibration_iterations,
                  iteration_duration=iteration_duration)
    measurement_report = profile_measurement_duration(
        target_function, zeus_monitor, measurement_values,
        cooldown_duration=max(cooldown_values), **common)
    cooldown_report = profile_cooldown_duration(
        target_function, zeus_monitor, cooldown_values,
        measurement_duration=max(measurement_values), **common)
    return measurement_report, cooldown_report


def measure(target_function: Callable[[], Any], zeus_monitor: ZeusMonitor,
            measurement_duration: float, cooldown_duration: float,
            num_warmup_iterations: int = 10, num_calibration_iterations: int = 100,
            warmup_settle_duration: Optional[float] = None) -> TrialResult:
    """One trial at the given durations, after calibrating the iteration
    time. With warmup_settle_duration (s), the warmup before the
    measurement runs that long (at least one iteration, rounded up) instead
    of num_warmup_iterations iterations; calibration still uses
    num_warmup_iterations."""
    measurement_duration = _check_duration(measurement_duration, "measurement_duration", True)
    cooldown_duration = _check_duration(cooldown_duration, "cooldown_duration", False)
    _check_common(zeus_monitor, 1, 0, 0.0, num_warmup_iterations, num_calibration_iterations)
    if warmup_settle_duration is not None:
        warmup_settle_duration = _check_duration(warmup_settle_duration,
                                                 "warmup_settle_duration", False)
    iteration_duration = _calibrate_iteration_duration(
        target_function, zeus_monitor, num_warmup_iterations, num_calibration_iterations)
    warmup = num_warmup_iterations
    if warmup_settle_duration is not None:
        warmup = max(1, math.ceil(warmup_settle_duration / iteration_duration))
    return _run_trial(target_function, zeus_monitor, measurement_duration, cooldown_duration,
                      warmup, iteration_duration)
