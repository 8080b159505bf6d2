"""GlobalFrequencyOptimizer: just-in-time SM-clock profiling in training.

The twin of GlobalPowerLimitOptimizer for the GPU's graphics (SM) clock:
during the first epochs it locks every GPU's clock (min = max,
nvmlDeviceSetGpuLockedClocks) at each clock of a coarse grid of the clocks the
GPUs support at their memory clock, from the highest down `clock_step` MHz
apart to half the highest (or `min_clock`), measuring energy and time per
step through the given ZeusMonitor; then it locks the clock its optimum
selector picks for the rest of training (and saves the profile to
`profile_path`, from which later runs pin the optimum at once). Backed by the
C++ FrequencyOptimizer, which shares the power-limit optimizer's state
machine.

A power limit acts only on a GPU that would draw more than it; a clock acts
whatever the draw, so this optimizer is the one for jobs that draw less than
most limits.

Under torch.distributed every rank must create one (over its own GPUs);
measurements are all-reduced, so the ranks lock the same clock.

The clocks are unlocked when the optimizer is closed or garbage-collected, at
interpreter exit, on an exception that ends the program and on
SIGINT/SIGTERM/SIGHUP. Without root, set ZEUSD_SOCK_PATH to relay through the
Zeus daemon, whose lease unlocks the clocks when the process ends however it
ends (SIGKILL included). With ZEUS_DRY_RUN=1 the clocks are logged, never
locked.
"""

import atexit
import ctypes
import json
import numbers
import weakref
from pathlib import Path
from typing import List, Optional, Union

from zeus import _lib
from zeus.callback import Callback
from zeus.exception import InvalidArgumentError, UnavailableError
from zeus.monitor.energy import ZeusMonitor
from zeus.optimizer.power_limit import (Energy, MaxSlowdownConstraint, OptimumSelector, Time,
                                        ZeusCost, all_reduce_callback)

_PHASES = ("waiting", "warmup", "profiling", "done")

_P = ctypes.c_void_p
_MSG = [ctypes.c_char_p, ctypes.c_size_t]
_TEXT = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
_SIGNATURES = {
    "zeus_fo_create_on_monitor": (ctypes.c_int32, [_P, ctypes.c_char_p, _lib.ALL_REDUCE_FN, _P,
                                                   ctypes.POINTER(_P)] + _MSG),
    "zeus_fo_on_step_begin": (ctypes.c_int32, [_P] + _MSG),
    "zeus_fo_on_epoch_end": (ctypes.c_int32, [_P] + _MSG),
    "zeus_fo_restore": (ctypes.c_int32, [_P] + _MSG),
    "zeus_fo_profile_json": (ctypes.c_int32, [_P] + _TEXT),
    "zeus_fo_state_json": (ctypes.c_int32, [_P] + _TEXT),
    "zeus_fo_destroy": (None, [_P]),
}


def _library():
    lib = _lib.lib()
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise UnavailableError(f"zeus: libzeus_c.so lacks {name} (an older build?)") from None
        if fn.argtypes is None:
            fn.restype, fn.argtypes = restype, argtypes
    return lib


def _text(fn, handle) -> str:
    length = ctypes.c_size_t(0)
    fn(handle, None, 0, ctypes.byref(length))
    buffer = ctypes.create_string_buffer(length.value + 1)
    code = fn(handle, buffer, length.value + 1, ctypes.byref(length))
    _lib.raise_for(code, None)
    return buffer.value.decode()


def _close_at_exit(ref):
    optimizer = ref()
    if optimizer is not None:
        optimizer.close()


class GlobalFrequencyOptimizer(Callback):
    """Profiles locked SM clocks during training and pins the best one.

    Call on_step_begin at the start of every training step and on_epoch_end
    after every epoch (on_epoch_begin and on_step_end do nothing).

    Args:
        monitor: The ZeusMonitor whose GPUs are optimized (and measured).
        optimum_selector: Energy(), Time(), ZeusCost(eta_knob) (default, eta
            0.5; MaxPower is the GPUs' power limit) or
            MaxSlowdownConstraint(factor), from zeus.optimizer.power_limit.
            A subclass with its own select() is not supported here.
        wait_steps: Steps at the highest clock before profiling starts.
        warmup_steps: Steps at a new clock before its measurement.
        profile_steps: Fewest steps measured per clock.
        clock_step: Distance between profiled clocks, in MHz.
        min_clock: Lowest clock profiled, in MHz (None: half the highest).
        profile_path: Where the profile is saved, or loaded when it exists.
        min_measure_time_s: A measurement is extended by whole steps until it
            lasts this long. Default 3 s.
        restore_on_signal: Unlock the clocks on SIGINT/SIGTERM/SIGHUP.

    Attributes: monitor, optimum_selector, clocks (MHz, highest first),
    current_clock (MHz), optimal_clock (MHz once done), phase, profile(),
    restore(), close().
    """

    def __init__(self, monitor: ZeusMonitor, optimum_selector: Optional[OptimumSelector] = None,
                 wait_steps: int = 1, warmup_steps: int = 10, profile_steps: int = 40,
                 clock_step: int = 90, min_clock: Optional[int] = None,
                 profile_path: Union[str, Path, None] = None, *,
                 min_measure_time_s: Optional[float] = None, restore_on_signal: bool = True):
        if not isinstance(monitor, ZeusMonitor):
            raise InvalidArgumentError(
                "GlobalFrequencyOptimizer: monitor must be a zeus.monitor.ZeusMonitor")
        for name, value, least in (("wait_steps", wait_steps, 0), ("warmup_steps", warmup_steps, 0),
                                   ("profile_steps", profile_steps, 1),
                                   ("clock_step", clock_step, 1),
                                   ("min_clock", 0 if min_clock is None else min_clock, 0)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
                raise InvalidArgumentError(
                    f"GlobalFrequencyOptimizer: {name} must be an int >= {least}, got {value!r}")
        self.monitor = monitor
        self.optimum_selector = (optimum_selector if optimum_selector is not None else
                                 ZeusCost(eta_knob=0.5, world_size=len(monitor.gpu_indices) or 1))
        core = (self.optimum_selector._core_options()
                if isinstance(self.optimum_selector, OptimumSelector) else None)
        if core is None:
            raise InvalidArgumentError(
                "GlobalFrequencyOptimizer: optimum_selector must be one of Energy(), Time(), "
                "ZeusCost(...) or MaxSlowdownConstraint(...) (custom select() methods are "
                "supported by GlobalPowerLimitOptimizer only)")
        self.wait_steps = int(wait_steps)
        self.warmup_steps = int(warmup_steps)
        self.profile_steps = int(profile_steps)
        self.clock_step = int(clock_step)
        self.profile_path = Path(profile_path) if isinstance(profile_path, str) else profile_path
        self._lib = _library()
        self._handle = None
        self._callback_error = None
        self._message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
        options = dict(wait_steps=self.wait_steps, warmup_steps=self.warmup_steps,
                       measure_steps=self.profile_steps, clock_step_mhz=self.clock_step,
                       min_clock_mhz=min_clock,
                       profile_path=None if profile_path is None else str(profile_path),
                       min_measure_time_s=min_measure_time_s,
                       restore_on_signal=restore_on_signal, **core)
        self._all_reduce_fn = all_reduce_callback(self)
        handle = ctypes.c_void_p()
        code = self._lib.zeus_fo_create_on_monitor(monitor._handle_for_optimizer(),
                                                   _lib.options_json(options),
                                                   self._all_reduce_fn, None,
                                                   ctypes.byref(handle), self._message,
                                                   _lib.MESSAGE_SIZE)
        self._check(code)
        self._handle = handle
        atexit.register(_close_at_exit, weakref.ref(self))

    def _check(self, code):
        if self._callback_error is not None:
            e, self._callback_error = self._callback_error, None
            raise e
        _lib.raise_for(code, self._message)

    def _require_open(self):
        if self._handle is None:
            raise InvalidArgumentError("GlobalFrequencyOptimizer: the optimizer is closed")

    def _state_json(self) -> dict:
        self._require_open()
        return json.loads(_text(self._lib.zeus_fo_state_json, self._handle))

    def on_epoch_begin(self) -> None:
        """Nothing to do: epochs are delimited by on_epoch_end."""

    def on_step_begin(self) -> None:
        self._require_open()
        self._check(self._lib.zeus_fo_on_step_begin(self._handle, self._message,
                                                    _lib.MESSAGE_SIZE))

    def on_step_end(self) -> None:
        """Nothing to do: steps are delimited by on_step_begin."""

    def on_epoch_end(self) -> None:
        self._require_open()
        self._check(self._lib.zeus_fo_on_epoch_end(self._handle, self._message,
                                                   _lib.MESSAGE_SIZE))

    @property
    def phase(self) -> str:
        """"waiting", "warmup", "profiling" or "done"."""
        return self._state_json()["phase"]

    @property
    def clocks(self) -> List[int]:
        """The clocks of the grid, in MHz, highest first."""
        return list(self._state_json()["clocks_mhz"])

    @property
    def current_clock(self) -> int:
        """The clock every GPU was last locked to by the optimizer, in MHz."""
        return self._state_json()["current_clock_mhz"]

    @property
    def optimal_clock(self) -> Optional[int]:
        """The pinned clock in MHz once profiling is done, else None."""
        return self._state_json()["optimum_mhz"]

    def profile(self) -> dict:
        """The profile measured so far (the profile file's JSON as a dict:
        sm_clock_mhz, energy_j, time_s and steps per clock)."""
        self._require_open()
        return json.loads(_text(self._lib.zeus_fo_profile_json, self._handle))

    def restore(self) -> None:
        """Unlocks every GPU's clocks now; later steps change nothing."""
        self._require_open()
        self._check(self._lib.zeus_fo_restore(self._handle, self._message, _lib.MESSAGE_SIZE))

    def close(self) -> None:
        """Unlocks the clocks and frees the optimizer."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._lib.zeus_fo_destroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _make_hf_class():
    try:
        import importlib.util
        available = importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):
        available = False
    base = object
    if available:
        try:
            from transformers import TrainerCallback as base
        except ImportError:
            available = False

    class HFGlobalFrequencyOptimizer(base):
        """GlobalFrequencyOptimizer as a Hugging Face TrainerCallback; same
        arguments. Importable without transformers; creating one then raises
        ImportError."""

        def __init__(self, monitor: ZeusMonitor,
                     optimum_selector: Optional[OptimumSelector] = None, wait_steps: int = 1,
                     warmup_steps: int = 10, profile_steps: int = 40, clock_step: int = 90,
                     min_clock: Optional[int] = None,
                     profile_path: Union[str, Path, None] = None, **extras):
            if not available:
                raise ImportError("zeus: HFGlobalFrequencyOptimizer needs the transformers "
                                  "package (pip install transformers)")
            self.optimizer = GlobalFrequencyOptimizer(
                monitor, optimum_selector, wait_steps, warmup_steps, profile_steps, clock_step,
                min_clock, profile_path, **extras)

        def on_epoch_begin(self, args, state, control, **kwargs):
            self.optimizer.on_epoch_begin()

        def on_epoch_end(self, args, state, control, **kwargs):
            self.optimizer.on_epoch_end()

        def on_step_begin(self, args, state, control, **kwargs):
            self.optimizer.on_step_begin()

        def on_step_end(self, args, state, control, **kwargs):
            self.optimizer.on_step_end()

        def on_train_end(self, args, state, control, **kwargs):
            self.optimizer.close()

    HFGlobalFrequencyOptimizer.__module__ = __name__
    return HFGlobalFrequencyOptimizer


_hf_class = None


def __getattr__(name):
    # Built on first use, so that importing this module never imports
    # transformers unless the callback is wanted.
    global _hf_class
    if name == "HFGlobalFrequencyOptimizer":
        if _hf_class is None:
            _hf_class = _make_hf_class()
        return _hf_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GlobalFrequencyOptimizer", "HFGlobalFrequencyOptimizer", "Energy", "Time", "ZeusCost",
    "MaxSlowdownConstraint"
]
