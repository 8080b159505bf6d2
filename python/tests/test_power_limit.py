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
from zeus.optimizer.power_limit import (Done, Energy, GlobalPowerLimitOptimizer,
                                        MaxSlowdownConstraint, OptimumSelector,
                                        PowerLimitMeasurement, Profiling, Ready, Time, Warmup,
                                        ZeusCost)

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


# ---- The original's attributes, states and units; Python selectors ---------------------------

class SecondHighest(OptimumSelector):
    """A user's own selector: not the cheapest limit, so a pin of it shows
    the core asked Python."""

    def __init__(self):
        self.calls = []

    def select(self, measurements):
        self.calls.append(list(measurements))
        return sorted(m.power_limit for m in measurements)[-2]


def test_state_and_attributes_in_the_originals_units():
    monitor = ZeusMonitor()
    with GlobalPowerLimitOptimizer(monitor, Energy(), **FAST) as plo:
        assert plo.pl_step == 100_000  # mW, as the original keeps it.
        assert plo.power_limits == [w * 1000 for w in LIMITS_W]
        assert plo.current_power_limit == 700_000
        assert (plo.warmup_steps, plo.profile_steps, plo.profile_path) == (2, 3, None)
        assert plo.monitor is monitor and isinstance(plo.optimum_selector, Energy)
        assert plo.measurements == []
        assert plo.state == Ready(next_power_limit=700_000, steps=3)  # wait_steps + 1.
        for _ in range(3):
            plo.on_step_begin()
        assert plo.state == Warmup(current_power_limit=700_000, steps=2)
        plo.on_step_begin()
        plo.on_step_begin()
        assert plo.state == Profiling(current_power_limit=700_000, steps=3)
        plo.on_epoch_end()  # Interrupted: back to Ready for the same limit.
        assert isinstance(plo.state, Ready) and plo.state.next_power_limit == 700_000
        train(monitor, plo, step_windows=False)
        assert plo.state == Done(optimal_power_limit=400_000)
        assert plo.current_power_limit == 400_000
        measurements = plo.measurements
        assert [m.power_limit for m in measurements] == LIMITS_W
        assert all(isinstance(m, PowerLimitMeasurement) and m.time > 0 for m in measurements)
        assert Energy().select(measurements) == 400


def test_a_python_selector_is_called_back_and_its_choice_pinned(tmp_path):
    monitor = ZeusMonitor()
    path = tmp_path / "profile.json"
    selector = SecondHighest()
    with GlobalPowerLimitOptimizer(monitor, selector, profile_path=path, **FAST) as plo:
        assert plo.profile_path == path
        train(monitor, plo, step_windows=False)
        assert len(selector.calls) == 1
        seen = selector.calls[0]
        assert [m.power_limit for m in seen] == LIMITS_W
        # The measurements are the profile's: 400 W is the cheapest per step.
        assert min(seen, key=lambda m: m.energy).power_limit == 400
        assert plo.state == Done(optimal_power_limit=600_000)
        gpus = get_gpus()
        assert [gpus.getPowerManagementLimit(i) for i in (0, 1)] == [600_000, 600_000]
    # From the saved profile, at creation.
    again = SecondHighest()
    with GlobalPowerLimitOptimizer(monitor, again, profile_path=str(path), **FAST) as plo:
        assert len(again.calls) == 1 and plo.state == Done(optimal_power_limit=600_000)
        assert get_gpus().getPowerManagementLimit(0) == 600_000


def test_a_subclass_of_a_builtin_selector_is_honoured():
    class HighestEnergy(Energy):
        def select(self, measurements):
            return max(measurements, key=lambda m: m.energy).power_limit

    monitor = ZeusMonitor(gpu_indices=[0])
    with GlobalPowerLimitOptimizer(monitor, HighestEnergy(), **FAST) as plo:
        train(monitor, plo, epochs=3, step_windows=False)
        assert plo.optimal_power_limit == 100  # 1200 mJ per read: the dearest.


def test_a_failing_selector_raises_and_keeps_the_maximum_limit():
    class Broken(OptimumSelector):
        def select(self, measurements):
            raise ZeroDivisionError("the user's bug")

    monitor = ZeusMonitor()
    with GlobalPowerLimitOptimizer(monitor, Broken(), **FAST) as plo:
        with pytest.raises(ZeroDivisionError, match="the user's bug"):
            train(monitor, plo, step_windows=False)
        assert plo.state == Done(optimal_power_limit=700_000)
        assert get_gpus().getPowerManagementLimit(0) == 700_000
        assert len(plo.measurements) == len(LIMITS_W)  # Nothing measured is lost.
        plo.on_step_begin()  # Still usable.


@pytest.mark.parametrize("answer,message", [("400", "must return a power limit in W"),
                                            (True, "must return a power limit in W"),
                                            (400.5, "must return a power limit in W"),
                                            (5, "outside the GPUs' range")])
def test_a_selector_answer_that_is_not_a_limit_is_refused(answer, message):
    class Odd(OptimumSelector):
        def select(self, measurements):
            return answer

    monitor = ZeusMonitor(gpu_indices=[0])
    with GlobalPowerLimitOptimizer(monitor, Odd(), **FAST) as plo:
        with pytest.raises(InvalidArgumentError, match=message):
            train(monitor, plo, epochs=3, step_windows=False)
        assert plo.current_power_limit == 700_000


def test_selectors_are_abstract_and_the_builtins_select_like_the_originals():
    with pytest.raises(TypeError):
        OptimumSelector()

    class NoSelect(OptimumSelector):
        pass

    with pytest.raises(TypeError):
        NoSelect()
    ms = [PowerLimitMeasurement(power_limit=w, energy=e, time=t)
          for w, e, t in [(300, 90.0, 1.0), (250, 80.0, 1.05), (200, 85.0, 1.3)]]
    assert Energy().select(ms) == 250
    assert Time().select(ms) == 300
    assert MaxSlowdownConstraint(1.1).select(ms) == 250
    assert MaxSlowdownConstraint(1.5).select(ms) == 200
    assert ZeusCost(eta_knob=1.0).select(ms) == 250
    assert ZeusCost(eta_knob=0.0).select(ms) == 300
    with pytest.raises(InvalidArgumentError):
        GlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[0]), Energy(), profile_steps=0)
    with pytest.raises(InvalidArgumentError, match="pl_step"):
        GlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[0]), Energy(), pl_step=-25)


def test_hf_callback_is_importable_without_transformers():
    from zeus.optimizer.power_limit import HFGlobalPowerLimitOptimizer
    try:
        import transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="transformers"):
            HFGlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[0]))
    else:
        hf = HFGlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[0]), Energy(), wait_steps=2,
                                         warmup_steps=2, profile_steps=3, pl_step=100)
        assert isinstance(hf.optimizer, GlobalPowerLimitOptimizer)
        hf.optimizer.close()


def test_hf_callback_takes_exactly_the_originals_arguments():
    import inspect
    from zeus.optimizer.power_limit import HFGlobalPowerLimitOptimizer
    params = inspect.signature(HFGlobalPowerLimitOptimizer.__init__).parameters
    assert [(p.name, p.kind, p.default) for p in params.values()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("monitor", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("optimum_selector", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("wait_steps", inspect.Parameter.POSITIONAL_OR_KEYWORD, 1),
        ("warmup_steps", inspect.Parameter.POSITIONAL_OR_KEYWORD, 10),
        ("profile_steps", inspect.Parameter.POSITIONAL_OR_KEYWORD, 40),
        ("pl_step", inspect.Parameter.POSITIONAL_OR_KEYWORD, 25),
        ("profile_path", inspect.Parameter.POSITIONAL_OR_KEYWORD, None)]


def test_a_profile_saved_by_the_original_is_loaded(tmp_path):
    path = tmp_path / "original-profile.json"
    rows = [(700, 1000.0), (600, 800.0), (500, 600.0), (400, 300.0), (300, 500.0)]
    path.write_text(json.dumps({"measurements": [
        {"power_limit": w, "energy": e, "time": 2.0} for w, e in rows]}, indent=4))
    monitor = ZeusMonitor()
    selector = SecondHighest()
    with GlobalPowerLimitOptimizer(monitor, Energy(), profile_path=path, **FAST) as plo:
        assert plo.state == Done(optimal_power_limit=400_000)
        assert plo.current_power_limit == 400_000 and plo.profile_path == path
        assert [(m.power_limit, m.energy) for m in plo.measurements] == rows
    with GlobalPowerLimitOptimizer(monitor, selector, profile_path=str(path), **FAST) as plo:
        assert plo.state == Done(optimal_power_limit=600_000)
        assert [m.power_limit for m in selector.calls[0]] == [700, 600, 500, 400, 300]
    path.write_text(json.dumps({"measurements": [{"power_limit": 700, "energy": 1.0,
                                                  "time": -2.0}]}))
    with pytest.raises(InvalidArgumentError, match="original Zeus's format.*time"):
        GlobalPowerLimitOptimizer(monitor, Energy(), profile_path=path, **FAST)


def test_a_selected_limit_that_is_not_a_whole_watt_is_pinned_exactly():
    monitor = ZeusMonitor(gpu_indices=[0])
    selector = SecondHighest()
    options = dict(FAST, pl_step=150.5)
    with GlobalPowerLimitOptimizer(monitor, selector, **options) as plo:
        assert plo.pl_step == 150_500
        assert plo.power_limits == [700_000, 549_500, 399_000, 248_500, 100_000]
        train(monitor, plo, epochs=3, step_windows=False)
        assert [m.power_limit for m in selector.calls[0]] == [700, 549, 399, 248, 100]
        assert plo.state == Done(optimal_power_limit=549_500)
        assert get_gpus().getPowerManagementLimit(0) == 549_500


def test_skipping_nonbinding_limits_is_reported_when_asked():
    # The fake's per-read energy makes its draw arbitrary: whatever is
    # skipped is recorded as equal to the maximum, and the sweep still ends.
    monitor = ZeusMonitor(gpu_indices=[0])
    with GlobalPowerLimitOptimizer(monitor, Energy(), skip_nonbinding_limits=True, **FAST) as plo:
        train(monitor, plo, step_windows=False)
        assert plo.phase == "done"
        skipped = plo.skipped_power_limits
        measured = {m["power_limit_mw"]: m for m in plo.profile()["measurements"]}
        assert len(measured) == len(LIMITS_W)
        for mw in skipped:
            assert measured[mw]["energy_j"] == measured[700_000]["energy_j"]
