"""A tiny ctypes wrapper over libzeus_c.so (python/zeus_c_api.h).

    from zeus_ctypes import PowerLimitOptimizer
    with PowerLimitOptimizer(sync=torch.cuda.synchronize, measure_steps=20) as plo:
        for epoch in range(epochs):
            for batch in loader:
                plo.on_step_begin()
                train_step(batch)
            plo.on_epoch_end()

The library is found at $ZEUS_C_LIBRARY, else libzeus_c.so beside this file,
else through the dynamic loader. Errors raise one ZeusError subclass per
status code. With ZEUS_DRY_RUN=1 limits are logged, not set.
"""

import ctypes
import json
import os

_PHASES = ("waiting", "warmup", "measuring", "done")
_MESSAGE_SIZE = 4096


class ZeusError(Exception):
    """A non-OK zeus::Status: `code` is its numeric code."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(ZeusError):
    code = 1


class NotFoundError(ZeusError):
    code = 2


class NotSupportedError(ZeusError):
    code = 3


class PermissionDeniedError(ZeusError):
    code = 4


class UnavailableError(ZeusError):
    code = 5


class FailedPreconditionError(ZeusError):
    code = 6


class IoError(ZeusError):
    code = 7


class InternalError(ZeusError):
    code = 8


class AlreadyExistsError(ZeusError):
    code = 9


class AbortedError(ZeusError):
    code = 10


_ERRORS = {cls.code: cls for cls in ZeusError.__subclasses__()}

_SYNC_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_ALL_REDUCE_FN = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ctypes.c_double),
    ctypes.POINTER(ctypes.c_double),
    ctypes.POINTER(ctypes.c_int32),
    ctypes.c_void_p,
)


def _load(path=None):
    candidates = [path, os.environ.get("ZEUS_C_LIBRARY"),
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "libzeus_c.so"),
                  "libzeus_c.so"]
    errors = []
    for candidate in candidates:
        if not candidate:
            continue
        try:
            lib = ctypes.CDLL(candidate)
            break
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    else:
        raise UnavailableError("cannot load libzeus_c.so: " + "; ".join(errors))
    msg = [ctypes.c_char_p, ctypes.c_size_t]
    lib.zeus_c_api_version.restype = ctypes.c_int32
    lib.zeus_plo_create.argtypes = [ctypes.c_char_p, _SYNC_FN, _ALL_REDUCE_FN, ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_void_p)] + msg
    lib.zeus_plo_create.restype = ctypes.c_int32
    for name in ("zeus_plo_on_step_begin", "zeus_plo_on_epoch_end", "zeus_plo_restore"):
        getattr(lib, name).argtypes = [ctypes.c_void_p] + msg
        getattr(lib, name).restype = ctypes.c_int32
    lib.zeus_plo_phase.argtypes = [ctypes.c_void_p]
    lib.zeus_plo_phase.restype = ctypes.c_int32
    lib.zeus_plo_optimum_mw.argtypes = [ctypes.c_void_p]
    lib.zeus_plo_optimum_mw.restype = ctypes.c_uint32
    lib.zeus_plo_current_limit_mw.argtypes = [ctypes.c_void_p]
    lib.zeus_plo_current_limit_mw.restype = ctypes.c_uint32
    lib.zeus_plo_profile_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.c_size_t)]
    lib.zeus_plo_profile_json.restype = ctypes.c_int32
    lib.zeus_plo_destroy.argtypes = [ctypes.c_void_p]
    lib.zeus_plo_destroy.restype = None
    if lib.zeus_c_api_version() != 2:
        raise UnavailableError(f"libzeus_c.so ABI version {lib.zeus_c_api_version()}, expected 2")
    return lib


def _check(code, buffer):
    if code != 0:
        message = buffer.value.decode("utf-8", "replace")
        raise _ERRORS.get(code, ZeusError)(message, code)


class PowerLimitOptimizer:
    """The power-limit optimizer over this process's GPUs.

    Keyword options are those of zeus_plo_create (wait_steps, warmup_steps,
    measure_steps, min_measure_time_s, power_limit_step_w, selector, eta,
    max_slowdown, profile_path, restore_on_signal, monitor_mode, gpu_indices).
    `sync()` runs before each measurement boundary; `all_reduce(energy_j,
    time_s, num_gpus)` must return the tuple summed/maxed/summed over ranks.
    """

    def __init__(self, sync=None, all_reduce=None, library=None, **options):
        self._lib = _load(library)
        self._handle = None
        self._callback_error = None

        def sync_trampoline(_user):
            try:
                sync()
                return 0
            except BaseException as e:  # Never let an exception cross into C.
                self._callback_error = e
                return 1

        def all_reduce_trampoline(energy_j, time_s, num_gpus, _user):
            try:
                e, t, n = all_reduce(energy_j[0], time_s[0], num_gpus[0])
                energy_j[0], time_s[0], num_gpus[0] = float(e), float(t), int(n)
                return 0
            except BaseException as e:
                self._callback_error = e
                return 1

        # Kept alive as long as the handle.
        self._sync = _SYNC_FN(sync_trampoline) if sync else _SYNC_FN()
        self._all_reduce = _ALL_REDUCE_FN(all_reduce_trampoline) if all_reduce else _ALL_REDUCE_FN()
        handle = ctypes.c_void_p()
        buffer = ctypes.create_string_buffer(_MESSAGE_SIZE)
        code = self._lib.zeus_plo_create(json.dumps(options).encode(), self._sync,
                                         self._all_reduce, None, ctypes.byref(handle), buffer,
                                         _MESSAGE_SIZE)
        self._raise_callback_error()
        _check(code, buffer)
        self._handle = handle

    def _raise_callback_error(self):
        if self._callback_error is not None:
            e, self._callback_error = self._callback_error, None
            raise e

    def _call(self, fn):
        if self._handle is None:
            raise FailedPreconditionError("the optimizer is closed")
        buffer = ctypes.create_string_buffer(_MESSAGE_SIZE)
        code = fn(self._handle, buffer, _MESSAGE_SIZE)
        self._raise_callback_error()
        _check(code, buffer)

    def on_step_begin(self):
        self._call(self._lib.zeus_plo_on_step_begin)

    def on_epoch_end(self):
        self._call(self._lib.zeus_plo_on_epoch_end)

    def restore(self):
        self._call(self._lib.zeus_plo_restore)

    @property
    def phase(self):
        return _PHASES[self._lib.zeus_plo_phase(self._handle)]

    @property
    def optimum_w(self):
        """The pinned limit in W once done, else None."""
        mw = self._lib.zeus_plo_optimum_mw(self._handle)
        return mw / 1000 if mw else None

    @property
    def current_limit_w(self):
        return self._lib.zeus_plo_current_limit_mw(self._handle) / 1000

    def profile(self):
        """The profile measured so far, as the profile-file dict."""
        length = ctypes.c_size_t(0)
        self._lib.zeus_plo_profile_json(self._handle, None, 0, ctypes.byref(length))
        buffer = ctypes.create_string_buffer(length.value + 1)
        _check(self._lib.zeus_plo_profile_json(self._handle, buffer, length.value + 1,
                                               ctypes.byref(length)), buffer)
        return json.loads(buffer.value.decode())

    def close(self):
        """Restores the GPUs' original limits and frees the optimizer."""
        if self._handle is not None:
            self._lib.zeus_plo_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()
