"""`python -m zeus.show_env`: what Zeus sees on this machine (the original's
`zeus.show_env`).

Prints, in sections separated by SECTION_SEPARATOR: the Python and Zeus
versions and which of PyTorch, JAX and CuPy import (with or without CUDA),
the GPUs (through zeus.device), the CPUs' RAPL packages, the SoC, and the
zeusd daemon named by ZEUSD_SOCK_PATH / ZEUSD_HOST_PORT. Every probe's
failure is caught and printed in its section: the command never fails
because a device or framework is missing.
"""

from __future__ import annotations

import importlib
import platform
import shutil

import zeus
from zeus.utils import framework

SECTION_SEPARATOR = "-" * shutil.get_terminal_size().columns
_MODULES = {"PyTorch": "torch", "JAX": "jax", "CuPy": "cupy"}


def _framework_line(label: str, is_available, cuda_flag: bool = True) -> str:
    try:
        if cuda_flag:
            try:
                if not is_available(ensure_cuda=True):
                    return f"  {label}: not available"
                cuda = "with CUDA support"
            except RuntimeError:  # Imports, but no CUDA.
                cuda = "without CUDA support"
        else:
            if not is_available():
                return f"  {label}: not available"
            cuda = "CUDA runtime"
    except Exception as e:  # A broken installation: say so, go on.
        return f"  {label}: fails to import ({type(e).__name__}: {e})"
    module = framework.MODULE_CACHE.get(_MODULES[label])
    version = getattr(module, "__version__", "unknown version")
    return f"  {label}: {version} ({cuda})"


def _packages() -> str:
    lines = [f"  Python: {platform.python_version()}", f"  Zeus: {zeus.__version__}"]
    lines.append(_framework_line("PyTorch", framework.torch_is_available))
    lines.append(_framework_line("JAX", framework.jax_is_available))
    lines.append(_framework_line("CuPy", framework.cupy_is_available, cuda_flag=False))
    return "\n".join(lines)


def _call_getter(obj, snake: str, camel: str, *args):
    method = getattr(obj, snake, None) or getattr(obj, camel)
    return method(*args)


def _gpus() -> str:
    try:
        from zeus.device import get_gpus
        gpus = get_gpus()
        count = len(gpus)
    except Exception as e:
        return f"  Error initializing GPUs: {type(e).__name__}: {e}"
    if count == 0:
        return "  No GPUs available."
    lines = []
    for i in range(count):
        try:
            name = _call_getter(gpus, "get_name", "getName", i)
        except Exception as e:
            name = f"(name unreadable: {e})"
        lines.append(f"  GPU {i}: {name}")
    return "\n".join(lines)


def _cpus() -> str:
    try:
        get_cpus = importlib.import_module("zeus.device").get_cpus
    except AttributeError:
        return "  CPU discovery is not available in this zeus.device."
    try:
        cpus = get_cpus()
        count = len(cpus.cpus)
    except Exception as e:
        return f"  Error initializing CPUs: {type(e).__name__}: {e}"
    if count == 0:
        return "  No CPUs available."
    lines = []
    for i in range(count):
        try:
            dram = _call_getter(cpus, "supports_get_dram_energy_consumption",
                                "supportsGetDramEnergyConsumption", i)
        except Exception as e:
            dram = f"unknown ({e})"
        lines.append(f"  CPU {i}: CPU measurements available; DRAM measurements "
                     f"{'available' if dram is True else 'unavailable' if dram is False else dram}")
    return "\n".join(lines)


def _soc() -> str:
    try:
        get_soc = importlib.import_module("zeus.device").get_soc
    except AttributeError:
        return "  SoC discovery is not available in this zeus.device."
    try:
        soc = get_soc()
        metrics = _call_getter(soc, "get_available_metrics", "getAvailableMetrics")
    except Exception as e:
        return f"  No SoC available ({type(e).__name__}: {e})"
    if not metrics:
        return "  No SoC available."
    return f"  {type(soc).__name__} available; metrics: {', '.join(sorted(metrics))}"


def _daemon() -> str:
    from zeus.utils.zeusd import ZeusdClient, ZeusdConfig
    try:
        config = ZeusdConfig.from_env()
    except Exception as e:
        return f"  Error reading the zeusd configuration: {e}"
    if config is None:
        return "  No daemon configured (ZEUSD_SOCK_PATH and ZEUSD_HOST_PORT unset)."
    try:
        client = ZeusdClient(config)
    except Exception as e:
        return f"  zeusd at {config.endpoint}: unusable: {e}"
    lines = [f"  zeusd at {client.endpoint}: GPUs {client.gpu_ids}, CPUs {client.cpu_ids}, "
             f"auth {'required' if client.auth_required else 'not required'}"]
    for gpu in client.gpus:
        lines.append(f"    GPU {gpu.id}: {gpu.name} ({gpu.pci_address})")
    lines.append(f"    read GPUs: {client.can_read_gpu}, control GPUs: {client.can_control_gpu}, "
                 f"read CPUs: {client.can_read_cpu}")
    if client.auth_error:
        lines.append(f"    auth error: {client.auth_error}")
    return "\n".join(lines)


def show_env():
    """Prints the environment report (see module doc) to stdout."""
    for title, probe in (("Package availability and versions", _packages),
                         ("GPU availability", _gpus), ("CPU availability", _cpus),
                         ("SoC availability", _soc), ("Daemon (zeusd)", _daemon)):
        print(SECTION_SEPARATOR)
        print(f"## {title}\n")
        print("Detected:\n" + probe() + "\n")
    print(SECTION_SEPARATOR)


if __name__ == "__main__":
    show_env()
