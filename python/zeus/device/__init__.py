"""The GPUs this process sees (NVML, in CUDA order). Read-only: power limits
are changed only by the optimizers."""

import ctypes
import json
from typing import List

from zeus import _lib
from zeus.exception import InvalidArgumentError


class GPUs:
    """This process's GPUs; methods take the CUDA index of a GPU."""

    def __init__(self):
        self._lib = _lib.lib()
        handle = ctypes.c_void_p()
        _lib.call(self._lib.zeus_gpus_open, ctypes.byref(handle))
        self._handle = handle
        self._infos = json.loads(_lib.call_text(self._lib.zeus_gpus_json, handle))

    def __len__(self):
        return len(self._infos)

    @property
    def gpus(self) -> List[dict]:
        """Static facts of each GPU (name, uuid, architecture, limits in mW)."""
        return [dict(info) for info in self._infos]

    def position(self, gpu_index: int) -> int:
        for position, info in enumerate(self._infos):
            if info["index"] == gpu_index:
                return position
        raise InvalidArgumentError(
            f"zeus.device: no GPU {gpu_index} (this process sees {len(self._infos)})")

    def info(self, position: int) -> dict:
        return dict(self._infos[position])

    def getName(self, gpu_index: int) -> str:
        return self._infos[self.position(gpu_index)]["name"]

    def getGpuUUID(self, gpu_index: int) -> str:
        return self._infos[self.position(gpu_index)]["uuid"]

    def getPowerManagementLimitConstraints(self, gpu_index: int):
        """(min, max) in mW."""
        info = self._infos[self.position(gpu_index)]
        return info["min_power_limit_mw"], info["max_power_limit_mw"]

    def getDefaultPowerManagementLimit(self, gpu_index: int) -> int:
        return self._infos[self.position(gpu_index)]["default_power_limit_mw"]

    def getPowerManagementLimit(self, gpu_index: int) -> int:
        """The limit set now, in mW."""
        value = ctypes.c_uint32(0)
        _lib.call(self._lib.zeus_gpus_power_limit_mw, self._handle, self.position(gpu_index),
                  ctypes.byref(value))
        return value.value

    def getInstantPowerUsage(self, gpu_index: int) -> int:
        """Instant board power in mW."""
        value = ctypes.c_uint32(0)
        _lib.call(self._lib.zeus_gpus_power_mw, self._handle, self.position(gpu_index),
                  ctypes.byref(value))
        return value.value

    def supportsGetTotalEnergyConsumption(self, gpu_index: int) -> bool:
        return bool(self._infos[self.position(gpu_index)]["has_energy_counter"])

    def getTotalEnergyConsumption(self, gpu_index: int) -> int:
        """Energy since the driver loaded, in mJ (Volta and newer)."""
        value = ctypes.c_uint64(0)
        _lib.call(self._lib.zeus_gpus_energy_mj, self._handle, self.position(gpu_index),
                  ctypes.byref(value))
        return value.value

    def close(self):
        if self._handle is not None:
            self._lib.zeus_gpus_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def get_gpus(ensure_homogeneous: bool = False) -> GPUs:
    """This process's GPUs. Raises UnavailableError without NVML; with
    ensure_homogeneous, InvalidArgumentError when the GPUs differ in model."""
    gpus = GPUs()
    if ensure_homogeneous and len({info["name"] for info in gpus.gpus}) > 1:
        raise InvalidArgumentError(
            f"zeus.device: GPUs are not homogeneous: {[i['name'] for i in gpus.gpus]}")
    return gpus


__all__ = ["GPUs", "get_gpus"]
