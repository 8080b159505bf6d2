"""What GlobalPowerLimitOptimizer and GlobalFrequencyOptimizer share
(zeus.optimizer._jit): the hooks, restore/close, the closed-optimizer error
and the Hugging Face twin, each checked on both knobs over the fake
libnvml."""

import importlib.machinery
import sys
import types

import pytest

from zeus.exception import InvalidArgumentError
from zeus.monitor import ZeusMonitor
from zeus.optimizer import _jit
from zeus.optimizer.frequency import GlobalFrequencyOptimizer
from zeus.optimizer.power_limit import Energy, GlobalPowerLimitOptimizer

# Each knob: its optimizer, its own step argument, whether its HF twin takes
# the optimizer's keyword-only extras.
KNOBS = [
    pytest.param(GlobalPowerLimitOptimizer, {"pl_step": 100}, False, id="power_limit"),
    pytest.param(GlobalFrequencyOptimizer, {"clock_step": 300}, True, id="frequency"),
]


def steps_until_phase_changes(on_step_begin, optimizer, most=10):
    """Calls on_step_begin until optimizer.phase changes; how many calls."""
    phase = optimizer.phase
    for n in range(1, most + 1):
        on_step_begin()
        if optimizer.phase != phase:
            return n
    pytest.fail(f"still {phase} after {most} step begins")


@pytest.mark.parametrize("cls,step,_", KNOBS)
def test_hooks_walk_the_phases_and_a_closed_optimizer_names_itself(cls, step, _):
    optimizer = cls(ZeusMonitor(gpu_indices=[0]), Energy(), wait_steps=1, warmup_steps=1,
                    profile_steps=1, min_measure_time_s=0.0, **step)
    assert optimizer.phase == "waiting"
    optimizer.on_epoch_begin()
    optimizer.on_step_end()
    steps_until_phase_changes(optimizer.on_step_begin, optimizer)
    assert optimizer.phase == "warmup"
    steps_until_phase_changes(optimizer.on_step_begin, optimizer)
    assert optimizer.phase == "profiling"
    assert optimizer.profile()["measurements"] == []
    optimizer.restore()
    optimizer.close()
    optimizer.close()  # Idempotent.
    for call in (optimizer.on_step_begin, optimizer.on_epoch_end, optimizer.restore,
                 optimizer.profile, lambda: optimizer.phase):
        with pytest.raises(InvalidArgumentError, match=f"{cls.__name__}: the optimizer is closed"):
            call()


@pytest.mark.parametrize("cls,_,__", KNOBS)
def test_bad_arguments_name_the_optimizer(cls, _, __):
    with pytest.raises(InvalidArgumentError, match=f"{cls.__name__}: monitor must be"):
        cls(object())
    with pytest.raises(InvalidArgumentError,
                       match=f"{cls.__name__}: warmup_steps must be an int >= 0, got True"):
        cls(ZeusMonitor(gpu_indices=[0]), warmup_steps=True)


@pytest.mark.parametrize("cls,step,keyword_extras", KNOBS)
def test_hugging_face_twin_forwards_the_hooks_to_its_optimizer(monkeypatch, cls, step,
                                                               keyword_extras):
    # A stand-in transformers, so the twin is built on its TrainerCallback.
    stub = types.ModuleType("transformers")
    stub.__spec__ = importlib.machinery.ModuleSpec("transformers", None)

    class TrainerCallback:
        pass

    stub.TrainerCallback = TrainerCallback
    monkeypatch.setitem(sys.modules, "transformers", stub)
    twin = _jit.hf_callback_class("HFTwin", __name__, cls, keyword_extras=keyword_extras)
    assert issubclass(twin, TrainerCallback) and twin.__name__ == "HFTwin"

    hf = twin(ZeusMonitor(gpu_indices=[0]), Energy(), 1, 1, 1, **step)
    assert isinstance(hf.optimizer, cls)
    hf.on_epoch_begin(None, None, None)
    hf.on_step_end(None, None, None)
    steps_until_phase_changes(lambda: hf.on_step_begin(None, None, None), hf.optimizer)
    assert hf.optimizer.phase == "warmup"
    hf.on_epoch_end(None, None, None)
    hf.on_train_end(None, None, None)
    with pytest.raises(InvalidArgumentError, match="closed"):
        hf.optimizer.restore()

    if keyword_extras:
        twin(ZeusMonitor(gpu_indices=[0]), restore_on_signal=False).optimizer.close()
    else:
        with pytest.raises(TypeError):
            twin(ZeusMonitor(gpu_indices=[0]), restore_on_signal=False)
