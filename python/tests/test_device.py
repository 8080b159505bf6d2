"""zeus.device: the original's GPU/CPU/SoC surface over the core, with the
fake libnvml of tests/device (2 GPUs "Fake H100 <i>", limits 100-700 W,
700 W set, instant power 150 W). Setters run in child processes: the
fake's state lives in the process, and what a process changed comes back
when it exits."""

import os
import re
import textwrap
import warnings

import pytest

from conftest import run_child as child
from conftest import run_python
from test_daemon import limits_w, zeus_daemon  # noqa: F401 - the fixture.

import zeus.device
from zeus.device import common as device_common
from zeus.device.cpu import common as cpu_common
from zeus.device.cpu import rapl
from zeus.device.exception import (ZeusBaseCPUError, ZeusBaseGPUError, ZeusBaseSoCError,
                                   ZeusdError)
from zeus.device.gpu import amd, nvidia
from zeus.device.gpu.common import (GPUs, EmptyGPUs, ZeusGPUHeterogeneousError,
                                    ZeusGPUInitError, ZeusGPUInvalidArgError,
                                    ZeusGPUNoPermissionError, ZeusGPUNotSupportedError)
from zeus.device.soc import ZeusSoCInitError, apple, jetson
from zeus.exception import ZeusBaseError

FAKE_UUID_0 = "GPU-fa4e0000-1111-2222-3333-000000000000"


def fake_log(path):
    return path.read_text().splitlines() if path.exists() else []


# ---- Getters ----------------------------------------------------------------


def test_get_gpus_returns_one_shared_nvidia_gpus():
    gpus = zeus.device.get_gpus()
    assert isinstance(gpus, nvidia.NVIDIAGPUs) and isinstance(gpus, GPUs)
    assert zeus.device.get_gpus() is gpus
    assert len(gpus) == 2 and len(gpus.gpus) == 2
    assert all(isinstance(g, nvidia.NVIDIAGPU) for g in gpus.gpus)
    assert [g.gpu_index for g in gpus.gpus] == [0, 1]


def test_every_getter_reads_the_fake():
    gpus = zeus.device.get_gpus()
    assert gpus.get_name(0) == "Fake H100 0" and gpus.get_name(1) == "Fake H100 1"
    assert gpus.get_power_management_limit_constraints(1) == (100_000, 700_000)
    assert gpus.get_power_management_limit(0) == 700_000
    assert gpus.get_default_power_management_limit(0) == 700_000
    assert gpus.get_instant_power_usage(1) == 150_000
    assert gpus.supports_get_total_energy_consumption(0) is True
    first = gpus.get_total_energy_consumption(0)
    assert gpus.get_total_energy_consumption(0) > first  # The fake steps per read.
    assert gpus.get_persistence_mode(0) is False
    assert gpus.get_gpu_uuid(0) == FAKE_UUID_0
    assert gpus.gpus[1].supports_nonblocking_setters is False
    # The helpers this package's own modules use.
    assert gpus.position(1) == 1 and gpus.info(0)["uuid"] == FAKE_UUID_0


def core_has_domain_reads():
    from zeus import _lib
    return _lib.lib().zeus_gpus_has_domain_reads() == 1


def test_temperature_and_power_domains():
    """Read through the device layer's temperature and power-domain reads;
    a core without them (a build before they landed) says so."""
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu import ZeusGPUNotSupportedError
        gpus = get_gpus()
        for read in (gpus.get_gpu_temperature, gpus.get_average_power_usage,
                     gpus.get_average_memory_power_usage, gpus.get_instant_power_usage):
            for i in (0, 1):
                try:
                    print(read.__name__, i, read(i))
                except ZeusGPUNotSupportedError as e:
                    print(read.__name__, i, "not supported:", e)
    """, FAKE_NVML_TEMPERATURES_C="51,62", FAKE_NVML_ARCHITECTURES="9,8")
    assert rc == 0, output
    if core_has_domain_reads():
        assert lines[:5] == ["get_gpu_temperature 0 51", "get_gpu_temperature 1 62",
                             "get_average_power_usage 0 150000",
                             "get_average_power_usage 1 150000",
                             "get_average_memory_power_usage 0 15000"]  # Average / 10.
        # Memory power: Hopper (architecture 9) and newer only.
        assert lines[5].startswith("get_average_memory_power_usage 1 not supported:"), lines
    else:
        no_temperature = "this build's device layer reads no temperature"
        no_average = "this build's device layer reads no average power"
        assert lines[:6] == [
            f"get_gpu_temperature 0 not supported: GPU 0: {no_temperature}",
            f"get_gpu_temperature 1 not supported: GPU 1: {no_temperature}",
            f"get_average_power_usage 0 not supported: GPU 0: {no_average}",
            f"get_average_power_usage 1 not supported: GPU 1: {no_average}",
            f"get_average_memory_power_usage 0 not supported: GPU 0: {no_average}",
            f"get_average_memory_power_usage 1 not supported: GPU 1: {no_average}"]
    assert lines[6:] == ["get_instant_power_usage 0 150000", "get_instant_power_usage 1 150000"]


def test_camel_case_aliases_answer_the_same():
    gpus = zeus.device.get_gpus()
    assert gpus.getName(1) == "Fake H100 1"
    assert gpus.getPowerManagementLimitConstraints(0) == (100_000, 700_000)
    assert gpus.getInstantPowerUsage(0) == 150_000
    assert gpus.supportsGetTotalEnergyConsumption(0)
    assert gpus.getTotalEnergyConsumption(0) > 0
    assert gpus.getPowerManagementLimit(0) == 700_000
    assert gpus.gpus[0].getName() == "Fake H100 0"


def test_an_alias_warns_once_and_calls_the_subclass_override():
    class Base(metaclass=device_common.DeprecatedAliasABCMeta):
        @device_common.deprecated_alias("getValue")
        def get_value(self):
            return 1

    class Child(Base):
        def get_value(self):
            return 2

    with pytest.warns(DeprecationWarning, match="'getValue' is deprecated; use 'get_value'"):
        assert Child().getValue() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Base().getValue() == 1  # Warned already: silent now.


def test_closed_gpus_are_opened_afresh():
    gpus = nvidia.NVIDIAGPUs()
    gpus.close()
    assert gpus.closed
    with pytest.raises(ZeusGPUInitError, match="closed"):
        gpus.get_power_management_limit(0)
    assert not zeus.device.get_gpus().closed


def test_unknown_gpu_index_is_a_clear_invalid_argument():
    gpus = zeus.device.get_gpus()
    for bad in (2, -1):
        with pytest.raises(ZeusGPUInvalidArgError, match=f"no GPU with index {bad}: this process "
                                                         "sees 2 GPU"):
            gpus.get_name(bad)
    with pytest.raises(IndexError):  # As indexing the original's list of GPUs.
        gpus.set_power_management_limit(7, 300_000)
    with pytest.raises(ZeusGPUInvalidArgError, match="must be an int, got '0'"):
        gpus.get_power_management_limit("0")


def test_out_of_range_power_limit_is_refused_and_nothing_changes():
    gpus = zeus.device.get_gpus()
    with pytest.raises(ZeusGPUInvalidArgError, match=r"800000 mW is outside the allowed range "
                                                     r"\[100000, 700000\] mW"):
        gpus.set_power_management_limit(0, 800_000)
    with pytest.raises(ValueError, match="power_limit_mw must be a non-negative int"):
        gpus.set_power_management_limit(0, 300.5)
    assert gpus.get_power_management_limit(0) == 700_000


def test_ensure_homogeneous():
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu import ZeusGPUHeterogeneousError
        try:
            get_gpus(ensure_homogeneous=True)
        except ZeusGPUHeterogeneousError as e:
            print("refused", e)
        print("plain", len(get_gpus()))
    """, FAKE_NVML_NAMES="Fake A100,Fake H100")
    assert rc == 0, output
    assert lines == ["refused Heterogeneous GPUs found: ['Fake A100', 'Fake H100']", "plain 2"]
    assert issubclass(ZeusGPUHeterogeneousError, ZeusBaseGPUError)
    with pytest.raises(ZeusGPUHeterogeneousError):  # The default fake: "Fake H100 <i>".
        zeus.device.get_gpus(ensure_homogeneous=True)


# ---- Setters ----------------------------------------------------------------

# Registered before the GPUs are opened, so it runs after zeus's exit hook.
AFTER_EXIT = """
import atexit
from zeus.device import get_gpus
def after_exit():
    g = get_gpus()
    print("after exit", [g.get_power_management_limit(i) for i in range(len(g))],
          g.get_persistence_mode(0), flush=True)
atexit.register(after_exit)
"""


def test_setters_change_the_fake_and_exit_restores(tmp_path):
    log = tmp_path / "nvml.log"
    lines, output, rc = child(AFTER_EXIT + textwrap.dedent("""
        gpus = get_gpus()
        gpus.set_power_management_limit(1, 300_000)
        gpus.set_persistence_mode(0, True)
        gpus.set_gpu_locked_clocks(0, 1000, 1400)
        gpus.set_memory_locked_clocks(1, 500, 600)
        print("set", [gpus.get_power_management_limit(i) for i in (0, 1)],
              gpus.get_persistence_mode(0))
        gpus.reset_power_management_limit(1)
        print("reset", gpus.get_power_management_limit(1))
        gpus.setPowerManagementLimit(0, 200_000)
        print("camel", gpus.get_power_management_limit(0))
    """), FAKE_NVML_LOG=log)
    assert rc == 0, output
    assert lines == ["set [700000, 300000] True", "reset 700000", "camel 200000",
                     "after exit [700000, 700000] False"]
    assert fake_log(log) == [
        "init", "set_power_limit 1 300000", "set_persistence_mode 0 1",
        "set_gpu_locked_clocks 0 1000 1400", "set_mem_locked_clocks 1 500 600",
        "set_power_limit 1 700000", "set_power_limit 0 200000",
        # At exit: every change put back.
        "set_power_limit 0 700000", "reset_gpu_locked_clocks 0", "set_persistence_mode 0 0",
        "reset_mem_locked_clocks 1", "shutdown"]


def test_dropped_gpu_objects_keep_their_changes_until_exit(tmp_path):
    lines, output, rc = child(AFTER_EXIT + textwrap.dedent("""
        import gc
        from zeus.device.gpu.nvidia import NVIDIAGPU
        NVIDIAGPU(1).set_power_management_limit(250_000)
        gc.collect()
        print("dropped", get_gpus().get_power_management_limit(1))
    """))
    assert rc == 0, output
    assert lines == ["dropped 250000", "after exit [700000, 700000] False"]


def test_a_forked_child_exiting_leaves_its_parents_changes(tmp_path):
    lines, output, rc = child("""
        import os, sys
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_power_management_limit(0, 350_000)
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # Runs the exit hooks and finalizers of the child.
        os.waitpid(pid, 0)
        print("after child", gpus.get_power_management_limit(0), flush=True)
    """, FAKE_NVML_STATE=tmp_path / "gpus")  # The fake GPUs, shared by both processes.
    assert rc == 0, output
    assert lines == ["after child 350000"]
    assert (tmp_path / "gpus").read_text().split()[0] == "700000"  # The parent restored.


def test_restore_on_exit_can_be_turned_off(tmp_path):
    log = tmp_path / "nvml.log"
    lines, output, rc = child(AFTER_EXIT + textwrap.dedent("""
        get_gpus().set_power_management_limit(1, 300_000)
    """), FAKE_NVML_LOG=log, ZEUS_DEVICE_RESTORE_ON_EXIT="0")
    assert rc == 0, output
    assert lines == ["after exit [700000, 300000] False"]
    assert "set_power_limit 1 700000" not in fake_log(log)


def test_sigint_restores_the_power_limit_before_keyboard_interrupt():
    lines, output, rc = child("""
        import os, signal
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_power_management_limit(0, 400_000)
        print("set", gpus.get_power_management_limit(0), flush=True)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10000000):
                pass
        except KeyboardInterrupt:
            print("interrupted", gpus.get_power_management_limit(0), flush=True)
    """)
    assert rc == 0, output
    assert lines == ["set 400000", "interrupted 700000"]


def test_setters_go_through_the_daemon_with_zeusd_sock_path(zeus_daemon):  # noqa: F811
    env, state_file, daemon_log = zeus_daemon
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu.nvidia import ZeusdNVIDIAGPU
        gpus = get_gpus()
        print(all(isinstance(g, ZeusdNVIDIAGPU) for g in gpus.gpus))
        gpus.set_power_management_limit(1, 300_000)
        print("set", open(%r).read().split()[6])
    """ % str(state_file), **{k: env[k] for k in ("ZEUSD_SOCK_PATH", "FAKE_NVML_STATE")})
    assert rc == 0, output
    assert lines == ["True", "set 300000"]
    assert re.search(r"power limit 300000 mW for pid \d+", daemon_log()), daemon_log()
    assert limits_w(state_file) == [700, 700], daemon_log()  # Put back at exit.


def test_dry_run_setters_only_log(tmp_path):
    log = tmp_path / "nvml.log"
    lines, output, rc = child("""
        import logging
        logging.basicConfig(level=logging.INFO)  # The core's dry-run notices are INFO records.
        from zeus.device import get_gpus
        gpus = get_gpus()
        gpus.set_power_management_limit(0, 300_000)
        gpus.set_persistence_mode(1, True)
        gpus.set_gpu_locked_clocks(0, 1000, 1400)
        gpus.reset_memory_locked_clocks(1)
        print("after", gpus.get_power_management_limit(0), gpus.get_persistence_mode(1))
    """, FAKE_NVML_LOG=log, ZEUS_DRY_RUN="1")
    assert rc == 0, output
    assert lines == ["after 700000 False"]
    assert "ZEUS_DRY_RUN: would set the power limit of GPU 0" in output
    assert "would enable persistence mode" in output
    assert "would lock to 1000-1400 MHz the graphics clocks" in output
    assert fake_log(log) == ["init", "shutdown"]  # No set call reached the library.


def test_setter_without_permission_is_refused_and_changes_nothing(tmp_path):
    log = tmp_path / "nvml.log"
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu import ZeusGPUNoPermissionError
        gpus = get_gpus()
        setters = [lambda: gpus.set_power_management_limit(0, 300_000),
                   lambda: gpus.set_persistence_mode(0, True),
                   lambda: gpus.set_gpu_locked_clocks(1, 1000, 1400)]
        for setter in setters:
            try:
                setter()
                print("changed?!")
            except ZeusGPUNoPermissionError as e:
                print("refused", isinstance(e, PermissionError), "CAP_SYS_ADMIN" in str(e))
        print("now", gpus.get_power_management_limit(0), gpus.get_persistence_mode(0))
    """, FAKE_NVML_LOG=log, FAKE_NVML_SET_RC="4")  # NVML_ERROR_NO_PERMISSION.
    assert rc == 0, output
    assert lines == ["refused True True"] * 3 + ["now 700000 False"]
    assert fake_log(log) == ["init", "shutdown"]


def test_power_limit_optimizer_without_permission_raises_the_originals_runtime_error():
    """The original raises RuntimeError("SYS_ADMIN capability is required to
    modify GPU power limits. ...") when it may not change the limits; ours
    is that RuntimeError and a PermissionError, with the core's detail."""
    lines, output, rc = child("""
        from zeus.monitor import ZeusMonitor
        from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer
        try:
            GlobalPowerLimitOptimizer(ZeusMonitor(gpu_indices=[0]))
            print("created?!")
        except RuntimeError as e:
            print(isinstance(e, PermissionError))
            print(str(e))
    """, FAKE_NVML_SET_RC="4")  # NVML_ERROR_NO_PERMISSION.
    assert rc == 0, output
    assert lines[0] == "True", output
    assert lines[1].startswith(
        "SYS_ADMIN capability is required to modify GPU power limits. See "
        "https://ml.energy/zeus/getting_started/#system-privileges for more information. ("), \
        output
    assert "NVML_ERROR_NO_PERMISSION" in lines[1], output

def test_nvml_errors_map_to_the_original_exception_classes():
    lines, output, rc = child("""
        from zeus.device import get_gpus
        from zeus.device.gpu import ZeusGPULostError, ZeusGPUNotSupportedError
        gpus = get_gpus()
        try:
            gpus.get_instant_power_usage(0)
        except ZeusGPULostError as e:
            print("lost", "NVML_ERROR_GPU_IS_LOST" in str(e))
    """, FAKE_NVML_LOST_AFTER_READS="2")  # Opening reads each energy counter once.
    assert rc == 0, output
    assert lines == ["lost True"]


# ---- Environment ------------------------------------------------------------


@pytest.mark.parametrize("env, error, message", [
    ({"ZEUS_DEVICE_RESTORE_ON_EXIT": "maybe"}, "ZeusGPUInvalidArgError",
     "ZEUS_DEVICE_RESTORE_ON_EXIT='maybe': expected one of 1, true"),
    ({"ZEUSD_SOCK_PATH": "/nonexistent/zeusd.sock"}, "ZeusdError",
     "ZEUSD_SOCK_PATH points to non-existent file: /nonexistent/zeusd.sock"),
    ({"ZEUS_NVML_LIBRARY": "/nonexistent/libnvml.so"}, "ZeusGPUInitError",
     "/nonexistent/libnvml.so"),
    ({"CUDA_VISIBLE_DEVICES": "0,x"}, "ZeusGPUInitError", "CUDA_VISIBLE_DEVICES"),
    ({"CUDA_VISIBLE_DEVICES": ""}, "ZeusGPUInitError",
     "CUDA_VISIBLE_DEVICES is set to an empty string"),
    ({"CUDA_VISIBLE_DEVICES": "MIG-abc"}, "ZeusGPUInitError", "MIG devices are not supported"),
])
def test_malformed_environment_is_a_clear_error(env, error, message):
    lines, output, rc = child("""
        from zeus.device import get_gpus
        try:
            get_gpus()
        except Exception as e:
            print(type(e).__name__, e)
    """, **env)
    assert rc == 0, output
    assert len(lines) == 1 and lines[0].startswith(error + " "), output
    assert message in lines[0]
    if error == "ZeusGPUInitError" and "empty" not in message:
        assert "cannot open the NVIDIA GPUs" in lines[0] and "amdsmi is unavailable" in lines[0]


def test_cuda_visible_devices_picks_and_orders_the_gpus():
    lines, output, rc = child("""
        from zeus.device import get_gpus
        gpus = get_gpus()
        print(len(gpus), gpus.get_name(0), gpus.get_gpu_uuid(0)[-1])
    """, CUDA_VISIBLE_DEVICES="1")
    assert rc == 0, output
    assert lines == ["1 Fake H100 1 1"]


def test_zeusd_socket_that_is_not_a_socket(tmp_path):
    not_socket = tmp_path / "plain-file"
    not_socket.write_text("")
    os.environ["ZEUSD_SOCK_PATH"] = str(not_socket)
    try:
        with pytest.raises(ZeusdError, match="ZEUSD_SOCK_PATH is not a socket"):
            nvidia.NVIDIAGPUs()
    finally:
        del os.environ["ZEUSD_SOCK_PATH"]


def test_empty_devices_raise_value_error():
    with pytest.raises(ValueError, match="No GPUs available"):
        EmptyGPUs().get_name(0)
    assert len(EmptyGPUs()) == 0
    with pytest.raises(ValueError, match="No CPUs available"):
        cpu_common.EmptyCPUs().get_total_energy_consumption(0)


# ---- SoC, AMD, exceptions ---------------------------------------------------


def test_get_soc_without_a_soc_raises_init_error():
    with pytest.raises(ZeusSoCInitError, match="No observable SoC was found"):
        zeus.device.get_soc()
    assert apple.apple_silicon_is_available() is False
    with pytest.raises(apple.ZeusAppleInitError):
        apple.AppleSilicon()
    if not jetson.jetson_is_available():
        with pytest.raises(jetson.ZeusJetsonInitError, match="not an NVIDIA Jetson"):
            jetson.Jetson()
    assert issubclass(jetson.ZeusJetsonInitError, ZeusSoCInitError)
    assert issubclass(ZeusSoCInitError, ZeusBaseSoCError)


def test_soc_measurement_helpers(tmp_path):
    (tmp_path / "power").write_text("1234\n")
    (tmp_path / "mv").write_text("5000\n")
    (tmp_path / "ma").write_text("300\n")
    assert jetson.DirectPower(tmp_path / "power").measure_power() == 1234.0
    assert jetson.VoltageCurrentProduct(tmp_path / "mv", tmp_path / "ma").measure_power() == 1500
    assert jetson.check_file(tmp_path / "power") and not jetson.check_file(tmp_path)
    m = jetson.JetsonMeasurement(cpu_energy_mj=5.0, total_energy_mj=9.0)
    m.zero_all_fields()
    assert (m.cpu_energy_mj, m.gpu_energy_mj, m.total_energy_mj) == (0.0, None, 0.0)
    a = apple.AppleSiliconMeasurement(cpu_total_mj=3, efficiency_cores_mj=[1, 2])
    with pytest.warns(DeprecationWarning):
        a.zeroAllFields()
    # The original empties lists.
    assert (a.cpu_total_mj, a.efficiency_cores_mj, a.gpu_mj) == (0, [], None)


def fake_ina3221(root):
    """Two INA3221 monitors as Jetsons expose them: one hwmon directory
    with `in<i>_label` rails (VDD_IN with a power file: 5000 mW; VDD_CPU_CV
    with voltage x current: 5000 mV x 200 mA = 1000 mW) and one iio
    directory with `rail_name_<i>` rails (GPU: 4000 mV x 500 mA = 2000 mW;
    SOC, which is not measured)."""
    hwmon = root / "1-0040" / "hwmon3"
    hwmon.mkdir(parents=True)
    for name, text in {"in1_label": "VDD_IN", "power1_input": "5000", "in2_label": "VDD_CPU_CV",
                       "in2_input": "5000", "curr2_input": "200"}.items():
        (hwmon / name).write_text(text + "\n")
    iio = root / "1-0041" / "iio:device1"
    iio.mkdir(parents=True)
    for name, text in {"rail_name_0": "GPU", "in_voltage0_input": "4000",
                       "in_current0_input": "500", "rail_name_1": "SOC",
                       "in_power1_input": "700"}.items():
        (iio / name).write_text(text + "\n")


def test_jetson_integrates_its_rails_into_windows(tmp_path, monkeypatch):
    """Jetson() finds the CPU, GPU and total rails of the INA3221 monitors
    and integrates their power: each rail's energy is its power x the same
    time, so their ratios are the powers' (1000 : 2000 : 5000 mW)."""
    import time
    fake_ina3221(tmp_path)
    monkeypatch.setattr(jetson, "jetson_is_available", lambda: True)
    monkeypatch.setattr(jetson, "_INA3221_ROOT", str(tmp_path))
    soc = jetson.Jetson()
    try:
        assert set(soc.power_measurement) == {"cpu_power_mw", "gpu_power_mw", "total_power_mw"}
        assert isinstance(soc.power_measurement["total_power_mw"], jetson.DirectPower)
        assert isinstance(soc.power_measurement["gpu_power_mw"], jetson.VoltageCurrentProduct)
        assert soc.get_available_metrics() == {"cpu_energy_mj", "gpu_energy_mj",
                                               "total_energy_mj"}
        soc.begin_window("w")
        with pytest.raises(ValueError, match="Measurement window 'w' already exists"):
            soc.begin_window("w")
        deadline = time.monotonic() + 60  # A bound for a broken thread, not a speed target.
        while soc.get_total_energy_consumption().total_energy_mj < 500 and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        window = soc.end_window("w")
        assert isinstance(window, jetson.JetsonMeasurement) and window.total_energy_mj > 0
        assert window.gpu_energy_mj == pytest.approx(window.cpu_energy_mj * 2, rel=1e-9)
        assert window.total_energy_mj == pytest.approx(window.cpu_energy_mj * 5, rel=1e-9)
        total = soc.get_total_energy_consumption()
        assert total.total_energy_mj >= window.total_energy_mj
        with pytest.raises(ValueError, match="Measurement window 'w' does not exist"):
            soc.end_window("w")
    finally:
        soc._stop()
    assert soc.process is None


def test_zeus_monitor_measures_a_present_soc(tmp_path, monkeypatch):
    """As the original: with a SoC (here a Jetson over fake rails), a
    window's Measurement carries the SoC's energy in the window."""
    import zeus.device.soc as soc_module
    from zeus.monitor import ZeusMonitor
    fake_ina3221(tmp_path)
    monkeypatch.setattr(jetson, "jetson_is_available", lambda: True)
    monkeypatch.setattr(jetson, "_INA3221_ROOT", str(tmp_path))
    soc = jetson.Jetson()
    monkeypatch.setattr(soc_module, "_soc", soc)
    try:
        monitor = ZeusMonitor(gpu_indices=[0], cpu_indices=[])
        assert monitor.soc_is_present and monitor.soc is soc
        monitor.begin_window("step")
        measurement = monitor.end_window("step")
        assert isinstance(measurement.soc_energy, jetson.JetsonMeasurement)
        assert measurement.soc_energy.total_energy_mj >= 0
        assert soc.measurement_states == {}
        monitor.begin_window("dropped")
        monitor.end_window("dropped", cancel=True)
        assert soc.measurement_states == {}
    finally:
        soc._stop()

def test_handle_is_the_pynvml_handle_or_says_pynvml_is_missing(monkeypatch):
    import sys
    import types
    gpu = nvidia.NVIDIAGPU(0)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # Not importable.
    with pytest.raises(ZeusBaseGPUError, match="pynvml \\(the nvidia-ml-py package\\) is not "
                                               "importable"):
        gpu.handle
    calls = []
    fake = types.ModuleType("pynvml")
    fake.nvmlInit = lambda: calls.append("init")
    fake.nvmlDeviceGetHandleByUUID = lambda uuid: ("handle", uuid)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert gpu.handle == ("handle", FAKE_UUID_0)
    assert gpu.handle is gpu.handle and calls == ["init"]


def test_apple_silicon_measurements_subtract_field_by_field():
    later = apple.AppleSiliconMeasurement(cpu_total_mj=30, efficiency_cores_mj=[5, 7], gpu_mj=4)
    earlier = apple.AppleSiliconMeasurement(cpu_total_mj=10, efficiency_cores_mj=[1, 2], gpu_mj=1)
    assert later - earlier == apple.AppleSiliconMeasurement(
        cpu_total_mj=20, efficiency_cores_mj=[4, 5], gpu_mj=3)
    with pytest.raises(TypeError, match="only supported between AppleSiliconMeasurement"):
        later - 3
    with pytest.raises(ValueError, match="Inconsistent field .*: gpu_mj"):
        later - apple.AppleSiliconMeasurement(cpu_total_mj=1, efficiency_cores_mj=[1, 1])
    with pytest.raises(ValueError, match="Inconsistent field .*: efficiency_cores_mj"):
        later - apple.AppleSiliconMeasurement(cpu_total_mj=1, efficiency_cores_mj=[1], gpu_mj=1)


def test_amd_is_unavailable_where_the_core_uses_nvml():
    assert amd.amdsmi_is_available() is False
    with pytest.raises(ZeusGPUInitError,
                       match="cannot open the AMD GPUs: the core uses the NVIDIA GPUs"):
        amd.AMDGPUs()
    with pytest.raises(ZeusGPUInitError, match="cannot open the AMD GPUs"):
        amd.AMDGPU(0)


def test_exception_hierarchy():
    assert issubclass(ZeusdError, ZeusBaseGPUError)
    for base in (ZeusBaseGPUError, ZeusBaseCPUError, ZeusBaseSoCError):
        assert issubclass(base, ZeusBaseError)
    assert issubclass(ZeusGPUNoPermissionError, PermissionError)
    assert issubclass(ZeusGPUInvalidArgError, ValueError)
    assert ZeusGPUNotSupportedError("why").message == "why"
    assert nvidia.nvml_is_available() is True


def test_single_gpus_can_be_made_directly():
    gpu = nvidia.NVIDIAGPU(1)
    assert gpu.get_name() == "Fake H100 1" and gpu.get_power_management_limit() == 700_000
    with pytest.raises(ZeusGPUInvalidArgError, match="no GPU with index 3"):
        nvidia.NVIDIAGPU(3)
    with pytest.raises(ZeusdError, match="set ZEUSD_SOCK_PATH"):
        nvidia.ZeusdNVIDIAGPU(0, None)


def test_signatures_match_the_original():
    import inspect
    expected = {
        nvidia.NVIDIAGPU.__init__: ["self", "gpu_index"],
        nvidia.ZeusdNVIDIAGPU.__init__: ["self", "gpu_index", "client"],
        nvidia.NVIDIAGPUs.__init__: ["self", "ensure_homogeneous"],
        rapl.RAPLCPU.__init__: ["self", "cpu_index", "rapl_dir"],
        rapl.ZeusdRAPLCPU.__init__: ["self", "cpu_index", "client"],
        GPUs.set_gpu_locked_clocks: ["self", "gpu_index", "min_clock_mhz", "max_clock_mhz",
                                     "block"],
        GPUs.get_supported_graphics_clocks: ["self", "gpu_index", "memory_clock_mhz"],
        zeus.device.get_gpus: ["ensure_homogeneous"],
    }
    for fn, names in expected.items():
        assert list(inspect.signature(fn).parameters) == names, fn


def test_c_abi_refuses_bad_options():
    import ctypes
    from zeus import _lib
    from zeus.exception import InvalidArgumentError
    handle = ctypes.c_void_p()
    with pytest.raises(InvalidArgumentError,
                       match="restore_on_exit must be a boolean, got \"yes\""):
        _lib.call(_lib.lib().zeus_gpus_open_with, b'{"restore_on_exit": "yes"}',
                  ctypes.byref(handle))
    with pytest.raises(InvalidArgumentError, match="unknown option 'restore'"):
        _lib.call(_lib.lib().zeus_gpus_open_with, b'{"restore": true}', ctypes.byref(handle))
    with pytest.raises(InvalidArgumentError, match="powercap_root must be a string, got 3"):
        _lib.call(_lib.lib().zeus_cpus_open, b'{"powercap_root": 3}', ctypes.byref(handle))


def test_setters_from_many_threads_then_restore_at_exit(tmp_path):
    lines, output, rc = child(AFTER_EXIT + textwrap.dedent("""
        import threading
        gpus = get_gpus()
        def work(k):
            for j in range(50):
                gpus.set_power_management_limit((k + j) % 2, 100_000 * (1 + (k + j) % 6))
        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("done")
    """))
    assert rc == 0, output
    assert lines == ["done", "after exit [700000, 700000] False"]


@pytest.mark.parametrize("cap_eff, expected", [
    ("000001ffffffffff", True), ("0000000000200000", True), ("00000000001fffff", False),
    (None, False)])
def test_has_sys_admin_reads_the_effective_capabilities(tmp_path, monkeypatch, cap_eff,
                                                        expected):
    status = tmp_path / "status"
    if cap_eff is not None:
        status.write_text(f"Name:\tpython3\nCapInh:\t0\nCapEff:\t{cap_eff}\nCapBnd:\t0\n")
    monkeypatch.setattr(device_common, "_PROC_STATUS", str(status))
    device_common.has_sys_admin.cache_clear()
    try:
        assert device_common.has_sys_admin() is expected
    finally:
        device_common.has_sys_admin.cache_clear()


def test_the_daemon_relay_worker_is_remade_in_a_forked_child():
    """A forked child (a data-loader worker) inherits no thread: its relayed
    changes get a worker of their own instead of waiting on the parent's."""
    result = run_python(["-c", textwrap.dedent("""
        import os
        from zeus.device.gpu import nvidia
        worker = nvidia._relay_queue_executor()
        assert worker.submit(os.getpid).result(timeout=60) == os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                # 60 s: a bound for a child left with the parent's dead worker.
                mine = nvidia._relay_queue_executor().submit(os.getpid).result(timeout=60)
                os._exit(0 if mine == os.getpid() else 1)
            except BaseException:
                os._exit(2)
        print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)], env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "child 0", result.stdout + result.stderr
