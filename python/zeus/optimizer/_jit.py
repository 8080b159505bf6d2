"""What the just-in-time knob optimizers share (GlobalPowerLimitOptimizer in
zeus.optimizer.power_limit, GlobalFrequencyOptimizer in
zeus.optimizer.frequency): both drive one C core (the JIT profiler over a
knob) through a handle of the C ABI, whose functions differ only by prefix
(zeus_plo_*, zeus_fo_*). A Knob record names those; JitOptimizer holds the
handle, the training-loop hooks, restore/close and error mapping once; the
Hugging Face twin of either is built by hf_callback_class.
"""

import atexit
import ctypes
import inspect
import json
import numbers
import weakref
from pathlib import Path
from typing import NamedTuple

from zeus import _lib
from zeus.callback import Callback
from zeus.exception import InvalidArgumentError, UnavailableError
from zeus.monitor.energy import ZeusMonitor
from zeus.utils import framework

_P = ctypes.c_void_p
_MSG = [ctypes.c_char_p, ctypes.c_size_t]
_TEXT = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]


def handle_signatures(prefix: str) -> dict:
    """The C ABI functions every knob's handle has, named `prefix`_*."""
    return {
        f"{prefix}_on_step_begin": (ctypes.c_int32, [_P] + _MSG),
        f"{prefix}_on_epoch_end": (ctypes.c_int32, [_P] + _MSG),
        f"{prefix}_restore": (ctypes.c_int32, [_P] + _MSG),
        f"{prefix}_profile_json": (ctypes.c_int32, [_P] + _TEXT),
        f"{prefix}_state_json": (ctypes.c_int32, [_P] + _TEXT),
        f"{prefix}_destroy": (None, [_P]),
    }


class Knob(NamedTuple):
    """One knob's names: `owner` (the optimizer class, in messages), the C ABI
    `prefix` of its handle's functions, and `signatures` of the functions it
    needs beyond those zeus._lib declares."""

    owner: str
    prefix: str
    signatures: dict


def library(knob: Knob):
    """libzeus_c.so with `knob`'s functions declared; UnavailableError naming
    a missing one."""
    lib = _lib.lib()
    for name, (restype, argtypes) in knob.signatures.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise UnavailableError(f"zeus: libzeus_c.so lacks {name} (an older build?)") from None
        if fn.argtypes is None:
            fn.restype, fn.argtypes = restype, argtypes
    return lib


def text(fn, handle) -> str:
    """The text of a (handle, buffer, size, length) call of zeus_c_api.h."""
    length = ctypes.c_size_t(0)
    fn(handle, None, 0, ctypes.byref(length))
    buffer = ctypes.create_string_buffer(length.value + 1)
    code = fn(handle, buffer, length.value + 1, ctypes.byref(length))
    _lib.raise_for(code, None)
    return buffer.value.decode()


def all_reduce_callback(owner):
    """The C core's data-parallel hook (zeus_all_reduce_fn) over
    torch.distributed: sums energy and GPU counts, maxes time. An exception
    is kept in owner._callback_error (never raised into C). Keep the returned
    object alive as long as the core may call it."""

    def trampoline(energy_j, time_s, num_gpus, _user):
        try:
            energy, gpus = framework.all_reduce([energy_j[0], float(num_gpus[0])], "sum")
            (longest,) = framework.all_reduce([time_s[0]], "max")
            energy_j[0], time_s[0], num_gpus[0] = energy, longest, int(round(gpus))
            return 0
        except BaseException as e:  # Never let an exception cross into C.
            owner._callback_error = e
            return 1

    return _lib.ALL_REDUCE_FN(trampoline)


def check_int_args(owner: str, items) -> None:
    """InvalidArgumentError unless each (name, value, least) is an int (not a
    bool) >= least."""
    for name, value, least in items:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise InvalidArgumentError(f"{owner}: {name} must be an int >= {least}, got {value!r}")


def _close_at_exit(ref):
    optimizer = ref()
    if optimizer is not None:
        optimizer.close()


class JitOptimizer(Callback):
    """The handle of one knob's C optimizer and the hooks over it. A subclass
    sets _KNOB, calls _setup() first in __init__ and _create() last."""

    _KNOB: Knob

    def _setup(self, monitor, optimum_selector, wait_steps, warmup_steps, profile_steps,
               profile_path, extra_ints=()) -> None:
        """Checks and keeps the arguments every knob takes (the selector
        defaults to ZeusCost(0.5) over the monitor's GPUs)."""
        owner = self._KNOB.owner
        if not isinstance(monitor, ZeusMonitor):
            raise InvalidArgumentError(f"{owner}: monitor must be a zeus.monitor.ZeusMonitor")
        check_int_args(owner, (("wait_steps", wait_steps, 0), ("warmup_steps", warmup_steps, 0),
                               ("profile_steps", profile_steps, 1)) + tuple(extra_ints))
        from zeus.optimizer.power_limit import ZeusCost  # The selectors live there.
        self.monitor = monitor
        self.optimum_selector = (optimum_selector if optimum_selector is not None else
                                 ZeusCost(eta_knob=0.5, world_size=len(monitor.gpu_indices) or 1))
        self.wait_steps = int(wait_steps)
        self.warmup_steps = int(warmup_steps)
        self.profile_steps = int(profile_steps)
        self.profile_path = Path(profile_path) if isinstance(profile_path, str) else profile_path
        self._lib = library(self._KNOB)
        self._handle = None
        self._callback_error = None
        self._message = ctypes.create_string_buffer(_lib.MESSAGE_SIZE)
        self._all_reduce_fn = all_reduce_callback(self)

    def _create(self, create_fn, options: dict, *extra_args) -> None:
        """Creates the handle through create_fn(monitor, options, all_reduce,
        *extra_args, user, out, message, size); closed at interpreter exit."""
        handle = ctypes.c_void_p()
        code = create_fn(self.monitor._handle_for_optimizer(), _lib.options_json(options),
                         self._all_reduce_fn, *extra_args, None, ctypes.byref(handle),
                         self._message, _lib.MESSAGE_SIZE)
        self._check(code)
        self._handle = handle
        atexit.register(_close_at_exit, weakref.ref(self))

    def _fn(self, name):
        return getattr(self._lib, f"{self._KNOB.prefix}_{name}")

    def _check(self, code):
        """Raises what a callback kept, a replayed monitor's error, or the
        exception of status `code` (no-op for 0 with nothing kept)."""
        if self._callback_error is not None:
            e, self._callback_error = self._callback_error, None
            raise e
        take_replay_error = getattr(self.monitor, "_take_replay_error", None)
        replay_error = take_replay_error() if take_replay_error is not None else None
        if replay_error is not None and code != 0:
            raise replay_error
        _lib.raise_for(code, self._message)

    def _require_open(self):
        if self._handle is None:
            raise InvalidArgumentError(f"{self._KNOB.owner}: the optimizer is closed")

    def _call(self, name) -> None:
        self._require_open()
        self._check(self._fn(name)(self._handle, self._message, _lib.MESSAGE_SIZE))

    def _state_json(self) -> dict:
        self._require_open()
        return json.loads(text(self._fn("state_json"), self._handle))

    def on_epoch_begin(self) -> None:
        """Nothing to do: epochs are delimited by on_epoch_end."""

    def on_step_begin(self) -> None:
        self._call("on_step_begin")

    def on_step_end(self) -> None:
        """Nothing to do: steps are delimited by on_step_begin."""

    def on_epoch_end(self) -> None:
        self._call("on_epoch_end")

    @property
    def phase(self) -> str:
        """(extra) "waiting", "warmup", "profiling" or "done"."""
        return self._state_json()["phase"]

    def profile(self) -> dict:
        """(extra) The profile measured so far (the profile file's JSON as a
        dict: the setting, energy_j, time_s and steps of each measurement)."""
        self._require_open()
        return json.loads(text(self._fn("profile_json"), self._handle))

    def restore(self) -> None:
        """(extra) Gives every GPU back what it had before the optimizer (its
        power limit; unlocked clocks) now; later steps change nothing."""
        self._call("restore")

    def close(self) -> None:
        """(extra) Restores the GPUs (as restore()) and frees the optimizer."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._fn("destroy")(handle)

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


def _transformers_callback_base():
    """(available, base class): TrainerCallback when transformers imports."""
    try:
        import importlib.util
        if importlib.util.find_spec("transformers") is None:
            return False, object
        from transformers import TrainerCallback
        return True, TrainerCallback
    except (ImportError, ValueError):
        return False, object


def hf_callback_class(name: str, module: str, optimizer_cls, keyword_extras: bool):
    """`optimizer_cls` as a Hugging Face TrainerCallback class named `name`:
    it takes the optimizer's arguments (its keyword-only ones too when
    `keyword_extras`, else those take their defaults) and forwards the
    training hooks; closes the optimizer at the end of training. Importable
    without transformers; creating one then raises ImportError."""
    available, base = _transformers_callback_base()
    signature = inspect.signature(optimizer_cls.__init__)
    if not keyword_extras:
        signature = signature.replace(parameters=[
            p for p in signature.parameters.values() if p.kind != p.KEYWORD_ONLY
        ])

    def __init__(self, *args, **kwargs):
        if not available:
            raise ImportError(f"zeus: {name} needs the transformers package "
                              f"(pip install transformers)")
        bound = signature.bind(self, *args, **kwargs)
        self.optimizer = optimizer_cls(*bound.args[1:], **bound.kwargs)

    __init__.__signature__ = signature

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

    members = dict(__init__=__init__, on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                   on_step_begin=on_step_begin, on_step_end=on_step_end,
                   on_train_end=on_train_end, __module__=module, __qualname__=name,
                   __doc__=(f"{optimizer_cls.__name__} as a Hugging Face TrainerCallback; the "
                            f"same arguments. Importable without transformers; creating one "
                            f"then raises ImportError."))
    for fn in members.values():
        if callable(fn):
            fn.__qualname__ = f"{name}.{fn.__name__}"
    return type(name, (base,), members)


def lazy_hf_getattr(module: str, name: str, build: callable):
    """A module __getattr__ that builds the class `name` with build() on first
    use, so that importing the module never imports transformers unless the
    callback is wanted."""
    built = []

    def __getattr__(attr):
        if attr == name:
            if not built:
                built.append(build())
            return built[0]
        raise AttributeError(f"module {module!r} has no attribute {attr!r}")

    return __getattr__
