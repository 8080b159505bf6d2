"""zeus.profile: trials, sweeps and measure() with a fast target function and
tiny durations, on a real ZeusMonitor over the fake libnvml and on a scripted
monitor whose energies are known."""

import math
import time

import pytest

from zeus.monitor import ZeusMonitor
from zeus.monitor.energy import Measurement
from zeus.profile import (SweepReport, SweepResult, TrialResult, _DEFAULT_SEARCH_RANGE, measure,
                          profile_cooldown_duration, profile_measurement_duration,
                          profile_parameters)


class Target:
    """A target of about `seconds` per call that counts its calls."""

    def __init__(self, seconds=0.001):
        self.seconds = seconds
        self.calls = 0

    def __call__(self):
        self.calls += 1
        end = time.perf_counter() + self.seconds
        while time.perf_counter() < end:
            pass


class ScriptedMonitor:
    """A monitor whose window energies come from a list, in order, and whose
    times are the real elapsed times, or with `times` come from that list
    (so that what depends on them does not depend on the machine's load);
    records the window names."""

    def __init__(self, energies, times=None):
        self.gpu_indices = [0]
        self.energies = list(energies)
        self.scripted_times = None if times is None else list(times)
        self.opened = {}
        self.names = []
        self.times = []

    def begin_window(self, key, sync_execution=True):
        self.opened[key] = time.perf_counter()
        self.names.append(key)

    def end_window(self, key, sync_execution=True, cancel=False):
        elapsed = time.perf_counter() - self.opened.pop(key)
        if self.scripted_times is not None:
            elapsed = self.scripted_times.pop(0)
        self.times.append(elapsed)
        return Measurement(time=elapsed, gpu_energy={0: self.energies.pop(0)})


def test_default_search_range_is_one_to_ten_seconds():
    assert _DEFAULT_SEARCH_RANGE == [float(x) for x in range(1, 11)]


def test_measure_runs_enough_iterations_on_the_fake_gpus():
    monitor = ZeusMonitor(gpu_indices=[0, 1])
    target = Target(0.001)
    result = measure(target, monitor, measurement_duration=0.05, cooldown_duration=0.0,
                     num_warmup_iterations=3, num_calibration_iterations=10)
    assert isinstance(result, TrialResult)
    # Calibration (3 warmup + 10) and the trial (3 warmup + the measured ones).
    assert target.calls == 3 + 10 + 3 + result.iterations
    # An iteration takes at least 1 ms: at most 51 fill 0.05 s.
    assert 1 <= result.iterations <= 0.05 / 0.001 + 1
    assert result.total_time >= result.iterations * 0.001
    assert result.total_energy > 0  # Both fake GPUs' counters moved.
    assert result.energy_per_iter == pytest.approx(result.total_energy / result.iterations)
    assert result.time_per_iter == pytest.approx(result.total_time / result.iterations)
    # The fake libnvml has no temperature here: NaN, not a made-up number.
    for t in (result.temperature_before, result.temperature_after):
        assert math.isnan(t) or 0 < t < 150


def test_measure_warmup_settle_duration_sets_the_warmup_length():
    # Calibration says 5 iterations took 0.01 s: 2 ms each, whatever the
    # machine's load.
    target = Target(0.0)
    monitor = ScriptedMonitor([1.0, 5.0], times=[0.01, 0.1])
    result = measure(target, monitor, measurement_duration=0.01, cooldown_duration=0.0,
                     num_warmup_iterations=2, num_calibration_iterations=5,
                     warmup_settle_duration=0.02)
    warmup = target.calls - 2 - 5 - result.iterations
    assert warmup == 10  # 0.02 s of 2 ms iterations, not num_warmup_iterations.
    assert result.iterations == 5
    assert result.total_energy == 5.0


def test_cooldown_sleeps_before_each_trial():
    target = Target(0.0005)
    begun = time.perf_counter()
    report = profile_cooldown_duration(target, ScriptedMonitor([1.0] * 20),
                                       cooldown_duration_search_range=[0.0, 0.1],
                                       measurement_duration=0.005, num_trials=2,
                                       num_warmup_trials=0, num_calibration_iterations=5)
    elapsed = time.perf_counter() - begun
    assert elapsed >= 0.2  # Two trials with a 0.1 s cooldown.
    assert report.sweep_param == ("cooldown_duration", [0.0, 0.1])
    assert report.fixed_param == ("measurement_duration", 0.005)
    assert [e.cooldown_duration for e in report.entries] == [0.0, 0.1]


def test_sweep_marks_stable_values_valid():
    # Calibration window, then 2 warmup trials, then 3 trials per value. The
    # first value's trials vary by 10 %, the second's are identical.
    energies = [0.5] + [9.0, 9.0] + [10.0, 11.0, 9.0] + [10.0, 10.0, 10.0]
    monitor = ScriptedMonitor(energies)
    report = profile_measurement_duration(
        Target(0.0005), monitor, measurement_duration_search_range=[0.005, 0.01],
        cooldown_duration=0.0, num_trials=3, num_warmup_trials=2,
        trial_stddev_threshold=0.05, num_warmup_iterations=1, num_calibration_iterations=4)
    assert isinstance(report, SweepReport)
    assert report.sweep_param == ("measurement_duration", [0.005, 0.01])
    assert report.fixed_param == ("cooldown_duration", 0.0)
    assert monitor.energies == []  # Every scripted window was used.
    first, second = report.entries
    assert isinstance(first, SweepResult) and len(first.trials) == 3
    iterations = first.trials[0].iterations
    assert [t.total_energy for t in first.trials] == [10.0, 11.0, 9.0]
    assert first.energy_mean == pytest.approx(10.0 / iterations)
    assert first.energy_std == pytest.approx(1.0 / iterations)  # Sample std of 10, 11, 9.
    assert first.avg_total_energy == pytest.approx(10.0)
    assert not first.is_valid  # 10 % > 5 %.
    assert second.is_valid and second.energy_std == 0.0
    assert second.trials[0].iterations >= first.trials[0].iterations
    assert second.avg_total_time > 0


def test_profile_parameters_fixes_each_sweep_at_the_other_maximum():
    monitor = ScriptedMonitor([1.0] * 100)
    measurement_report, cooldown_report = profile_parameters(
        Target(0.0002), monitor, measurement_duration_search_range=[0.002, 0.004],
        cooldown_duration_search_range=[0.0, 0.01], num_trials=2, num_warmup_trials=1,
        num_warmup_iterations=1, num_calibration_iterations=3)
    assert measurement_report.fixed_param == ("cooldown_duration", 0.01)
    assert cooldown_report.fixed_param == ("measurement_duration", 0.004)
    assert [e.measurement_duration for e in cooldown_report.entries] == [0.004, 0.004]
    # One calibration window for both sweeps; (1 warmup + 2 x 2) trials each.
    assert monitor.names.count("__zeus_profile_calibration") == 1
    assert len(monitor.names) == 1 + 2 * (1 + 2 * 2)


def test_bad_arguments_are_refused_clearly():
    monitor = ScriptedMonitor([])
    with pytest.raises(ValueError, match="measurement_duration must be a finite number > 0"):
        measure(Target(), monitor, measurement_duration=0, cooldown_duration=1)
    with pytest.raises(ValueError, match="cooldown_duration must be a finite number >= 0"):
        measure(Target(), monitor, measurement_duration=1, cooldown_duration=-1)
    with pytest.raises(ValueError, match="measurement_duration_search_range is empty"):
        profile_measurement_duration(Target(), monitor, measurement_duration_search_range=[])
    with pytest.raises(ValueError, match="num_trials must be an integer >= 1"):
        profile_cooldown_duration(Target(), monitor, num_trials=0)
    with pytest.raises(TypeError, match="zeus_monitor must be a ZeusMonitor"):
        measure(Target(), object(), measurement_duration=1, cooldown_duration=0)
    assert monitor.names == []  # Nothing ran.


def test_ctrl_c_during_calibration_closes_its_window():
    class Interrupted(Target):
        def __call__(self):
            super().__call__()
            if self.calls == 3:
                raise KeyboardInterrupt

    monitor = ZeusMonitor(gpu_indices=[0])
    with pytest.raises(KeyboardInterrupt):
        measure(Interrupted(0.0), monitor, measurement_duration=0.01, cooldown_duration=0.0,
                num_warmup_iterations=1, num_calibration_iterations=5)
    # The calibration window was closed: a later call calibrates again.
    result = measure(Target(0.0), monitor, measurement_duration=0.01, cooldown_duration=0.0,
                     num_warmup_iterations=1, num_calibration_iterations=5)
    assert result.iterations >= 1


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, True, "1"])
def test_durations_that_are_not_finite_numbers_are_value_errors(bad):
    with pytest.raises(ValueError, match="measurement_duration must be a finite number > 0 s"):
        measure(Target(0.0), ScriptedMonitor([]), measurement_duration=bad, cooldown_duration=0.0)
    with pytest.raises(ValueError, match="cooldown_duration must be a finite number >= 0 s"):
        measure(Target(0.0), ScriptedMonitor([]), measurement_duration=1.0, cooldown_duration=bad)
