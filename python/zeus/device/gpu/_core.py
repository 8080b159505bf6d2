"""The Python side of the core's GPUs (libzeus_c.so's zeus_gpus handle),
shared by every vendor's classes (zeus.device.gpu.nvidia, .amd): the handle
and its restore at exit, the core's errors as the original's exception
classes, which backends the core can use, and the checks of ZEUSD_SOCK_PATH
and of integer arguments. Thread-safety: a _Handle may be used from any
thread (the core serialises its setters)."""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import re
import stat

from zeus import _lib
from zeus.device.exception import ZeusdError
from zeus.exception import ZeusError
import zeus.device.gpu.common as gpu_common

logger = logging.getLogger("zeus.device.gpu.nvidia")

RESTORE_ENV = "ZEUS_DEVICE_RESTORE_ON_EXIT"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

# NVML's and AMD SMI's error names (they appear in the core's messages) to
# exception classes.
_NVML_ERRORS = {
    "NVML_ERROR_UNINITIALIZED": gpu_common.ZeusGPUInitError,
    "NVML_ERROR_INVALID_ARGUMENT": gpu_common.ZeusGPUInvalidArgError,
    "NVML_ERROR_NOT_SUPPORTED": gpu_common.ZeusGPUNotSupportedError,
    "NVML_ERROR_NO_PERMISSION": gpu_common.ZeusGPUNoPermissionError,
    "NVML_ERROR_ALREADY_INITIALIZED": gpu_common.ZeusGPUAlreadyInitializedError,
    "NVML_ERROR_NOT_FOUND": gpu_common.ZeusGPUNotFoundError,
    "NVML_ERROR_INSUFFICIENT_SIZE": gpu_common.ZeusGPUInsufficientSizeError,
    "NVML_ERROR_INSUFFICIENT_POWER": gpu_common.ZeusGPUInsufficientPowerError,
    "NVML_ERROR_DRIVER_NOT_LOADED": gpu_common.ZeusGPUDriverNotLoadedError,
    "NVML_ERROR_TIMEOUT": gpu_common.ZeusGPUTimeoutError,
    "NVML_ERROR_IRQ_ISSUE": gpu_common.ZeusGPUIRQError,
    "NVML_ERROR_LIBRARY_NOT_FOUND": gpu_common.ZeusGPULibraryNotFoundError,
    "NVML_ERROR_FUNCTION_NOT_FOUND": gpu_common.ZeusGPUFunctionNotFoundError,
    "NVML_ERROR_CORRUPTED_INFOROM": gpu_common.ZeusGPUCorruptedInfoROMError,
    "NVML_ERROR_GPU_IS_LOST": gpu_common.ZeusGPULostError,
    "NVML_ERROR_RESET_REQUIRED": gpu_common.ZeusGPUResetRequiredError,
    "NVML_ERROR_OPERATING_SYSTEM": gpu_common.ZeusGPUOperatingSystemError,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": gpu_common.ZeusGPULibRMVersionMismatchError,
    "NVML_ERROR_MEMORY": gpu_common.ZeusGPUMemoryError,
    "NVML_ERROR_UNKNOWN": gpu_common.ZeusGPUUnknownError,
    "AMDSMI_STATUS_INVAL": gpu_common.ZeusGPUInvalidArgError,
    "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS": gpu_common.ZeusGPUInvalidArgError,
    "AMDSMI_STATUS_NOT_SUPPORTED": gpu_common.ZeusGPUNotSupportedError,
    "AMDSMI_STATUS_NOT_YET_IMPLEMENTED": gpu_common.ZeusGPUNotSupportedError,
    "AMDSMI_STATUS_NO_PERM": gpu_common.ZeusGPUNoPermissionError,
    "AMDSMI_STATUS_NOT_FOUND": gpu_common.ZeusGPUNotFoundError,
    "AMDSMI_STATUS_DRIVER_NOT_LOADED": gpu_common.ZeusGPUDriverNotLoadedError,
    "AMDSMI_STATUS_TIMEOUT": gpu_common.ZeusGPUTimeoutError,
    "AMDSMI_STATUS_INIT_ERROR": gpu_common.ZeusGPUInitError,
    "AMDSMI_STATUS_NOT_INIT": gpu_common.ZeusGPUInitError,
    "AMDSMI_STATUS_FAIL_LOAD_MODULE": gpu_common.ZeusGPULibraryNotFoundError,
    "AMDSMI_STATUS_FAIL_LOAD_SYMBOL": gpu_common.ZeusGPUFunctionNotFoundError,
    "AMDSMI_STATUS_UNKNOWN_ERROR": gpu_common.ZeusGPUUnknownError,
}
# The core's status codes (zeus_c_api.h) when the message names no NVML error.
_STATUS_ERRORS = {
    1: gpu_common.ZeusGPUInvalidArgError,
    2: gpu_common.ZeusGPUNotFoundError,
    3: gpu_common.ZeusGPUNotSupportedError,
    4: gpu_common.ZeusGPUNoPermissionError,
}
# The core's power domains (zeus_gpus_domain_power_mw).
_NVML_NAME = re.compile(r"(?:NVML_ERROR|AMDSMI_STATUS)_[A-Z_]+")
# The core's backend names (zeus_gpu_backends_json) and their vendors.
_VENDORS = {"nvml": "NVIDIA", "amdsmi": "AMD"}
# The core's simulated GPUs (ZEUS_FAKE_GPUS) stand in for NVIDIA's here.
_STANDS_IN_FOR = {"simulated": "nvml"}
_PERMISSION_HINT = ("changing GPU settings needs root (CAP_SYS_ADMIN) or the Zeus daemon "
                    "(ZEUSD_SOCK_PATH); ZEUS_DRY_RUN=1 only logs the change")


def _gpu_error(error: ZeusError, setter: bool = False) -> gpu_common.ZeusBaseGPUError:
    """The ZeusGPU* exception for an error of the core."""
    message = str(error)
    match = _NVML_NAME.search(message)
    cls = _NVML_ERRORS.get(match.group(0)) if match else None
    if cls is None:
        if setter and _zeusd_socket() is not None and error.code != 4:
            cls = ZeusdError
        else:
            cls = _STATUS_ERRORS.get(error.code, gpu_common.ZeusGPUUnknownError)
    if cls is gpu_common.ZeusGPUNoPermissionError and "CAP_SYS_ADMIN" not in message:
        message = f"{message}; {_PERMISSION_HINT}"
    return cls(message)


def _zeusd_socket():
    path = os.environ.get("ZEUSD_SOCK_PATH")
    return path if path else None


def _restore_on_exit() -> bool:
    value = os.environ.get(RESTORE_ENV)
    if value is None or value.strip() == "":
        return True
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise gpu_common.ZeusGPUInvalidArgError(
        f"{RESTORE_ENV}={value!r}: expected one of {', '.join(_TRUE + _FALSE)}")


def _check_zeusd_socket() -> None:
    """The original's checks of ZEUSD_SOCK_PATH, before anything is opened."""
    path = _zeusd_socket()
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ZeusdError(f"ZEUSD_SOCK_PATH points to non-existent file: {path}") from None
    if not stat.S_ISSOCK(mode):
        raise ZeusdError(f"ZEUSD_SOCK_PATH is not a socket: {path}")
    if not os.access(path, os.W_OK):
        raise ZeusdError(f"ZEUSD_SOCK_PATH is not writable: {path}")


def _backends(lib) -> list:
    """The core's GPU backends (zeus_gpu_backends_json), in the order it
    tries them."""
    return json.loads(_lib.call_text(lib.zeus_gpu_backends_json))


def _backend_available(backend: str) -> bool:
    """Whether `backend`'s library loads and initialises and no other
    vendor's backend is in use (the core drives one vendor per process)."""
    try:
        lib = _lib.lib()
        backends = _backends(lib)
    except ZeusError as e:
        logger.info("zeus.device: %s is not available: %s", backend, e)
        return False
    mine = next((b for b in backends
                 if b["name"] == backend or _STANDS_IN_FOR.get(b["name"]) == backend), None)
    if mine is None or not mine["loaded"]:
        why = mine["status"] if mine is not None else "not in this build"
        logger.info("zeus.device: %s is not available: %s", backend, why)
        return False
    other = next((b for b in backends if b is not mine and b["in_use"]), None)
    if other is not None:
        logger.info("zeus.device: %s is not used: %s", backend, mine["selection"])
        return False
    return True


class _Handle:
    """One zeus_gpus handle of the core, shared by the GPU objects made with
    it. Restores what was changed through it at interpreter exit. `backend`
    is the vendor's backend the caller expects ("nvml", "amdsmi"):
    ZeusGPUInitError when the core's GPUs come from another; None takes
    whichever the core uses (`backend` then names it, "" without GPUs)."""

    def __init__(self, backend: str | None = "nvml") -> None:
        vendor = _VENDORS.get(backend, "") if backend is not None else ""
        restore = _restore_on_exit()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and visible.strip() == "":
            # CUDA would see no GPU; the original refuses, and so do we.
            raise gpu_common.ZeusGPUInitError(
                "CUDA_VISIBLE_DEVICES is set to an empty string: unset it or list GPU indices "
                "(e.g. 0,1)")
        _check_zeusd_socket()
        handle = ctypes.c_void_p()
        try:
            self.lib = _lib.lib()
            _lib.call(self.lib.zeus_gpus_open_with,
                      _lib.options_json({"restore_on_exit": restore}), ctypes.byref(handle))
        except ZeusError as e:
            raise gpu_common.ZeusGPUInitError(
                f"zeus.device: cannot open the {vendor or 'NVIDIA'} GPUs: {e}") from e
        self.handle = handle
        self.restore_on_exit = restore
        self.exit_hook = False
        self.owner_pid = os.getpid()
        try:
            self.infos = json.loads(_lib.call_text(self.lib.zeus_gpus_json, handle))
        except ZeusError as e:
            self.close()
            raise gpu_common.ZeusGPUInitError(f"zeus.device: reading the GPUs: {e}") from e
        # The core drives one vendor per process: the first backend (NVML,
        # then AMD SMI) that finds GPUs.
        self.backend = self.infos[0].get("backend", "") if self.infos else ""
        if (backend is not None and self.infos and self.backend != backend
                and _STANDS_IN_FOR.get(self.backend) != backend):
            used = _VENDORS.get(self.backend, self.backend)
            self.close()
            raise gpu_common.ZeusGPUInitError(
                f"zeus.device: cannot open the {vendor} GPUs: the core uses the {used} GPUs "
                f"of this machine ({self.backend}; one GPU vendor per process)")

    def call(self, name, *args, setter=False):
        """Calls zeus_gpus_`name`(handle, *args), mapping errors."""
        if self.handle is None:
            raise gpu_common.ZeusGPUInitError("zeus.device: the GPUs were closed")
        if setter and self.restore_on_exit and not self.exit_hook:
            # Registered at the first change, so it runs before the exit hooks
            # registered earlier (LIFO); it also keeps this handle alive until
            # exit, so dropping the GPU objects does not undo their changes.
            atexit.register(_restore_at_exit, self)
            self.exit_hook = True
        try:
            _lib.call(getattr(self.lib, "zeus_gpus_" + name), self.handle, *args)
        except ZeusError as e:
            raise _gpu_error(e, setter) from e

    def restore(self) -> None:
        """Puts back what was changed through this handle."""
        if self.handle is not None:
            self.call("restore")

    def close(self) -> None:
        if self.handle is not None:
            self.lib.zeus_gpus_destroy(self.handle)  # Restores, logging failures.
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown.
            pass


def _restore_at_exit(handle: _Handle) -> None:
    if os.getpid() != handle.owner_pid:
        return  # A forked child exiting: the changes are its parent's.
    try:
        handle.restore()
    except gpu_common.ZeusBaseGPUError as e:
        logger.error("zeus.device: restoring GPU settings at exit: %s", e)


def _uint(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise gpu_common.ZeusGPUInvalidArgError(
            f"zeus.device: {name} must be a non-negative int, got {value!r}")
    return value
