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

import ctypes
from pathlib import Path
from typing import List, Optional, Union

from zeus import _lib
from zeus.exception import InvalidArgumentError
from zeus.monitor.energy import ZeusMonitor
from zeus.optimizer import _jit
from zeus.optimizer.power_limit import (Energy, MaxSlowdownConstraint, OptimumSelector, Time,
                                        ZeusCost)

_KNOB = _jit.Knob(
    owner="GlobalFrequencyOptimizer", prefix="zeus_fo",
    signatures=dict(
        _jit.handle_signatures("zeus_fo"),
        zeus_fo_create_on_monitor=(ctypes.c_int32, [
            ctypes.c_void_p, ctypes.c_char_p, _lib.ALL_REDUCE_FN, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t
        ])))


class GlobalFrequencyOptimizer(_jit.JitOptimizer):
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

    _KNOB = _KNOB

    def __init__(self, monitor: ZeusMonitor, optimum_selector: Optional[OptimumSelector] = None,
                 wait_steps: int = 1, warmup_steps: int = 10, profile_steps: int = 40,
                 clock_step: int = 90, min_clock: Optional[int] = None,
                 profile_path: Union[str, Path, None] = None, *,
                 min_measure_time_s: Optional[float] = None, restore_on_signal: bool = True):
        self._setup(monitor, optimum_selector, wait_steps, warmup_steps, profile_steps,
                    profile_path, (("clock_step", clock_step, 1),
                                   ("min_clock", 0 if min_clock is None else min_clock, 0)))
        core = (self.optimum_selector._core_options()
                if isinstance(self.optimum_selector, OptimumSelector) else None)
        if core is None:
            raise InvalidArgumentError(
                "GlobalFrequencyOptimizer: optimum_selector must be one of Energy(), Time(), "
                "ZeusCost(...) or MaxSlowdownConstraint(...) (custom select() methods are "
                "supported by GlobalPowerLimitOptimizer only)")
        self.clock_step = int(clock_step)
        options = dict(wait_steps=self.wait_steps, warmup_steps=self.warmup_steps,
                       measure_steps=self.profile_steps, clock_step_mhz=self.clock_step,
                       min_clock_mhz=min_clock,
                       profile_path=None if profile_path is None else str(profile_path),
                       min_measure_time_s=min_measure_time_s,
                       restore_on_signal=restore_on_signal, **core)
        self._create(self._lib.zeus_fo_create_on_monitor, options)

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


__getattr__ = _jit.lazy_hf_getattr(
    __name__, "HFGlobalFrequencyOptimizer",
    lambda: _jit.hf_callback_class("HFGlobalFrequencyOptimizer", __name__,
                                   GlobalFrequencyOptimizer, keyword_extras=True))

__all__ = [
    "GlobalFrequencyOptimizer", "HFGlobalFrequencyOptimizer", "Energy", "Time", "ZeusCost",
    "MaxSlowdownConstraint"
]
