"""zeus.device.gpu.amd over the core's AMD SMI backend.

In the zeus_python_pytest_amd run (no NVML, the fake libamd_smi in
ZEUS_AMDSMI_LIBRARY) the AMD classes read and set the fake AMD GPUs; in the
NVIDIA run (the fake libnvml) amdsmi is unavailable and AMDGPUs refuse.
"""

import os

import pytest

from conftest import run_child as child

import zeus.device
from zeus.device.exception import ZeusdError
from zeus.device.gpu import amd, nvidia
from zeus.device.gpu.common import (GPUs, ZeusGPUInitError, ZeusGPUInvalidArgError,
                                    ZeusGPUNotFoundError, ZeusGPUNotSupportedError)

AMD_RUN = bool(os.environ.get("ZEUS_AMDSMI_LIBRARY")) and \
    not os.path.exists(os.environ.get("ZEUS_NVML_LIBRARY", ""))
amd_only = pytest.mark.skipif(not AMD_RUN, reason="needs the fake libamd_smi without NVML "
                              "(the zeus_python_pytest_amd run)")
nvidia_only = pytest.mark.skipif(AMD_RUN, reason="needs the fake libnvml")


@nvidia_only
def test_amdsmi_is_unavailable_on_the_fake_nvidia_gpus():
    assert amd.amdsmi_is_available() is False
    assert nvidia.nvml_is_available() is True
    assert isinstance(zeus.device.get_gpus(), nvidia.NVIDIAGPUs)
    with pytest.raises(ZeusGPUInitError,
                       match="cannot open the AMD GPUs: the core uses the NVIDIA GPUs"):
        amd.AMDGPUs()


@amd_only
def test_get_gpus_returns_amd_gpus():
    assert amd.amdsmi_is_available() is True
    assert nvidia.nvml_is_available() is False
    gpus = zeus.device.get_gpus()
    assert isinstance(gpus, amd.AMDGPUs) and isinstance(gpus, GPUs)
    assert not isinstance(gpus, nvidia.NVIDIAGPUs)
    assert zeus.device.get_gpus() is gpus
    assert len(gpus) == 2
    assert all(type(g) is amd.AMDGPU for g in gpus.gpus)
    assert [g.gpu_index for g in gpus.gpus] == [0, 1]
    with pytest.raises(ZeusGPUInitError,
                       match="cannot open the NVIDIA GPUs: the core uses the AMD GPUs"):
        nvidia.NVIDIAGPUs()


@amd_only
def test_getters_read_the_fake_amd_gpus():
    gpus = amd.AMDGPUs()
    try:
        assert gpus.get_name(0) == "Fake MI300X 0" and gpus.get_name(1) == "Fake MI300X 1"
        assert gpus.get_power_management_limit_constraints(0) == (100_000, 700_000)
        assert gpus.get_power_management_limit(1) == 700_000
        assert gpus.get_instant_power_usage(0) > 0
        assert gpus.supports_get_total_energy_consumption(0) is True
        first = gpus.get_total_energy_consumption(0)
        assert gpus.get_total_energy_consumption(0) > first
        assert 0 < gpus.get_gpu_temperature(0) < 150
        assert gpus.gpus[0].supports_nonblocking_setters is False
    finally:
        gpus.close()


@amd_only
def test_amd_differences_from_nvidia_are_not_supported_errors():
    gpu = amd.AMDGPU(1)
    assert gpu.get_name() == "Fake MI300X 1"
    with pytest.raises(ZeusGPUNotSupportedError, match="persistence mode is not supported"):
        gpu.get_persistence_mode()
    with pytest.raises(ZeusGPUNotSupportedError, match="persistence mode is not supported"):
        gpu.set_persistence_mode(True)
    with pytest.raises(ZeusGPUNotSupportedError, match="memory power"):
        gpu.get_average_memory_power_usage()
    with pytest.raises(ZeusGPUInvalidArgError, match="power_limit_mw"):
        gpu.set_power_management_limit(-1)
    # The original's class and words for an AMD GPU that is not there.
    with pytest.raises(ZeusGPUNotFoundError) as info:
        amd.AMDGPU(7)
    assert str(info.value) == "GPU with HIP index 7 not found. Found HIP indices: [0, 1]."
    # AMD SMI resets every clock domain at once: one alone is not supported.
    with pytest.raises(ZeusGPUNotSupportedError, match="resetting only the GPU locked clocks"):
        gpu.reset_gpu_locked_clocks()
    with pytest.raises(ZeusGPUNotSupportedError, match="resetting only the memory locked"):
        gpu.reset_memory_locked_clocks()


@amd_only
def test_handle_is_the_amdsmi_handle_of_the_gpus_uuid_or_says_amdsmi_is_missing(monkeypatch):
    """`.handle` is the `amdsmi` package's processor handle whose UUID is the
    GPU's (not its position in amdsmi's list), found after amdsmi_init() and
    cached; ZeusGPULibraryNotFoundError where amdsmi is not importable."""
    import sys
    import types
    from zeus.device.gpu.common import ZeusGPULibraryNotFoundError
    gpus = [amd.AMDGPU(0), amd.AMDGPU(1)]
    uuids = [g.get_gpu_uuid() for g in gpus]
    assert uuids[0] != uuids[1] and all(uuids)
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # Not importable.
    with pytest.raises(ZeusGPULibraryNotFoundError,
                       match="handle of the amdsmi Python package, which is not importable"):
        gpus[0].handle
    calls = []
    fake = types.ModuleType("amdsmi")
    fake.amdsmi_init = lambda: calls.append("init")
    # amdsmi lists them in another order than HIP's.
    by_handle = {"handle-b": uuids[1], "handle-a": uuids[0]}
    fake.amdsmi_get_processor_handles = lambda: list(by_handle)
    fake.amdsmi_get_gpu_device_uuid = lambda handle: by_handle[handle]
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    assert gpus[0].handle == "handle-a" and gpus[1].handle == "handle-b"
    assert gpus[0].handle is gpus[0].handle and calls == ["init", "init"]
    # A GPU amdsmi does not list.
    fake.amdsmi_get_processor_handles = lambda: ["handle-b"]
    with pytest.raises(ZeusGPUNotFoundError, match="amdsmi lists no GPU with UUID " + uuids[0]):
        amd.AMDGPU(0).handle

    # pynvml's clock lists are NVIDIA's: an AMD GPU does not ask them.
    monkeypatch.setitem(sys.modules, "pynvml", types.ModuleType("pynvml"))
    assert gpus[0].get_supported_memory_clocks() == [1300, 900]
    assert gpus[0].get_supported_graphics_clocks() == [2100, 1300, 500]


@amd_only
def test_average_power_and_graphics_clocks_come_from_amd_smi():
    """get_average_power_usage is AMD SMI's average_socket_power (not the
    instant power), ZeusGPUNotSupportedError on a GPU that reports only the
    current one; get_supported_graphics_clocks lists the graphics DPM levels,
    highest first, and says so where AMD SMI lists none."""
    lines, output, rc = child("""
        from zeus.device.gpu import amd
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        gpus = amd.AMDGPUs()
        print(gpus.get_instant_power_usage(0), gpus.get_average_power_usage(1))
        print("clocks", gpus.get_supported_graphics_clocks(0),
              gpus.gpus[1].getSupportedGraphicsClocks(1593))
        """, FAKE_AMDSMI_POWER_MW=300_000, FAKE_AMDSMI_AVERAGE_POWER_MW=280_000,
        FAKE_AMDSMI_GRAPHICS_CLOCKS_MHZ="800,1700,1700,1200")
    assert rc == 0, output
    assert lines == ["300000 280000", "clocks [1700, 1200, 800] [1700, 1200, 800]"]

    lines, output, rc = child("""
        from zeus.device.gpu import amd
        from zeus.device.gpu.common import ZeusGPUNotSupportedError
        gpu = amd.AMDGPU(0)
        print(gpu.get_instant_power_usage())
        for method in (gpu.get_average_power_usage, gpu.get_supported_graphics_clocks):
            try:
                method()
            except ZeusGPUNotSupportedError as e:
                print("not supported:", e)
        """, FAKE_AMDSMI_POWER_MW=300_000, FAKE_AMDSMI_POWER_FIELD="current_only",
        FAKE_AMDSMI_GRAPHICS_CLOCKS_MHZ="")
    assert rc == 0, output
    assert lines[0] == "300000"
    assert "no average socket power" in lines[1], output
    assert "lists no level" in lines[2], output


@amd_only
def test_setter_changes_the_limit_and_restore_puts_it_back():
    gpus = amd.AMDGPUs()
    try:
        gpus.set_power_management_limit(0, 300_000)
        assert gpus.get_power_management_limit(0) == 300_000
        gpus.restore()
        assert gpus.get_power_management_limit(0) == 700_000
    finally:
        gpus.close()


@amd_only
def test_dry_run_setter_only_logs(tmp_path):
    lines, output, rc = child("""
        import logging
        logging.basicConfig(level=logging.INFO)  # The core's dry-run notices are INFO records.
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_power_management_limit(0, 300_000)
        print("after", type(gpus).__name__, gpus.get_power_management_limit(0))
    """, ZEUS_DRY_RUN="1")
    assert rc == 0, output
    assert lines == ["after AMDGPUs 700000"], output
    assert "ZEUS_DRY_RUN: would set the power limit of GPU 0" in output


@amd_only
def test_hip_visible_devices_picks_the_gpus():
    lines, output, rc = child("""
        from zeus.device.gpu.amd import AMDGPUs
        gpus = AMDGPUs()
        print(len(gpus), gpus.get_name(0))
    """, HIP_VISIBLE_DEVICES="1")
    assert rc == 0, output
    assert lines == ["1 Fake MI300X 1"], output


@amd_only
def test_zeusd_amd_gpu_needs_the_socket():
    with pytest.raises(ZeusdError, match="ZeusdAMDGPU: pass a ZeusdClient, or set ZEUSD_SOCK_PATH"):
        amd.ZeusdAMDGPU(0, client=None)
