"""GlobalFrequencyOptimizer in a real PyTorch training loop over the fake
GPUs (tests/device/fake_nvml: graphics clocks 1980 down to 345 MHz in 15 MHz
steps at the current memory clock). The fake's energy does not depend on the
clock, so every clock costs the same and the selectors' tie-break (the
highest clock) decides; what is checked is the walk, the locks and their
undoing (the C++ tests check decisions on a clock model)."""

import json

import pytest

from training import Trainer, batches, make_task
from zeus.exception import InvalidArgumentError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.frequency import GlobalFrequencyOptimizer
from zeus.optimizer.power_limit import Energy, OptimumSelector, Time

FAST = dict(wait_steps=2, warmup_steps=2, profile_steps=3, clock_step=300, min_clock=1000,
            min_measure_time_s=0.0)
GRID = [1980, 1680, 1380, 1080]


def train(fo, epochs=4, batch_size=8):
    x, y = make_task()
    trainer = Trainer()
    for _ in range(epochs):
        fo.on_epoch_begin()
        for bx, by in batches(x, y, batch_size):
            fo.on_step_begin()
            trainer.step(bx, by)
            fo.on_step_end()
        fo.on_epoch_end()


def fake_log(path):
    return [line for line in path.read_text().splitlines() if "clocks" in line]


def test_profiles_the_grid_pins_a_clock_and_unlocks_at_close(tmp_path, monkeypatch):
    log = tmp_path / "nvml.log"
    monkeypatch.setenv("FAKE_NVML_LOG", str(log))
    monitor = ZeusMonitor(gpu_indices=[0])
    fo = GlobalFrequencyOptimizer(monitor, Time(), profile_path=tmp_path / "clocks.json", **FAST)
    assert fo.clocks == GRID
    assert fo.phase == "waiting"
    train(fo)
    assert fo.phase == "done"
    assert fo.optimal_clock in GRID  # Time on wall-clock noise: any of them.
    fo_optimum = fo.optimal_clock
    profile = fo.profile()
    assert [m["sm_clock_mhz"] for m in profile["measurements"]] == GRID
    fo.close()
    monitor.close()
    locks = fake_log(log)
    assert locks[0] == "set_gpu_locked_clocks 0 1980 1980"
    assert [line.split()[-1] for line in locks[1:5]] == [str(mhz) for mhz in GRID]
    assert locks[5] == f"set_gpu_locked_clocks 0 {fo_optimum} {fo_optimum}"
    assert locks[-1] == "reset_gpu_locked_clocks 0"
    saved = json.loads((tmp_path / "clocks.json").read_text())
    assert saved["format"] == "zeus-frequency-profile"
    assert len(saved["measurements"]) == len(GRID)


def test_a_saved_profile_pins_at_once(tmp_path):
    path = tmp_path / "clocks.json"
    monitor = ZeusMonitor(gpu_indices=[0])
    with GlobalFrequencyOptimizer(monitor, Energy(), profile_path=path, **FAST) as fo:
        train(fo)
        optimum = fo.optimal_clock
    with GlobalFrequencyOptimizer(monitor, Energy(), profile_path=path, **FAST) as fo:
        assert fo.phase == "done"
        assert fo.optimal_clock == optimum


def test_dry_run_locks_nothing(tmp_path, monkeypatch):
    log = tmp_path / "nvml.log"
    monkeypatch.setenv("FAKE_NVML_LOG", str(log))
    monkeypatch.setenv("ZEUS_DRY_RUN", "1")
    monitor = ZeusMonitor(gpu_indices=[0])
    with GlobalFrequencyOptimizer(monitor, **FAST) as fo:
        train(fo)
        assert fo.phase == "done"
    monitor.close()
    assert fake_log(log) == []


def test_bad_arguments_are_refused():
    monitor = ZeusMonitor(gpu_indices=[0])

    class Mine(OptimumSelector):
        def select(self, measurements):
            return 1

    with pytest.raises(InvalidArgumentError, match="custom select"):
        GlobalFrequencyOptimizer(monitor, Mine())
    with pytest.raises(InvalidArgumentError, match="clock_step"):
        GlobalFrequencyOptimizer(monitor, clock_step=0)


def test_hugging_face_twin_is_importable():
    from zeus.optimizer.frequency import HFGlobalFrequencyOptimizer
    assert HFGlobalFrequencyOptimizer.__name__ == "HFGlobalFrequencyOptimizer"
