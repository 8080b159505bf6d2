"""The supported clock lists and clock locks of zeus.device.gpu, both
vendors, through the core: NVIDIA on the fake libnvml (the zeus_python_pytest
run), AMD on the fake libamd_smi (the zeus_python_pytest_amd run). Neither
needs pynvml or amdsmi."""

import os
import sys
import types

import pytest

from conftest import run_child as child

import zeus.device
from zeus.device.gpu import amd, nvidia
from zeus.device.gpu.common import ZeusGPUInvalidArgError, ZeusGPUNotFoundError

AMD_RUN = bool(os.environ.get("ZEUS_AMDSMI_LIBRARY")) and \
    not os.path.exists(os.environ.get("ZEUS_NVML_LIBRARY", ""))
amd_only = pytest.mark.skipif(not AMD_RUN, reason="needs the fake libamd_smi without NVML "
                              "(the zeus_python_pytest_amd run)")
nvidia_only = pytest.mark.skipif(AMD_RUN, reason="needs the fake libnvml")

# The fake libnvml's graphics clocks: from the top at each memory clock down
# to 345 MHz in 15 MHz steps.
GRAPHICS_AT_2619 = list(range(1980, 344, -15))
GRAPHICS_AT_1593 = list(range(1500, 344, -15))


def fake_log(path):
    return path.read_text().splitlines() if path.exists() else []


def unusable_module(name):
    """A module whose every attribute fails the test: proves it is not used."""
    module = types.ModuleType(name)

    def fail(attr):
        if attr.startswith("__"):  # Tools walking sys.modules (inspect, traceback).
            raise AttributeError(attr)
        pytest.fail(f"{name}.{attr} was used")
    module.__getattr__ = fail
    return module


@nvidia_only
@pytest.mark.parametrize("pynvml", [None, "unusable"])
def test_nvidia_clock_lists_come_from_the_core(monkeypatch, pynvml):
    """The original's nvmlDeviceGetSupportedMemoryClocks and
    nvmlDeviceGetSupportedGraphicsClocks(handle, memory_clock_mhz), through
    the core whether or not pynvml is importable."""
    monkeypatch.setitem(sys.modules, "pynvml",
                        None if pynvml is None else unusable_module("pynvml"))
    gpus = zeus.device.get_gpus()
    assert gpus.get_supported_memory_clocks(0) == [2619, 1593]
    assert gpus.getSupportedMemoryClocks(1) == [2619, 1593]
    assert gpus.get_supported_graphics_clocks(0, 1593) == GRAPHICS_AT_1593
    assert gpus.gpus[1].get_supported_graphics_clocks(2619) == GRAPHICS_AT_2619
    assert gpus.getSupportedGraphicsClocks(1, 1593) == GRAPHICS_AT_1593
    # None: at the current memory clock (the fake's first, 2619).
    assert gpus.get_supported_graphics_clocks(0) == GRAPHICS_AT_2619
    assert nvidia.NVIDIAGPU(1).get_supported_graphics_clocks(None) == GRAPHICS_AT_2619


@nvidia_only
def test_nvidia_unsupported_memory_clock_is_named():
    gpus = zeus.device.get_gpus()
    with pytest.raises(ZeusGPUNotFoundError,
                       match=r"GPU 1: memory clock 1000 MHz is not a supported memory clock "
                             r"\(supported: 2619, 1593 MHz\)"):
        gpus.get_supported_graphics_clocks(1, 1000)
    with pytest.raises(ZeusGPUInvalidArgError, match="memory_clock_mhz must be a non-negative"):
        gpus.get_supported_graphics_clocks(0, -1)


@nvidia_only
def test_nvidia_lists_follow_the_gpus_memory_clocks():
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        gpus = get_gpus()
        print("clocks", gpus.get_supported_memory_clocks(0), gpus.get_supported_graphics_clocks(0)[0])
        """, FAKE_NVML_MEMORY_CLOCKS_MHZ="1593,2619")  # The current one is now 1593.
    assert rc == 0, output
    assert lines == ["clocks [2619, 1593] 1500"], output
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        try:
            get_gpus().get_supported_memory_clocks(0)
        except ZeusGPUNotSupportedError as e:
            print("not supported:", e)
        """, FAKE_NVML_MEMORY_CLOCKS_MHZ="")
    assert rc == 0, output
    assert lines == ["not supported: GPU 0: nvmlDeviceGetSupportedMemoryClocks lists no clock"]


@amd_only
def test_amd_clock_lists_are_the_dpm_levels(monkeypatch):
    """Memory clocks: AMDSMI_CLK_TYPE_MEM's levels, highest first; graphics:
    AMDSMI_CLK_TYPE_SYS's, whatever the memory clock (the original ignores
    it on AMD)."""
    monkeypatch.setitem(sys.modules, "amdsmi", unusable_module("amdsmi"))
    gpus = zeus.device.get_gpus()
    assert isinstance(gpus, amd.AMDGPUs)
    assert gpus.get_supported_memory_clocks(0) == [1300, 900]
    assert gpus.getSupportedMemoryClocks(1) == [1300, 900]
    assert gpus.get_supported_graphics_clocks(0) == [2100, 1300, 500]
    assert gpus.get_supported_graphics_clocks(0, 900) == [2100, 1300, 500]
    assert gpus.get_supported_graphics_clocks(1, 12345) == [2100, 1300, 500]
    lines, output, rc = child("""
        from zeus.device.gpu.amd import AMDGPU
        print("memory", AMDGPU(1).get_supported_memory_clocks())
        """, FAKE_AMDSMI_MEMORY_CLOCKS_MHZ="1600,900,1600,1200")
    assert rc == 0, output
    assert lines == ["memory [1600, 1200, 900]"], output


@amd_only
def test_amd_locks_set_the_range_and_exit_widens_it_back(tmp_path):
    """set_gpu_locked_clocks / set_memory_locked_clocks are
    amdsmi_set_gpu_clk_range(SYS / MEM); one domain cannot be reset alone
    (the original's ZeusGPUNotSupportedError), so at exit each lock is lifted
    by locking the domain to its whole range of levels."""
    log = tmp_path / "amdsmi.log"
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        gpus = get_gpus()
        gpus.set_gpu_locked_clocks(0, 500, 1300)
        gpus.setMemoryLockedClocks(1, 900, 900)
        for reset in (gpus.reset_gpu_locked_clocks, gpus.reset_memory_locked_clocks):
            try:
                reset(0)
            except ZeusGPUNotSupportedError as e:
                print("not supported:", e)
        print("locked")
        """, FAKE_AMDSMI_LOG=log)
    assert rc == 0, output
    assert lines[-1] == "locked", output
    assert len(lines) == 3 and all("resetting only the" in line for line in lines[:2]), output
    assert fake_log(log) == [
        "init", "set_gpu_locked_clocks 0 500 1300", "set_mem_locked_clocks 1 900 900",
        # At exit: each lock lifted to the domain's whole range.
        "set_gpu_locked_clocks 0 500 2100", "set_mem_locked_clocks 1 900 1300", "shutdown"]


@amd_only
def test_amd_reset_locked_clocks_lifts_both_domains(tmp_path):
    """The original's reset of every domain: each domain locked to its whole
    range of levels; nothing is left for the exit to put back."""
    log = tmp_path / "amdsmi.log"
    lines, output, rc = child("""
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_gpu_locked_clocks(1, 1300, 1300)
        gpus.reset_locked_clocks(1)
        gpus.gpus[0].reset_locked_clocks()
        print("reset")
        """, FAKE_AMDSMI_LOG=log)
    assert rc == 0, output
    assert lines == ["reset"], output
    assert fake_log(log) == [
        "init", "set_gpu_locked_clocks 1 1300 1300",
        "set_gpu_locked_clocks 1 500 2100", "set_mem_locked_clocks 1 900 1300",
        "set_gpu_locked_clocks 0 500 2100", "set_mem_locked_clocks 0 900 1300", "shutdown"]


@amd_only
def test_amd_lock_errors_are_the_originals_classes():
    gpus = zeus.device.get_gpus()
    with pytest.raises(ZeusGPUInvalidArgError, match="AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS"):
        gpus.set_gpu_locked_clocks(0, 100, 2100)  # Below the lowest level.
    with pytest.raises(ZeusGPUInvalidArgError, match="min above max"):
        gpus.set_memory_locked_clocks(0, 1300, 900)
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu.common import ZeusGPUNoPermissionError
        try:
            get_gpus().set_gpu_locked_clocks(0, 500, 2100)
        except ZeusGPUNoPermissionError as e:
            print("no permission:", e)
        """, FAKE_AMDSMI_SET_CLK_RC=10)  # AMDSMI_STATUS_NO_PERM
    assert rc == 0, output
    assert len(lines) == 1 and lines[0].startswith("no permission:"), output
    assert "AMDSMI_STATUS_NO_PERM" in lines[0] and "ZEUS_DRY_RUN" in lines[0]


@amd_only
def test_amd_dry_run_logs_the_lock_and_leaves_the_gpu(tmp_path):
    log = tmp_path / "amdsmi.log"
    lines, output, rc = child("""
        import logging
        logging.basicConfig(level=logging.INFO)  # The core's dry-run notices are INFO records.
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_gpu_locked_clocks(0, 500, 1300)
        gpus.set_memory_locked_clocks(1, 900, 900)
        print("done")
        """, ZEUS_DRY_RUN="1", FAKE_AMDSMI_SET_CLK_RC=10, FAKE_AMDSMI_LOG=log)
    assert rc == 0, output
    assert lines == ["done"], output
    assert "ZEUS_DRY_RUN: would lock to 500-1300 MHz the graphics clocks of GPU 0" in output
    assert "ZEUS_DRY_RUN: would lock to 900-900 MHz the memory clocks of GPU 1" in output
    assert fake_log(log) == ["init", "shutdown"]


def test_clock_lists_of_a_gpu_without_them_say_so():
    """A backend without the lists (here a library without the functions)
    raises ZeusGPUNotSupportedError naming what is missing."""
    if AMD_RUN:
        module, cls, env = "amd", "AMDGPU", {
            "ZEUS_AMDSMI_LIBRARY": os.environ["ZEUS_AMDSMI_LIBRARY"].replace(
                "fake_amdsmi_full", "fake_amdsmi_minimal")}
        wanted = "lacks amdsmi_get_clk_freq"
    else:
        module, cls, env = "nvidia", "NVIDIAGPU", {
            "ZEUS_NVML_LIBRARY": os.environ["ZEUS_NVML_LIBRARY"].replace(
                "fake_nvml_full", "fake_nvml_v1")}
        wanted = "nvmlDeviceGetSupported"
    script = f"""
        from zeus.device.gpu.{module} import {cls}
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        for method in ("get_supported_memory_clocks", "get_supported_graphics_clocks"):
            try:
                getattr({cls}(0), method)()
            except ZeusGPUNotSupportedError as e:
                print("not supported:", e)
        """
    lines, output, rc = child(script, **env)
    assert rc == 0, output
    assert len(lines) == 2 and all(wanted in line for line in lines), output


@amd_only
def test_amd_frequency_optimizer_locks_and_unlocks_by_range(tmp_path):
    """GlobalFrequencyOptimizer on AMD GPUs: the graphics levels are the
    grid, each lock an amdsmi_set_gpu_clk_range, and closing lifts the lock
    to the whole range (AMD SMI cannot reset the graphics clocks alone)."""
    log = tmp_path / "amdsmi.log"
    lines, output, rc = child(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_frequency import train
        from zeus.monitor import ZeusMonitor
        from zeus.optimizer.frequency import GlobalFrequencyOptimizer
        from zeus.optimizer.power_limit import Time
        monitor = ZeusMonitor(gpu_indices=[0])
        fo = GlobalFrequencyOptimizer(monitor, Time(), wait_steps=2, warmup_steps=2,
                                      profile_steps=3, clock_step=300, min_clock=500,
                                      min_measure_time_s=0.0)
        print("clocks", fo.clocks)
        train(fo)
        print("done", fo.phase, fo.optimal_clock in fo.clocks)
        fo.close()
        monitor.close()
        """, FAKE_AMDSMI_LOG=log)
    assert rc == 0, output
    assert lines == ["clocks [2100, 1300, 500]", "done done True"], output
    locks = [line for line in fake_log(log) if "clocks" in line]
    assert [line.split()[-1] for line in locks[1:4]] == ["2100", "1300", "500"], locks
    assert locks[-1] == "set_gpu_locked_clocks 0 500 2100"


@amd_only
def test_amd_locks_and_reset_of_every_domain_through_the_daemon(tmp_path, monkeypatch):
    """With ZEUSD_SOCK_PATH the GPUs are ZeusdAMDGPU objects whose changes
    the core relays to `zeus daemon`: a lock is the daemon's
    amdsmi_set_gpu_clk_range, reset_locked_clocks lifts both domains there,
    and a reset of one domain stays unsupported."""
    from conftest import start_zeus_daemon
    log = tmp_path / "amdsmi.log"
    monkeypatch.setenv("FAKE_AMDSMI_LOG", str(log))  # The daemon's calls.
    proc, sock, env, daemon_log = start_zeus_daemon(
        tmp_path, tmp_path / "no-powercap", "--group", str(os.getgid()))
    try:
        lines, output, rc = child("""
            from zeus.device import get_gpus
            from zeus.device.gpu.common import ZeusGPUNotSupportedError
            gpus = get_gpus()
            print("class", type(gpus.gpus[1]).__name__)
            gpus.set_gpu_locked_clocks(1, 1300, 1300, block=False)
            gpus.reset_locked_clocks(1)
            try:
                gpus.reset_gpu_locked_clocks(1)
            except ZeusGPUNotSupportedError as e:
                print("not supported:", "resetting only the" in str(e))
            """, ZEUSD_SOCK_PATH=sock)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert rc == 0, output + daemon_log.read_text()
    assert lines == ["class ZeusdAMDGPU", "not supported: True"], output
    clocks = [line for line in fake_log(log) if "clocks" in line]
    assert clocks[:3] == ["set_gpu_locked_clocks 1 1300 1300", "set_gpu_locked_clocks 1 500 2100",
                          "set_mem_locked_clocks 1 900 1300"], clocks
