"""ZeusMonitor.measurement_states over the fake GPUs: as in the original, an
open window's MeasurementState holds the GPU energy counters (J) read at the
window's beginning, in a dict attribute that begin_window fills and
end_window empties. The fake counter advances by 1 J per read (at the default
700 W limit), so the value at a boundary lies strictly between two reads
around it, and reading the states reads no counter."""

import time

import pytest

from zeus.device import get_gpus
from zeus.monitor import MeasurementState, ZeusMonitor


def test_states_hold_the_counters_read_at_begin_without_reading_again():
    monitor = ZeusMonitor(gpu_indices=[0, 1])
    gpus = get_gpus()
    before_mj = [gpus.get_total_energy_consumption(i) for i in (0, 1)]
    before_s = time.time()
    monitor.begin_window("w")
    after_s = time.time()
    states = monitor.measurement_states
    again = monitor.measurement_states["w"]  # Reading twice reads no counter.
    after_mj = [gpus.get_total_energy_consumption(i) for i in (0, 1)]

    assert isinstance(states, dict) and list(states) == ["w"]
    # An attribute, as the original's: the same dict every time, kept current.
    assert "measurement_states" in vars(monitor) and states is monitor.measurement_states
    state = states["w"]
    assert isinstance(state, MeasurementState)
    assert before_s <= state.time <= after_s
    assert set(state.gpu_energy) == {0, 1}
    for i in (0, 1):
        # Exactly two reads between `before` and `after`: the window's begin
        # and `after` itself (one fake step, 1 J, each).
        assert after_mj[i] - before_mj[i] == 2000
        assert before_mj[i] / 1000 < state.gpu_energy[i] < after_mj[i] / 1000
        assert state.gpu_energy[i] == pytest.approx(before_mj[i] / 1000 + 1.0)
    assert again == state
    assert state.total_energy == pytest.approx(sum(state.gpu_energy.values()))
    if monitor.cpu_indices:
        assert set(state.cpu_energy) == set(monitor.cpu_indices)
        assert set(state.dram_energy) == set(monitor.cpu_indices)
    else:
        assert state.cpu_energy is None and state.dram_energy is None

    # The window's measurement is the end's counter minus the begin's.
    m = monitor.end_window("w")
    assert m.gpu_energy[0] == pytest.approx(2.0)  # `after`'s read and the end's.
    assert "w" not in monitor.measurement_states and states == {}
    monitor.close()


def test_states_of_nested_windows_and_after_reset():
    monitor = ZeusMonitor(gpu_indices=[1])
    monitor.begin_window("outer")
    monitor.begin_window("inner")
    states = monitor.measurement_states
    assert list(states) == ["outer", "inner"]
    # One counter read (1 J) per boundary: inner began one step after outer.
    assert states["inner"].gpu_energy[1] - states["outer"].gpu_energy[1] == pytest.approx(1.0)
    monitor.end_window("inner")
    assert list(monitor.measurement_states) == ["outer"]
    monitor.reset_windows()
    assert monitor.measurement_states == {}
    monitor.close()
    assert monitor.measurement_states == {}  # A closed monitor has no open window.
