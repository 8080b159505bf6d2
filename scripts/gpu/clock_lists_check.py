"""Real-GPU check of the clock lists the core reads (read-only: only NVML
queries; no clock or limit is set). For each GPU it compares what
zeus.device returns (the core's NVML backend, no pynvml) with pynvml's own
calls on the same GPU: the supported memory clocks, the graphics clocks at
each memory clock and at the current one (memory_clock_mhz=None), and that an
unsupported memory clock raises ZeusGPUNotFoundError. Prints one line per
check, "ok ..." or "FAIL ...", then "all checks passed" or exits 1.

Usage: python3 clock_lists_check.py   (needs nvidia-ml-py for the reference)
"""

import sys

import pynvml

from zeus.device import get_gpus
from zeus.device.gpu.common import ZeusGPUNotFoundError

failures = []


def check(what, good):
    print(("ok " if good else "FAIL ") + what, flush=True)
    if not good:
        failures.append(what)


pynvml.nvmlInit()
gpus = get_gpus()
for index in range(len(gpus)):
    handle = pynvml.nvmlDeviceGetHandleByUUID(gpus.gpus[index].get_gpu_uuid())
    reference_memory = sorted(set(pynvml.nvmlDeviceGetSupportedMemoryClocks(handle)),
                              reverse=True)
    memory = gpus.get_supported_memory_clocks(index)
    check(f"GPU {index} memory clocks {memory} == pynvml's", memory == reference_memory)
    for memory_mhz in reference_memory:
        reference = sorted(set(pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle, memory_mhz)),
                           reverse=True)
        graphics = gpus.get_supported_graphics_clocks(index, memory_mhz)
        check(f"GPU {index} graphics clocks at {memory_mhz} MHz ({len(graphics)}, "
              f"{graphics[0] if graphics else None}-{graphics[-1] if graphics else None} MHz) "
              "== pynvml's", graphics == reference)
    current = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)
    at_current = gpus.get_supported_graphics_clocks(index)
    nearest = min(reference_memory, key=lambda m: abs(m - current))
    check(f"GPU {index} graphics clocks at the current memory clock ({current} MHz, nearest "
          f"supported {nearest}) == those at {nearest}",
          at_current == gpus.get_supported_graphics_clocks(index, nearest))
    unsupported = max(reference_memory) + 1
    try:
        gpus.get_supported_graphics_clocks(index, unsupported)
        check(f"GPU {index} memory clock {unsupported} MHz refused", False)
    except ZeusGPUNotFoundError as e:
        check(f"GPU {index} memory clock {unsupported} MHz refused: {e}", True)

if failures:
    print(f"{len(failures)} checks failed", flush=True)
    sys.exit(1)
print("all checks passed", flush=True)
