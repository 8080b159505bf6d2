"""GlobalPowerLimitOptimizer in a real PyTorch training loop over the fake
GPUs, whose energy per counter read depends on the power limit
(conftest.ENERGY_STEP_MJ_BY_LIMIT): profiling walks every limit from 700 W
down to 100 W and pins the one the model makes cheapest."""

import json

import pytest

from conftest import ENERGY_STEP_MJ_BY_LIMIT
from training import Trainer, batches, make_task
from zeus.device import get_gpus
from zeus.exception import InvalidArgumentError, IoError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import (Energy, GlobalPowerLimitOptimizer, MaxSlowdownConstraint,
                                        Time, ZeusCost)

FAST = dict(wait_steps=2, warmup_steps=2, profile_steps=3, pl_step=100, min_measure_time_s=0.0)
LIMITS_W = [700, 600, 500, 400, 300, 200, 100]


def cheapest_limit_w():
    return min(LIMITS_W, key=lambda w: (ENERGY_STEP_MJ_BY_LIMIT.get(w, 1000), -w))


def train(monitor, plo, epochs=4, batch_size=8, step_windows=True):
    x, y = make_task()
    trainer = Trainer()
    for _ in range(epochs):
        plo.on_epoch_begin()
        monitor.begin_window("epoch")
        for bx, by in batches(x, y, batch_size):
            plo.on_step_begin()
            if step_windows:
                monitor.begin_window("step")
            trainer.step(bx, by)
            if step_windows:
                monitor.end_window("step")
            plo.on_step_end()
        monitor.end_window("epoch")
        plo.on_epoch_end()
    return trainer.accuracy(x, y)


def test_profiles_every_limit_and_pins_the_cheapest():
    monitor = ZeusMonitor()
    plo = GlobalPowerLimitOptimizer(monitor, Energy(), **FAST)
    assert plo.phase == "waiting"
    accuracy = train(monitor, plo)
    assert plo.phase == "done"
    profile = plo.profile()
    assert [m["power_limit_mw"] // 1000 for m in profile["measurements"]] == LIMITS_W
    assert profile["num_gpus"] == 2
    assert plo.optimal_power_limit == cheapest_limit_w() == 400
    gpus = get_gpus()
    assert [gpus.getPowerManagementLimit(i) for i in (0, 1)] == [400_000, 400_000]
    plo.close()  # Gives the original limits back.
    assert [gpus.getPowerManagementLimit(i) for i in (0, 1)] == [700_000, 700_000]
    assert accuracy > 0.7


def test_saved_profile_pins_the_optimum_at_once(tmp_path):
    path = tmp_path / "profile.json"
    monitor = ZeusMonitor()
    with GlobalPowerLimitOptimizer(monitor, ZeusCost(eta_knob=1.0), profile_path=str(path),
                                   **FAST) as plo:
        train(monitor, plo, step_windows=False)
        assert plo.optimal_power_limit == 400
    saved = json.loads(path.read_text())
    assert len(saved["measurements"]) == len(LIMITS_W)
    with GlobalPowerLimitOptimizer(monitor, ZeusCost(1.0), profile_path=str(path), **FAST) as plo:
        assert plo.phase == "done"
        assert plo.optimal_power_limit == 400


def test_other_selectors_are_accepted():
    monitor = ZeusMonitor(gpu_indices=[0])
    for selector in (Time(), MaxSlowdownConstraint(1.5), ZeusCost(0.5, world_size=2), None):
        with GlobalPowerLimitOptimizer(monitor, selector, **FAST) as plo:
            train(monitor, plo, epochs=3, step_windows=False)
            assert plo.phase == "done"
            assert plo.optimal_power_limit in LIMITS_W
    with pytest.raises(InvalidArgumentError):
        MaxSlowdownConstraint(0.5)
    with pytest.raises(InvalidArgumentError):
        ZeusCost(eta_knob=2.0)


def test_unwritable_profile_path_raises_and_keeps_the_profile(tmp_path):
    monitor = ZeusMonitor()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(IoError, match="Not a directory"):
        GlobalPowerLimitOptimizer(monitor, Energy(), profile_path=str(blocker / "p.json"), **FAST)
    # A directory that vanishes: only saving at the end of profiling fails.
    (tmp_path / "missing").mkdir()  # Writable when created (checked then).
    plo = GlobalPowerLimitOptimizer(monitor, Energy(),
                                    profile_path=str(tmp_path / "missing" / "p.json"), **FAST)
    (tmp_path / "missing").rmdir()
    monitor.begin_window("whole run")
    with pytest.raises(IoError, match="saving the profile"):
        train(monitor, plo, epochs=4, step_windows=False)
    # Nothing measured is lost: the profile is whole, the optimum pinned, and
    # the user's window still open and measurable.
    assert plo.phase == "done"
    assert len(plo.profile()["measurements"]) == len(LIMITS_W)
    assert plo.optimal_power_limit == 400
    assert monitor.end_window("whole run").total_energy > 0
    plo.on_step_begin()  # Still usable.
    plo.close()


def test_optimizer_needs_a_zeus_monitor_with_gpus():
    with pytest.raises(InvalidArgumentError):
        GlobalPowerLimitOptimizer(object())
    with pytest.raises(InvalidArgumentError, match="no GPU"):
        GlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[], cpu_indices=[]))
