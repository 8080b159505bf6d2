"""Loading libzeus_c.so (the C ABI of python/zeus_c_api.h) through ctypes.

ctypes.CDLL releases the GIL for the duration of every foreign call, so NVML
reads made by the core never block other Python threads. The library is found
at $ZEUS_C_LIBRARY, else beside this file (the wheel bundles it there).

The core's log messages go to the `zeus.core` logger of `logging` (so the
`zeus` logger's level and handlers, and `logging.disable`, apply to them);
nothing is printed by the library itself. The core sends INFO and above, or
from the level `ZEUS_LOG_LEVEL` names (DEBUG, INFO, WARNING, ERROR, CRITICAL
or a number), which also becomes the `zeus` logger's level.
"""

import atexit
import ctypes
import json
import logging
import os
import threading

from zeus.exception import ERRORS_BY_CODE, InvalidArgumentError, UnavailableError, ZeusError

ABI_VERSION = 2
MESSAGE_SIZE = 2048

SYNC_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
ALL_REDUCE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                 ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int32),
                                 ctypes.c_void_p)
REPLAY_END_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double),
                                 ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                 ctypes.c_void_p)

_c = ctypes
_P = _c.c_void_p
_MSG = [_c.c_char_p, _c.c_size_t]
_TEXT = [_c.c_char_p, _c.c_size_t, _c.POINTER(_c.c_size_t)]
_I32 = _c.c_int32

# name: (restype, argtypes)
_SIGNATURES = {
    "zeus_c_api_version": (_I32, []),
    "zeus_now_s": (_c.c_double, []),
    "zeus_gpus_open": (_I32, [_c.POINTER(_P)] + _MSG),
    "zeus_gpus_count": (_I32, [_P]),
    "zeus_gpus_json": (_I32, [_P] + _TEXT + _MSG),
    "zeus_gpus_power_mw": (_I32, [_P, _I32, _c.POINTER(_c.c_uint32)] + _MSG),
    "zeus_gpus_energy_mj": (_I32, [_P, _I32, _c.POINTER(_c.c_uint64)] + _MSG),
    "zeus_gpus_power_limit_mw": (_I32, [_P, _I32, _c.POINTER(_c.c_uint32)] + _MSG),
    "zeus_gpus_destroy": (None, [_P]),
    "zeus_monitor_create": (_I32, [_c.c_char_p, SYNC_FN, _P, _c.POINTER(_P)] + _MSG),
    "zeus_monitor_create_replay": (_I32, [_c.c_char_p, REPLAY_END_FN, _P, _c.POINTER(_P)] + _MSG),
    "zeus_monitor_num_gpus": (_I32, [_P]),
    "zeus_monitor_num_cpus": (_I32, [_P]),
    "zeus_monitor_gpu_index": (_I32, [_P, _I32]),
    "zeus_monitor_cpu_index": (_I32, [_P, _I32]),
    "zeus_monitor_begin": (_I32, [_P, _c.c_char_p] + _MSG),
    "zeus_monitor_end": (_I32, [_P, _c.c_char_p, _c.POINTER(_c.c_double), _c.c_size_t] + _MSG),
    "zeus_monitor_begin_nosync": (_I32, [_P, _c.c_char_p] + _MSG),
    "zeus_monitor_end_nosync": (_I32, [_P, _c.c_char_p, _c.POINTER(_c.c_double), _c.c_size_t]
                                + _MSG),
    "zeus_monitor_cancel": (_I32, [_P, _c.c_char_p] + _MSG),
    "zeus_monitor_window_begin": (_I32, [_P, _c.c_char_p, _c.POINTER(_c.c_double), _c.c_size_t]
                                  + _MSG),
    "zeus_monitor_is_open": (_I32, [_P, _c.c_char_p]),
    "zeus_monitor_destroy": (None, [_P]),
    "zeus_plo_create_on_monitor": (_I32, [_P, _c.c_char_p, ALL_REDUCE_FN, _P, _c.POINTER(_P)] +
                                   _MSG),
    "zeus_plo_on_step_begin": (_I32, [_P] + _MSG),
    "zeus_plo_on_epoch_end": (_I32, [_P] + _MSG),
    "zeus_plo_restore": (_I32, [_P] + _MSG),
    "zeus_plo_phase": (_I32, [_P]),
    "zeus_plo_optimum_mw": (_c.c_uint32, [_P]),
    "zeus_plo_current_limit_mw": (_c.c_uint32, [_P]),
    "zeus_plo_profile_json": (_I32, [_P] + _TEXT),
    "zeus_plo_destroy": (None, [_P]),
}

# ---- Power monitor and GPU reader (zeus.monitor.power, .temperature) --------
_SIGNATURES.update({
    "zeus_power_monitor_create": (_I32, [_c.c_char_p, _c.POINTER(_P)] + _MSG),
    "zeus_power_monitor_num_gpus": (_I32, [_P]),
    "zeus_power_monitor_gpu_index": (_I32, [_P, _I32]),
    "zeus_power_monitor_num_domains": (_I32, [_P]),
    "zeus_power_monitor_domain_name": (_c.c_char_p, [_P, _I32]),
    "zeus_power_monitor_has_counter": (_I32, [_P, _I32]),
    "zeus_power_monitor_domain_energy": (_I32, [_P, _I32, _c.c_char_p, _c.c_double, _c.c_double,
                                                _c.POINTER(_c.c_double)] + _MSG),
    "zeus_power_monitor_domain_timeline": (_I32, [_P, _I32, _c.c_char_p, _c.c_double,
                                                  _c.c_double, _c.POINTER(_c.c_double),
                                                  _c.POINTER(_c.c_double), _c.c_size_t,
                                                  _c.POINTER(_c.c_size_t)] + _MSG),
    "zeus_power_monitor_destroy": (None, [_P]),
    "zeus_gpu_reader_create": (_I32, [_c.c_char_p, _c.POINTER(_P)] + _MSG),
    "zeus_gpu_reader_num_gpus": (_I32, [_P]),
    "zeus_gpu_reader_gpu_index": (_I32, [_P, _I32]),
    "zeus_gpu_reader_temperature_c": (_I32, [_P, _I32, _c.POINTER(_c.c_int32)] + _MSG),
    "zeus_gpu_reader_power_mw": (_I32, [_P, _I32, _c.c_char_p, _c.POINTER(_c.c_uint32)] + _MSG),
    "zeus_gpu_reader_name": (_I32, [_P, _I32] + _TEXT + _MSG),
    "zeus_gpu_reader_destroy": (None, [_P]),
})
# ---- End of the power monitor and GPU reader block ----------------------------

# ---- zeus.device (GPU setters and restore, RAPL CPUs): zeus_c_devices.cc ----
_SIGNATURES.update({
    "zeus_gpus_open_with": (_I32, [_c.c_char_p, _c.POINTER(_P)] + _MSG),
    "zeus_gpus_default_power_limit_mw": (_I32, [_P, _I32, _c.POINTER(_c.c_uint32)] + _MSG),
    "zeus_gpus_set_power_limit_mw": (_I32, [_P, _I32, _c.c_uint32] + _MSG),
    "zeus_gpus_reset_power_limit": (_I32, [_P, _I32] + _MSG),
    "zeus_gpus_persistence_mode": (_I32, [_P, _I32, _c.POINTER(_I32)] + _MSG),
    "zeus_gpus_set_persistence_mode": (_I32, [_P, _I32, _I32] + _MSG),
    "zeus_gpus_set_locked_clocks": (_I32, [_P, _I32, _I32, _c.c_uint32, _c.c_uint32] + _MSG),
    "zeus_gpus_reset_locked_clocks": (_I32, [_P, _I32, _I32] + _MSG),
    "zeus_gpus_unlock_clocks": (_I32, [_P, _I32, _I32] + _MSG),
    "zeus_gpus_restore": (_I32, [_P] + _MSG),
    "zeus_gpus_has_domain_reads": (_I32, []),
    "zeus_gpus_temperature_c": (_I32, [_P, _I32, _c.POINTER(_I32)] + _MSG),
    "zeus_gpus_domain_power_mw": (_I32, [_P, _I32, _I32, _c.POINTER(_c.c_uint32)] + _MSG),
    "zeus_gpus_supported_graphics_clocks_mhz": (_I32, [_P, _I32, _c.POINTER(_c.c_uint32),
                                                        _c.c_size_t, _c.POINTER(_c.c_size_t)]
                                                + _MSG),
    "zeus_gpus_supported_graphics_clocks_at_mhz": (_I32, [_P, _I32, _c.c_uint32,
                                                           _c.POINTER(_c.c_uint32), _c.c_size_t,
                                                           _c.POINTER(_c.c_size_t)] + _MSG),
    "zeus_gpus_supported_memory_clocks_mhz": (_I32, [_P, _I32, _c.POINTER(_c.c_uint32),
                                                      _c.c_size_t, _c.POINTER(_c.c_size_t)]
                                              + _MSG),
    "zeus_gpu_backends_json": (_I32, _TEXT + _MSG),
    "zeus_cpus_open": (_I32, [_c.c_char_p, _c.POINTER(_P)] + _MSG),
    "zeus_cpus_count": (_I32, [_P]),
    "zeus_cpus_info": (_I32, [_P, _I32, _c.POINTER(_I32), _c.POINTER(_I32)]),
    "zeus_cpus_energy_uj": (_I32, [_P, _I32, _c.POINTER(_c.c_uint64), _c.POINTER(_c.c_uint64)]
                            + _MSG),
    "zeus_cpus_destroy": (None, [_P]),
})
# ---- end of zeus.device ----

_lock = threading.Lock()
_lib = None

# ---- Logs: the core's messages into `logging` ---------------------------------
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p)
_SIGNATURES["zeus_set_log_handler"] = (None, [LOG_FN, ctypes.c_void_p, _I32])
# The core's levels (0 trace ... 5 critical) as logging levels.
_CORE_TO_LOGGING = [logging.DEBUG, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
                    logging.CRITICAL]
core_logger = logging.getLogger("zeus.core")


def env_log_level():
    """The logging level ZEUS_LOG_LEVEL names; None when unset or empty.
    ValueError naming the variable when it names no level."""
    value = os.environ.get("ZEUS_LOG_LEVEL", "").strip()
    if not value:
        return None
    if value.isdigit():
        return int(value)
    level = logging.getLevelName(value.upper())
    if value.upper() == "WARN":
        level = logging.WARNING
    if not isinstance(level, int):
        raise ValueError(f"ZEUS_LOG_LEVEL={value!r} is not a logging level "
                         "(DEBUG, INFO, WARNING, ERROR, CRITICAL)")
    return level


def _core_level(level):
    """The core's level for a logging level: what it must send."""
    if level <= logging.DEBUG:
        return 1
    if level <= logging.INFO:
        return 2
    if level <= logging.WARNING:
        return 3
    if level <= logging.ERROR:
        return 4
    return 5


@LOG_FN
def _forward_log(level, message, _user):
    try:
        py_level = _CORE_TO_LOGGING[min(max(level, 0), 5)]
        if core_logger.isEnabledFor(py_level):
            core_logger.log(py_level, message.decode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 - never raise into the core's thread.
        pass


def _install_log_handler(loaded):
    try:
        level = env_log_level()
    except ValueError as e:
        logging.getLogger("zeus").warning("%s; using INFO", e)
        level = None
    if level is not None:
        logging.getLogger("zeus").setLevel(level)
    loaded.zeus_set_log_handler(_forward_log, None, _core_level(level or logging.INFO))
    # After the interpreter's exit hooks, Python can no longer take calls:
    # late messages (threads still stopping) go to stderr.
    atexit.register(loaded.zeus_set_log_handler, LOG_FN(), None, 3)


def _candidates():
    env = os.environ.get("ZEUS_C_LIBRARY")
    if env:
        return [env]
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)), "libzeus_c.so")]


def lib():
    """The loaded library, with every signature declared (loaded once)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        loaded = None
        for path in _candidates():
            try:
                loaded = ctypes.CDLL(path)
                break
            except OSError as e:
                errors.append(f"{path}: {e}")
        if loaded is None:
            raise UnavailableError("zeus: cannot load libzeus_c.so: " + "; ".join(errors))
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(loaded, name)
            except AttributeError:
                raise UnavailableError(f"zeus: libzeus_c.so lacks {name} (an older build?)")
            fn.restype = restype
            fn.argtypes = argtypes
        version = loaded.zeus_c_api_version()
        if version != ABI_VERSION:
            raise UnavailableError(
                f"zeus: libzeus_c.so has ABI version {version}, this package needs {ABI_VERSION}")
        _install_log_handler(loaded)
        _lib = loaded
        return _lib


def raise_for(code, message):
    """Raises the exception class of status `code` (no-op for 0)."""
    if code != 0:
        text = message.value.decode("utf-8", "replace") if message is not None else ""
        raise ERRORS_BY_CODE.get(code, ZeusError)(text, code)


# The integer parameter types of the C ABI and their ranges: ctypes would
# wrap a Python int outside them silently (2**32 as an int32 is 0).
_INT_RANGES = {
    ctypes.c_int32: (-2**31, 2**31 - 1),
    ctypes.c_uint32: (0, 2**32 - 1),
    ctypes.c_int64: (-2**63, 2**63 - 1),
    ctypes.c_uint64: (0, 2**64 - 1),
    ctypes.c_size_t: (0, 2**(8 * ctypes.sizeof(ctypes.c_size_t)) - 1),
}


def check_int_args(fn, args):
    """Raises InvalidArgumentError when an int passed for an integer
    parameter of `fn` does not fit its C type (instead of wrapping)."""
    for position, (arg, ctype) in enumerate(zip(args, fn.argtypes or ()), start=1):
        bounds = _INT_RANGES.get(ctype)
        if bounds is not None and isinstance(arg, int) and not bounds[0] <= arg <= bounds[1]:
            raise InvalidArgumentError(
                f"{fn.__name__}: argument {position} is {arg}, out of range for "
                f"{ctype.__name__} ({bounds[0]} to {bounds[1]})")


def call(fn, *args):
    """Calls a C function whose last two parameters are the message buffer,
    raising on a non-OK status (InvalidArgumentError for an integer argument
    its C type cannot hold)."""
    check_int_args(fn, args)
    message = ctypes.create_string_buffer(MESSAGE_SIZE)
    raise_for(fn(*args, message, MESSAGE_SIZE), message)


def call_text(fn, *args):
    """Calls a function following the buffer convention of zeus_c_api.h
    (buffer, size, length, message...) and returns the text."""
    check_int_args(fn, args)
    length = ctypes.c_size_t(0)
    size = 4096
    while True:
        buffer = ctypes.create_string_buffer(size)
        message = ctypes.create_string_buffer(MESSAGE_SIZE)
        code = fn(*args, buffer, size, ctypes.byref(length), message, MESSAGE_SIZE)
        if code == 1 and length.value + 1 > size:
            size = length.value + 1
            continue
        raise_for(code, message)
        return buffer.value.decode("utf-8")


def options_json(options):
    """The JSON text of an options dict, dropping None values."""
    return json.dumps({k: v for k, v in options.items() if v is not None}).encode()


def now_s():
    """Seconds on the core's monotonic clock."""
    return lib().zeus_now_s()
