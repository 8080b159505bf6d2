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

import abc
import ctypes
import json
import logging
import numbers
import os
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Union

from zeus import _lib
from zeus.exception import InvalidArgumentError, PermissionDeniedError, ZeusError
from zeus.monitor.energy import ZeusMonitor
from zeus.optimizer import _jit
from zeus.optimizer._jit import all_reduce_callback  # noqa: F401 (re-exported)
from zeus.optimizer._jit import text as _text  # noqa: F401 (re-exported)
from zeus.optimizer._model import Field, Model
from zeus.utils import framework

logger = logging.getLogger(__name__)

# C ABI functions this module adds to those of zeus._lib (python/zeus_c_api.h).
SELECT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32),
                             ctypes.c_void_p)
_KNOB = _jit.Knob(
    owner="GlobalPowerLimitOptimizer", prefix="zeus_plo",
    signatures=dict(
        _jit.handle_signatures("zeus_plo"), zeus_plo_create_with_selector=(
            ctypes.c_int32, [ctypes.c_void_p, ctypes.c_char_p, _lib.ALL_REDUCE_FN, SELECT_FN,
                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                             ctypes.c_size_t])))


class PowerLimitPermissionError(PermissionDeniedError, RuntimeError):
    """(extra) The optimizer may not change the GPUs' power limits (no
    CAP_SYS_ADMIN): a PermissionDeniedError, and the RuntimeError the
    original raises."""


# ---- The state machine's states and measurements (the original's models) ----


class Ready(Model):
    """Waiting at the maximum limit: `steps` more step begins until the
    warm-up of `next_power_limit` (mW) starts."""

    next_power_limit: int = Field(gt=0)
    steps: int = Field(gt=0)


class Warmup(Model):
    """Warming up at `current_power_limit` (mW) for `steps` more step
    begins."""

    current_power_limit: int = Field(gt=0)
    steps: int = Field(gt=0)


class Profiling(Model):
    """Measuring `current_power_limit` (mW); `steps` more step begins until
    the stretch ends or (when it must last min_measure_time_s) is looked at
    again."""

    current_power_limit: int = Field(gt=0)
    steps: int = Field(gt=0)


class Done(Model):
    """Profiling is over; `optimal_power_limit` (mW) is pinned."""

    optimal_power_limit: int = Field(gt=0)


class PowerLimitMeasurement(Model):
    """One profiled power limit: `power_limit` in W; `energy` (J, all GPUs
    of all ranks) and `time` (s, the slowest rank) of one stretch. Stretches
    the optimizer extended to last min_measure_time_s are scaled to the step
    count of the first (highest-limit) stretch, so limits compare per step.
    Constructing one validates as the original (every field > 0); the
    optimizer's own list holds its profile as measured, so a stretch whose
    energy counter did not move reads 0 there instead of failing."""

    power_limit: int = Field(gt=0)
    energy: float = Field(gt=0.0)
    time: float = Field(gt=0.0)


def _measurements_of(profile: dict) -> List[PowerLimitMeasurement]:
    rows = sorted(profile.get("measurements", []), key=lambda m: -m["power_limit_mw"])
    if not rows:
        return []
    reference_steps = rows[0].get("steps", 1) or 1
    out = []
    for m in rows:
        scale = reference_steps / (m.get("steps", 1) or 1)
        # Trusted values of the core's profile (energy may be 0, see the class).
        out.append(PowerLimitMeasurement.model_construct(
            power_limit=m["power_limit_mw"] // 1000, energy=m["energy_j"] * scale,
            time=m["time_s"] * scale))
    return out


def _original_profile_as_ours(path, num_gpus) -> Optional[str]:
    """When `path` holds a profile saved by the original Zeus
    ({"measurements": [{"power_limit": W, "energy": J, "time": s}, ...]}),
    the same profile in this package's format in a temporary file (whose
    path is returned; the caller deletes it); else None (the core reads
    `path` itself: our JSON format, the original's CSV log, or an error)."""
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            text = f.read(64 << 20)
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    rows = data.get("measurements") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows or "format" in data or \
            not all(isinstance(r, dict) and "power_limit" in r for r in rows):
        return None
    try:
        measurements = [PowerLimitMeasurement.parse_obj(r) for r in rows]
    except InvalidArgumentError as e:
        raise InvalidArgumentError(
            f"GlobalPowerLimitOptimizer: saved profile {path} (the original Zeus's format): {e} "
            f"(delete it to profile again)") from None
    ours = {"format": "zeus-power-limit-profile", "version": 1, "num_gpus": num_gpus,
            "min_stretch_time_s": 0.0,
            "measurements": [{"power_limit_mw": m.power_limit * 1000, "energy_j": m.energy,
                              "time_s": m.time, "steps": 1} for m in measurements]}
    fd, converted = tempfile.mkstemp(prefix="zeus-profile-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(ours, f)
    return converted


def _skip_nonbinding(value: Optional[bool]) -> bool:
    if value is not None:
        return bool(value)
    return os.environ.get("ZEUS_SKIP_NONBINDING_LIMITS", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _world_gpus(monitor) -> int:
    """GPUs of all ranks (each rank's monitor over as many GPUs)."""
    world = 1
    if framework.is_distributed():
        world = sys.modules["torch.distributed"].get_world_size()
    return max(1, len(monitor.gpu_indices)) * world


# ---- Optimum selectors ----


class OptimumSelector(abc.ABC):
    """How the optimum is picked from the profile. Subclass it and define
    select(measurements) -> power limit in W (one of the measured ones, or
    any limit the GPUs accept): the optimizer calls it with the measurements
    (list of PowerLimitMeasurement, from the highest limit down) when
    profiling ends, and when a saved profile is loaded. Under
    torch.distributed every rank calls it at the same step with the same
    all-reduced measurements; the ranks then agree on the highest limit any
    of them chose (a warning is logged if they differ)."""

    @abc.abstractmethod
    def select(self, measurements: List[PowerLimitMeasurement]) -> int:
        """The optimal power limit, in W."""

    def _core_options(self) -> Optional[dict]:
        """The C core's options for a built-in selector whose select() is
        not overridden; None to call select() from the core."""
        return None

    def _builtin(self, cls, options):
        return options if type(self).select is cls.select else None


def _check_measurements(measurements):
    if not measurements:
        raise InvalidArgumentError("optimum selector: no measurements to select from")


class Energy(OptimumSelector):
    """The limit with the least energy."""

    def select(self, measurements: List[PowerLimitMeasurement]) -> int:
        _check_measurements(measurements)
        return min(measurements, key=lambda m: m.energy).power_limit

    def _core_options(self):
        return self._builtin(Energy, {"selector": "energy"})


class Time(OptimumSelector):
    """The limit with the least time."""

    def select(self, measurements: List[PowerLimitMeasurement]) -> int:
        _check_measurements(measurements)
        return min(measurements, key=lambda m: m.time).power_limit

    def _core_options(self):
        return self._builtin(Time, {"selector": "time"})


class ZeusCost(OptimumSelector):
    """The limit with the least Zeus cost eta * E + (1 - eta) * MaxPower * T.

    Args:
        eta_knob: Weight of energy, in [0, 1].
        world_size: GPUs of the job, for MaxPower (the highest limit x
            world_size) in select(). The optimizer's own selection counts
            every GPU of every rank through the all-reduce instead.
    """

    def __init__(self, eta_knob: float, world_size: int = 1):
        if not 0.0 <= eta_knob <= 1.0:
            raise InvalidArgumentError(f"ZeusCost: eta_knob must be in [0, 1], got {eta_knob}")
        if world_size < 1:
            raise InvalidArgumentError(f"ZeusCost: world_size must be >= 1, got {world_size}")
        self.eta_knob = eta_knob
        self.world_size = world_size

    def select(self, measurements: List[PowerLimitMeasurement]) -> int:
        _check_measurements(measurements)
        max_power_w = max(m.power_limit for m in measurements) * self.world_size

        def cost(m):
            return self.eta_knob * m.energy + (1 - self.eta_knob) * max_power_w * m.time

        return min(measurements, key=cost).power_limit

    def _core_options(self):
        return self._builtin(ZeusCost, {"selector": "cost", "eta": self.eta_knob})


class MaxSlowdownConstraint(OptimumSelector):
    """The lowest limit whose time is at most `factor` times that at the
    maximum limit."""

    def __init__(self, factor: float):
        if not factor >= 1.0:
            raise InvalidArgumentError(
                f"MaxSlowdownConstraint: factor must be >= 1, got {factor}")
        self.factor = factor

    def select(self, measurements: List[PowerLimitMeasurement]) -> int:
        _check_measurements(measurements)
        at_max = max(measurements, key=lambda m: m.power_limit)
        return min(m.power_limit for m in measurements if m.time <= self.factor * at_max.time)

    def _core_options(self):
        return self._builtin(MaxSlowdownConstraint,
                             {"selector": "slowdown", "max_slowdown": self.factor})


class GlobalPowerLimitOptimizer(_jit.JitOptimizer):
    """Profiles power limits during training and pins the best one.

    Call on_step_begin at the start of every training step and on_epoch_end
    after every epoch (on_epoch_begin and on_step_end are accepted and do
    nothing).

    Args:
        monitor: The ZeusMonitor whose GPUs are optimized (and measured).
        optimum_selector: Default ZeusCost(eta_knob=0.5). The built-in
            selectors run in the C core; any other OptimumSelector (a
            subclass's select()) is called back from it with the
            measurements.
        wait_steps: Steps at the maximum limit before profiling starts.
        warmup_steps: Steps at a new limit before its measurement.
        profile_steps: Fewest steps measured per limit.
        pl_step: Distance between profiled limits, in W.
        profile_path: Where the profile is saved, or loaded when it exists
            (in this package's JSON format, or the original Zeus's JSON
            profile or CSV log).
        min_measure_time_s: (extra) A measurement is extended by whole steps
            until it lasts this long (the energy counter moves only every
            ~100 ms). Default 3 s.
        restore_on_signal: (extra) Restore limits on SIGINT/SIGTERM/SIGHUP.
        skip_nonbinding_limits: (extra) Once the maximum limit is measured,
            record every limit at or above 1.2 x the mean draw per GPU
            measured there as equal to the maximum instead of profiling it
            (such a limit cannot bind). Default (None): on, unless the
            environment sets ZEUS_SKIP_NONBINDING_LIMITS=0.

    Attributes (the original's; limits in mW as there, except
    PowerLimitMeasurement.power_limit in W): monitor, optimum_selector,
    warmup_steps, profile_steps, pl_step (mW), profile_path (Path or None),
    power_limits (mW, from the maximum down), current_power_limit (mW),
    measurements (list of PowerLimitMeasurement), state (Ready, Warmup,
    Profiling or Done). Extras: wait_steps, phase, optimal_power_limit (W),
    profile(), restore(), close().

    Errors (e.g. an unwritable profile_path, missing CAP_SYS_ADMIN) raise
    zeus.exception.ZeusError subclasses; an exception of a custom selector
    propagates from the call that ended profiling (the GPUs then keep the
    maximum limit and the profile is kept). The optimizer stays usable.
    """

    _KNOB = _KNOB

    def __init__(self, monitor: ZeusMonitor, optimum_selector: Optional[OptimumSelector] = None,
                 wait_steps: int = 1, warmup_steps: int = 10, profile_steps: int = 40,
                 pl_step: int = 25, profile_path: Union[str, Path, None] = None, *,
                 min_measure_time_s: Optional[float] = None, restore_on_signal: bool = True,
                 skip_nonbinding_limits: Optional[bool] = None):
        self._setup(monitor, optimum_selector, wait_steps, warmup_steps, profile_steps,
                    profile_path)
        if isinstance(pl_step, bool) or not isinstance(pl_step, numbers.Real) or not pl_step > 0:
            raise InvalidArgumentError(
                f"GlobalPowerLimitOptimizer: pl_step must be a number of W > 0, got {pl_step!r}")
        if not isinstance(self.optimum_selector, OptimumSelector):
            raise InvalidArgumentError(
                "GlobalPowerLimitOptimizer: optimum_selector must be an OptimumSelector (Energy(), "
                "Time(), ZeusCost(...), MaxSlowdownConstraint(...) or a subclass defining "
                "select(measurements))")
        self.pl_step = int(round(pl_step * 1000))  # mW, as the original keeps it.
        # A profile the original Zeus saved is read through a converted copy.
        converted = _original_profile_as_ours(
            None if profile_path is None else str(profile_path), _world_gpus(monitor))
        if min_measure_time_s is None and hasattr(monitor, "_take_replay_error"):
            # A replayed window's time is the log's, not the clock's.
            min_measure_time_s = 0.0
        options = dict(wait_steps=self.wait_steps, warmup_steps=self.warmup_steps,
                       measure_steps=self.profile_steps, power_limit_step_w=pl_step,
                       profile_path=converted or (None if profile_path is None
                                                  else str(profile_path)),
                       min_measure_time_s=min_measure_time_s,
                       restore_on_signal=restore_on_signal,
                       skip_nonbinding_limits=_skip_nonbinding(skip_nonbinding_limits))
        core_options = self.optimum_selector._core_options()
        try:
            if core_options is not None:
                self._select_fn = None
                self._create(self._lib.zeus_plo_create_on_monitor, dict(options, **core_options))
            else:
                self._select_fn = SELECT_FN(self._select_trampoline)
                self._create(self._lib.zeus_plo_create_with_selector, options, self._select_fn)
        except PermissionDeniedError as e:
            if "CAP_SYS_ADMIN" not in e.message:  # Not the GPUs' (e.g. profile_path's).
                raise
            # The original's class (RuntimeError) and words, then the core's.
            raise PowerLimitPermissionError(
                "SYS_ADMIN capability is required to modify GPU power limits. See "
                "https://ml.energy/zeus/getting_started/#system-privileges for more "
                f"information. ({e.message})") from e
        finally:
            if converted:
                os.unlink(converted)

    def _select_trampoline(self, profile_json, out_mw, _user):
        """Called by the core when profiling ends: runs the Python selector;
        under torch.distributed the ranks agree on one limit. Never raises
        into C: an exception is kept and re-raised by _check."""
        chosen_mw, failed = 0, 0
        try:
            profile = json.loads(profile_json.decode())
            measurements = _measurements_of(profile)
            chosen_w = self.optimum_selector.select(measurements)
            chosen_mw = self._to_mw(chosen_w, measurements)
            # A measured limit that is not a whole W (a clamped minimum)
            # maps back to its exact value.
            exact = {m["power_limit_mw"] // 1000: m["power_limit_mw"]
                     for m in profile.get("measurements", [])}
            chosen_mw = exact.get(chosen_mw // 1000, chosen_mw)
        except BaseException as e:
            self._callback_error = e
            failed = 1
        try:
            if framework.is_distributed():
                # Collective: every rank ends profiling at the same step.
                highest, minus_lowest, any_failed = framework.all_reduce(
                    [float(chosen_mw), -float(chosen_mw), float(failed)], "max")
                if any_failed and not failed:
                    self._callback_error = ZeusError(
                        "GlobalPowerLimitOptimizer: the optimum selector failed on another rank")
                    return 1
                if int(highest) != int(-minus_lowest):
                    logger.warning(
                        "GlobalPowerLimitOptimizer: the ranks' selectors chose %d to %d mW; "
                        "every rank pins the highest, %d mW", int(-minus_lowest), int(highest),
                        int(highest))
                chosen_mw = int(highest)
        except BaseException as e:
            self._callback_error = e
            return 1
        if failed:
            return 1
        out_mw[0] = chosen_mw
        return 0

    @staticmethod
    def _to_mw(chosen_w, measurements) -> int:
        if isinstance(chosen_w, bool) or not isinstance(chosen_w, numbers.Real) or \
                not float(chosen_w).is_integer() or not 0 < chosen_w < 4_000_000:
            raise InvalidArgumentError(
                f"GlobalPowerLimitOptimizer: the optimum selector returned {chosen_w!r}; it must "
                f"return a power limit in W, e.g. one of {[m.power_limit for m in measurements]}")
        return int(chosen_w) * 1000

    @property
    def state(self) -> Union[Ready, Warmup, Profiling, Done]:
        """The state machine's state now (a fresh object at every read)."""
        s = self._state_json()
        if s["phase"] == "done":
            return Done(optimal_power_limit=s["optimum_mw"] or s["phase_limit_mw"])
        if s["phase"] == "waiting":
            return Ready(next_power_limit=s["phase_limit_mw"], steps=s["steps_left"])
        cls = Warmup if s["phase"] == "warmup" else Profiling
        return cls(current_power_limit=s["phase_limit_mw"], steps=s["steps_left"])

    @property
    def power_limits(self) -> List[int]:
        """The limits profiled, in mW, from the maximum down."""
        return list(self._state_json()["power_limits_mw"])

    @property
    def skipped_power_limits(self) -> List[int]:
        """(extra) The limits recorded as equal to the maximum without
        profiling (they cannot bind at the draw measured there), in mW."""
        return list(self._state_json().get("skipped_power_limits_mw", []))

    @property
    def measurements(self) -> List[PowerLimitMeasurement]:
        """The measurements so far (all of them once done, or those of the
        loaded profile), from the highest limit down."""
        return _measurements_of(self.profile())

    @property
    def optimal_power_limit(self) -> Optional[int]:
        """(extra) The pinned limit in W once profiling is done, else None."""
        self._require_open()
        mw = self._lib.zeus_plo_optimum_mw(self._handle)
        return mw // 1000 if mw else None

    @property
    def current_power_limit(self) -> int:
        """The limit last set on every GPU by the optimizer, in mW."""
        self._require_open()
        return self._lib.zeus_plo_current_limit_mw(self._handle)


__getattr__ = _jit.lazy_hf_getattr(
    __name__, "HFGlobalPowerLimitOptimizer",
    lambda: _jit.hf_callback_class("HFGlobalPowerLimitOptimizer", __name__,
                                   GlobalPowerLimitOptimizer, keyword_extras=False))

__all__ = [
    "OptimumSelector", "Energy", "Time", "ZeusCost", "MaxSlowdownConstraint", "Ready", "Warmup",
    "Profiling", "Done", "PowerLimitMeasurement", "GlobalPowerLimitOptimizer",
    "HFGlobalPowerLimitOptimizer"
]
