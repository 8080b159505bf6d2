"""Devices: get_gpus() (zeus.device.gpu), get_cpus() (zeus.device.cpu) and
get_soc() (zeus.device.soc)."""

from zeus.device.gpu import get_gpus
from zeus.device.cpu import get_cpus
from zeus.device.soc import get_soc
from zeus.device.gpu.common import GPUs  # Older import path of this package.

__all__ = ["get_gpus", "get_cpus", "get_soc", "GPUs"]
