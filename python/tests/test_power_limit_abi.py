"""The power-limit optimizer in a dry run, and the C ABI's standalone
optimizer (zeus_plo_create: its own monitor, a sync callback) that no module
of the package calls, over the fake GPUs (2 GPUs, limits 100-700 W)."""

import ctypes
import json
import logging
import os
import sys

import pytest

from conftest import run_python
from zeus import _lib
from zeus.exception import InvalidArgumentError
from zeus.optimizer.power_limit import _text

# Every limit is profiled: the fake's energy moves per counter read, so the
# draw it implies (and with it which limits the skip of non-binding limits
# would leave out) depends on how fast the machine runs the steps.
OPTIONS = dict(wait_steps=2, warmup_steps=2, measure_steps=3, min_measure_time_s=0.0,
               power_limit_step_w=100, restore_on_signal=False, skip_nonbinding_limits=False)
LIMITS_W = [700, 600, 500, 400, 300, 200, 100]

DRY_RUN_SCRIPT = """
import json, logging, sys
logging.basicConfig(level=logging.INFO)  # The core's dry-run notices are INFO records.
from zeus.device import get_gpus
from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost

monitor = ZeusMonitor()
options = dict(wait_steps=2, warmup_steps=2, profile_steps=3, pl_step=100,
               min_measure_time_s=0.0, profile_path=sys.argv[1])
with GlobalPowerLimitOptimizer(monitor, ZeusCost(eta_knob=0.5), **options) as plo:
    epochs = 0
    while plo.phase != "done" and epochs < 50:
        for _ in range(100):
            plo.on_step_begin()
        plo.on_epoch_end()
        epochs += 1
    first = dict(phase=plo.phase, optimum_mw=plo.state.optimal_power_limit,
                 limits_w=[m["power_limit_mw"] // 1000 for m in plo.profile()["measurements"]])
with GlobalPowerLimitOptimizer(monitor, ZeusCost(eta_knob=0.5), **options) as plo:
    again = dict(phase=plo.phase, optimum_mw=plo.state.optimal_power_limit)
gpus = get_gpus()
print(json.dumps(dict(first=first, again=again,
                      limits_mw=[gpus.get_power_management_limit(i) for i in range(len(gpus))])))
"""


def test_dry_run_profiles_every_limit_and_reloads_the_profile_without_setting_one(tmp_path):
    # What scripts/gpu/power_limit_train.py checks on a real GPU.
    log = tmp_path / "nvml.log"
    profile = tmp_path / "profile.json"
    env = dict(os.environ, ZEUS_DRY_RUN="1", FAKE_NVML_LOG=str(log))
    result = run_python(["-c", DRY_RUN_SCRIPT, str(profile)], env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["first"]["phase"] == "done"
    assert report["first"]["limits_w"] == LIMITS_W
    assert report["first"]["optimum_mw"] // 1000 in LIMITS_W
    assert report["again"] == dict(phase="done", optimum_mw=report["first"]["optimum_mw"])
    assert report["limits_mw"] == [700_000, 700_000]
    assert "ZEUS_DRY_RUN: would set the power limit" in result.stdout + result.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    assert not [c for c in calls if c.startswith("set_")], calls
    assert json.loads(profile.read_text())["measurements"]


@pytest.fixture
def plo_create():
    """zeus_plo_create(options, sync, all_reduce): returns the handle,
    raising the package's exception class of a failing status."""
    lib = _lib.lib()
    lib.zeus_plo_create.argtypes = [ctypes.c_char_p, _lib.SYNC_FN, _lib.ALL_REDUCE_FN,
                                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.zeus_plo_create.restype = ctypes.c_int32
    lib.zeus_plo_current_limit_mw.restype = ctypes.c_uint32
    lib.zeus_plo_current_limit_mw.argtypes = [ctypes.c_void_p]
    handles = []
    keep = []

    def create(options_text, sync=None, all_reduce=None):
        sync_fn = _lib.SYNC_FN(sync) if sync else _lib.SYNC_FN()
        all_reduce_fn = _lib.ALL_REDUCE_FN(all_reduce) if all_reduce else _lib.ALL_REDUCE_FN()
        keep.extend([sync_fn, all_reduce_fn])  # Alive as long as the handle.
        handle = ctypes.c_void_p()
        _lib.call(lib.zeus_plo_create, options_text.encode(), sync_fn, all_reduce_fn, None,
                  ctypes.byref(handle))
        handles.append(handle)
        return handle

    yield create
    for handle in handles:
        lib.zeus_plo_destroy(handle)


def step_until_done(handle, max_epochs=50):
    lib = _lib.lib()
    for _ in range(max_epochs):
        if lib.zeus_plo_phase(handle) == 3:  # done
            return
        for _ in range(100):
            _lib.call(lib.zeus_plo_on_step_begin, handle)
        _lib.call(lib.zeus_plo_on_epoch_end, handle)


def test_standalone_optimizer_profiles_every_limit_and_calls_back(plo_create):
    calls = {"sync": 0, "all_reduce": 0}

    def sync(_user):
        calls["sync"] += 1
        return 0

    def all_reduce(energy_j, time_s, num_gpus, _user):
        calls["all_reduce"] += 1
        return 0

    handle = plo_create(json.dumps(OPTIONS), sync, all_reduce)
    lib = _lib.lib()
    assert lib.zeus_plo_current_limit_mw(handle) == 700_000
    step_until_done(handle)
    profile = json.loads(_text(lib.zeus_plo_profile_json, handle))
    assert [m["power_limit_mw"] // 1000 for m in profile["measurements"]] == LIMITS_W
    assert profile["num_gpus"] == 2
    assert calls["sync"] >= 2 * len(LIMITS_W)
    assert calls["all_reduce"] == 2 * len(LIMITS_W)


def test_standalone_optimizer_errors_name_what_was_wrong(plo_create):
    with pytest.raises(InvalidArgumentError, match="gpu_indices: no GPU 5"):
        plo_create(json.dumps(dict(gpu_indices=[5])))
    with pytest.raises(InvalidArgumentError):
        plo_create(json.dumps(dict(measure_steps=0)))
    with pytest.raises(InvalidArgumentError, match="no_such_option"):
        plo_create(json.dumps(dict(no_such_option=1)))
    # The options JSON is read with the project's bounds (depth, NaN).
    with pytest.raises(InvalidArgumentError, match="nesting deeper than 64 levels"):
        plo_create('{"gpu_indices": ' + "[" * 200 + "]" * 200 + "}")
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        plo_create('{"eta": NaN}')


def test_a_failing_sync_callback_is_logged_and_profiling_goes_on(plo_create, caplog):
    handle = plo_create(json.dumps(OPTIONS), lambda _user: 1)
    with caplog.at_level(logging.WARNING, logger="zeus.core"):
        step_until_done(handle)
    assert _lib.lib().zeus_plo_phase(handle) == 3  # done
    assert any("the sync callback failed" in r.message for r in caplog.records
               if r.name == "zeus.core" and r.levelno == logging.WARNING)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
