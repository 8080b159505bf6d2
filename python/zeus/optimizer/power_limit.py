"""GlobalPowerLimitOptimizer: just-in-time power-limit profiling in training.

During the first epochs the optimizer profiles every power limit from the
maximum down, `pl_step` W apart, measuring energy and time per step through
the given ZeusMonitor; then it pins the limit its optimum selector picks for
the rest of training (and saves the profile to `profile_path`, from which
later runs pin the optimum at once). Backed by the C++ PowerLimitOptimizer.

Under torch.distributed every rank must create one (over its own GPUs);
the ranks then reach the same decision with no user code: measurements are
all-reduced through torch.distributed at every profiling boundary.

Each GPU gets its original limit back when the optimizer is closed or
garbage-collected, at interpreter exit, on an exception that ends the
program, and on SIGINT/SIGTERM/SIGHUP (the C++ signal handlers restore,
then hand the signal to Python's handler). With ZEUS_DRY_RUN=1 limits are
logged, never set.
"""

import atexit
import ctypes
import json
import weakref
from typing import Optional

from zeus import _lib
from zeus.callback import Callback
from zeus.exception import InvalidArgumentError
from zeus.monitor.energy import ZeusMonitor
from zeus.utils import framework

_PHASES = ("waiting", "warmup", "profiling", "done")


class OptimumSelector:
    """How the optimum is picked from the profile (per training step)."""

    def _options(self):
        raise InvalidArgumentError(
            f"GlobalPowerLimitOptimizer: custom optimum selectors ({type(self).__name__}) are not "
            f"supported; use Energy(), Time(), ZeusCost(...) or MaxSlowdownConstraint(...)")


class Energy(OptimumSelector):
    """The limit with the least energy per step."""

    def _options(self):
        return {"selector": "energy"}


class Time(OptimumSelector):
    """The limit with the least time per step."""

    def _options(self):
        return {"selector": "time"}


class ZeusCost(OptimumSelector):
    """The limit with the least Zeus cost eta * E + (1 - eta) * MaxPower * T.

    Args:
        eta_knob: Weight of energy, in [0, 1].
        world_size: Accepted for compatibility: MaxPower already counts every
            GPU of every rank, through the all-reduce.
    """

    def __init__(self, eta_knob: float, world_size: int = 1):
        if not 0.0 <= eta_knob <= 1.0:
            raise InvalidArgumentError(f"ZeusCost: eta_knob must be in [0, 1], got {eta_knob}")
        if world_size < 1:
            raise InvalidArgumentError(f"ZeusCost: world_size must be >= 1, got {world_size}")
        self.eta_knob = eta_knob
        self.world_size = world_size

    def _options(self):
        return {"selector": "cost", "eta": self.eta_knob}


class MaxSlowdownConstraint(OptimumSelector):
    """The lowest limit whose time per step is at most `factor` times that
    at the maximum limit."""

    def __init__(self, factor: float):
        if not factor >= 1.0:
            raise InvalidArgumentError(
                f"MaxSlowdownConstraint: factor must be >= 1, got {factor}")
        self.factor = factor

    def _options(self):
        return {"selector": "slowdown", "max_slowdown": self.factor}


def _close_at_exit(ref):
    optimizer = ref()
    if optimizer is not None:
        optimizer.close()


class GlobalPowerLimitOptimizer(Callback):
    """Profiles power limits during training and pins the best one.

    Call on_step_begin at the start of every training step and on_epoch_end
    after every epoch (on_epoch_begin and on_step_end are accepted and do
    nothing).

    Args:
        monitor: The ZeusMonitor whose GPUs are optimized (and measured).
        optimum_selector: Default ZeusCost(eta_knob=0.5).
        wait_steps: Steps at the maximum limit before profiling starts.
        warmup_steps: Steps at a new limit before its measurement.
        profile_steps: Fewest steps measured per limit.
        pl_step: Distance between profiled limits, in W.
        profile_path: Where the profile is saved, or loaded when it exists.
        min_measure_time_s: (extra) A measurement is extended by whole steps
            until it lasts this long (the energy counter moves only every
            ~100 ms). Default 3 s.
        restore_on_signal: (extra) Restore limits on SIGINT/SIGTERM/SIGHUP.

    Errors (e.g. an unwritable profile_path, missing CAP_SYS_ADMIN) raise
    zeus.exception.ZeusError subclasses; the optimizer stays usable.
    """

    def __init__(self, monitor: ZeusMonitor, optimum_selector: Optional[OptimumSelector] = None,
                 wait_steps: int = 1, warmup_steps: int = 10, profile_steps: int = 40,
                 pl_step: int = 25, profile_path: Optional[str] = None, *,
                 min_measure_time_s: Optional[float] = None, restore_on_signal: bool = True):
        if not isinstance(monitor, ZeusMonitor):
            raise InvalidArgumentError(
                "GlobalPowerLimitOptimizer: monitor must be a zeus.monitor.ZeusMonitor")
        self.monitor = monitor
        self.optimum_selector = (optimum_selector if optimum_selector is not None else
                                 ZeusCost(eta_knob=0.5, world_size=len(monitor.gpu_indices) or 1))
        if not isinstance(self.optimum_selector, OptimumSelector):
            raise InvalidArgumentError(
                "GlobalPowerLimitOptimizer: optimum_selector must be Energy(), Time(), "
                "ZeusCost(...) or MaxSlowdownConstraint(...)")
        self._lib = _lib.lib()
        self._handle = None
        self._callback_error = None
        self._message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
        options = dict(wait_steps=wait_steps, warmup_steps=warmup_steps,
                       measure_steps=profile_steps, power_limit_step_w=pl_step,
                       profile_path=None if profile_path is None else str(profile_path),
                       min_measure_time_s=min_measure_time_s,
                       restore_on_signal=restore_on_signal)
        options.update(self.optimum_selector._options())

        def all_reduce_trampoline(energy_j, time_s, num_gpus, _user):
            try:
                energy, gpus = framework.all_reduce([energy_j[0], float(num_gpus[0])], "sum")
                (longest,) = framework.all_reduce([time_s[0]], "max")
                energy_j[0], time_s[0], num_gpus[0] = energy, longest, int(round(gpus))
                return 0
            except BaseException as e:  # Never let an exception cross into C.
                self._callback_error = e
                return 1

        self._all_reduce_fn = _lib.ALL_REDUCE_FN(all_reduce_trampoline)
        handle = ctypes.c_void_p()
        _lib.call(self._lib.zeus_plo_create_on_monitor, monitor._handle_for_optimizer(),
                  _lib.options_json(options), self._all_reduce_fn, None, ctypes.byref(handle))
        self._handle = handle
        atexit.register(_close_at_exit, weakref.ref(self))

    def _check(self, code):
        if self._callback_error is not None:
            e, self._callback_error = self._callback_error, None
            raise e
        _lib.raise_for(code, self._message)

    def _require_open(self):
        if self._handle is None:
            raise InvalidArgumentError("GlobalPowerLimitOptimizer: the optimizer is closed")

    def on_epoch_begin(self) -> None:
        """Nothing to do: epochs are delimited by on_epoch_end."""

    def on_step_begin(self) -> None:
        self._require_open()
        self._check(self._lib.zeus_plo_on_step_begin(self._handle, self._message,
                                                     _lib.MESSAGE_SIZE))

    def on_step_end(self) -> None:
        """Nothing to do: steps are delimited by on_step_begin."""

    def on_epoch_end(self) -> None:
        self._require_open()
        self._check(self._lib.zeus_plo_on_epoch_end(self._handle, self._message,
                                                    _lib.MESSAGE_SIZE))

    @property
    def phase(self) -> str:
        """"waiting", "warmup", "profiling" or "done"."""
        self._require_open()
        return _PHASES[self._lib.zeus_plo_phase(self._handle)]

    @property
    def optimal_power_limit(self) -> Optional[int]:
        """The pinned limit in W once profiling is done, else None."""
        self._require_open()
        mw = self._lib.zeus_plo_optimum_mw(self._handle)
        return mw // 1000 if mw else None

    @property
    def current_power_limit(self) -> int:
        """The limit last set on every GPU by the optimizer, in W."""
        self._require_open()
        return self._lib.zeus_plo_current_limit_mw(self._handle) // 1000

    def profile(self) -> dict:
        """The profile measured so far (the profile file's JSON as a dict)."""
        self._require_open()
        length = ctypes.c_size_t(0)
        self._lib.zeus_plo_profile_json(self._handle, None, 0, ctypes.byref(length))
        buffer = ctypes.create_string_buffer(length.value + 1)
        code = self._lib.zeus_plo_profile_json(self._handle, buffer, length.value + 1,
                                               ctypes.byref(length))
        _lib.raise_for(code, None)
        return json.loads(buffer.value.decode())

    def restore(self) -> None:
        """Gives every GPU its original limit back now; later steps change
        nothing."""
        self._require_open()
        self._check(self._lib.zeus_plo_restore(self._handle, self._message, _lib.MESSAGE_SIZE))

    def close(self) -> None:
        """Restores the original limits and frees the optimizer."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._lib.zeus_plo_destroy(handle)

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


def _make_hf_callback():
    from transformers import TrainerCallback

    class HFGlobalPowerLimitOptimizer(TrainerCallback):
        """GlobalPowerLimitOptimizer as a Hugging Face TrainerCallback; same
        arguments."""

        def __init__(self, monitor, optimum_selector=None, wait_steps=1, warmup_steps=10,
                     profile_steps=40, pl_step=25, profile_path=None, **extras):
            self.optimizer = GlobalPowerLimitOptimizer(monitor, optimum_selector, wait_steps,
                                                       warmup_steps, profile_steps, pl_step,
                                                       profile_path, **extras)

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

    return HFGlobalPowerLimitOptimizer


_hf_class = None


def __getattr__(name):
    # HFGlobalPowerLimitOptimizer exists only when transformers is installed.
    global _hf_class
    if name == "HFGlobalPowerLimitOptimizer":
        if _hf_class is None:
            try:
                _hf_class = _make_hf_callback()
            except ImportError as e:
                raise ImportError(
                    "zeus: HFGlobalPowerLimitOptimizer needs the transformers package") from e
        return _hf_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
