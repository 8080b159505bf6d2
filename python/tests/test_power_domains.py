"""Power domains, counter-based energy, temperature, the monitor CLI and
fork safety, over the fake libnvml (tests/device/fake_nvml): its instant
power follows FAKE_NVML_BURST (a square wave), its average field and
nvmlDeviceGetPowerUsage are the one-second mean, and with a burst pattern its
energy counter integrates the instant signal exactly (moving every
FAKE_NVML_ENERGY_UPDATE_MS, like NVML's every ~100 ms)."""

import ctypes
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from zeus import _lib
from zeus.exception import InvalidArgumentError
from zeus.monitor import (Measurement, MeasurementState, PowerDomain, PowerMonitor,
                          TemperatureMonitor, ZeusMonitor)
from zeus.monitor.power import PowerSample, infer_counter_update_period

HERE = os.path.dirname(os.path.abspath(__file__))
BURST_ENV = ("FAKE_NVML_BURST", "FAKE_NVML_POWER_MW", "FAKE_NVML_ENERGY_UPDATE_MS",
             "FAKE_NVML_MODULE_SCOPE_ONLY", "FAKE_NVML_TEMPERATURES_C", "FAKE_NVML_ARCHITECTURES")


@pytest.fixture
def bursts(monkeypatch):
    """50 ms bursts: 25 ms at 400 W, 25 ms at 100 W (mean 250 W); a counter
    that follows them and moves every `update_ms` (default continuous)."""
    def configure(period_ms=50, update_ms=0):
        monkeypatch.setenv("FAKE_NVML_POWER_MW", "100000")
        monkeypatch.setenv("FAKE_NVML_BURST", f"{period_ms},400000")
        monkeypatch.setenv("FAKE_NVML_ENERGY_UPDATE_MS", str(update_ms))
    for name in BURST_ENV:
        monkeypatch.delenv(name, raising=False)
    return configure


class DirectCounters:
    """The GPUs' energy counters read directly (the truth)."""

    def __init__(self):
        self._lib = _lib.lib()
        self._handle = ctypes.c_void_p()
        _lib.call(self._lib.zeus_gpus_open, ctypes.byref(self._handle))

    def read_j(self, position):
        value = ctypes.c_uint64(0)
        _lib.call(self._lib.zeus_gpus_energy_mj, self._handle, position, ctypes.byref(value))
        return value.value / 1000.0

    def close(self):
        self._lib.zeus_gpus_destroy(self._handle)


def test_every_domain_is_sampled_and_named(bursts):
    bursts()
    monitor = PowerMonitor(update_period=0.005)
    assert monitor.measurement_domains == [PowerDomain.DEVICE_INSTANT,
                                           PowerDomain.DEVICE_AVERAGE,
                                           PowerDomain.MEMORY_AVERAGE]
    time.sleep(1.6)
    timelines = monitor.get_all_power_timelines(start_time=time.time() - 0.5)
    assert set(timelines) == {"device_instant", "device_average", "memory_average"}
    instant = [w for _, w in timelines["device_instant"][0]]
    assert min(instant) == 100.0 and max(instant) == 400.0
    for _, w in timelines["device_average"][1]:
        assert w == pytest.approx(250.0, abs=20.0)
    for _, w in timelines["memory_average"][0]:
        assert w == pytest.approx(25.0, abs=2.0)
    assert monitor.get_power(power_domain="device_average")[0] == pytest.approx(250.0, abs=20)
    samples = monitor.samples[PowerDomain.DEVICE_INSTANT][1]
    assert isinstance(samples[0], PowerSample) and samples[0].gpu_index == 1
    assert samples[-1].power_mw in (100000.0, 400000.0)
    monitor.stop()


@pytest.mark.parametrize("update_ms", [0, 100])
def test_get_energy_matches_the_counter_under_bursts_whatever_the_domain(bursts, update_ms):
    bursts(update_ms=update_ms)
    counters = DirectCounters()
    # Only the average is sampled: its integral is not what get_energy uses.
    monitor = PowerMonitor(update_period=0.005, power_domains=["device_average"])
    time.sleep(0.3)
    for window_s in (2.0, 4.0):
        # Direct reads at both ends; a counter that moves every 100 ms is
        # up to one update (25 J here) behind at each read.
        start, start_j = time.time(), counters.read_j(0)
        time.sleep(window_s)
        end, end_j = time.time(), counters.read_j(0)
        time.sleep(0.05)
        measured = monitor.get_energy(start, end)[0]
        truth = end_j - start_j
        slack = 0.01 * truth if update_ms == 0 else 55.0
        assert measured == pytest.approx(truth, abs=slack), (window_s, measured, truth)
        assert measured == pytest.approx(250.0 * (end - start), rel=0.03)
    counters.close()
    monitor.stop()


def test_domain_integrals_and_errors(bursts):
    bursts()
    monitor = PowerMonitor(update_period=0.005, power_domains=["device_instant",
                                                                PowerDomain.MEMORY_AVERAGE])
    time.sleep(2.2)  # The average covers one second: past the start's ramp.
    end = time.time()
    start = end - 1.0
    instant = monitor.get_energy(start, end, power_domain="device_instant")
    memory = monitor.get_energy(start, end, power_domain=PowerDomain.MEMORY_AVERAGE)
    # The trapezoid of a 50 ms square wave sampled every 5 ms, or less
    # regularly on a loaded machine (a late sample skews a few edges).
    assert instant[0] == pytest.approx(250.0, rel=0.2)
    assert memory[1] == pytest.approx(25.0, rel=0.1)
    with pytest.raises(ValueError, match="device_average is not being monitored"):
        monitor.get_power_timeline("device_average")
    with pytest.raises(ValueError):
        monitor.get_power(power_domain="gpu_instant")
    # Before the monitor started: clamped to its start (what a loaded machine
    # sampled from then on, whenever its first sample came).
    early = monitor.get_energy(start - 100.0, end)
    assert early == monitor.get_energy(monitor._created_at, end)
    assert early[0] > 0
    monitor.stop()
    with pytest.raises(ValueError, match="non-empty"):
        PowerMonitor(power_domains=[])


def test_get_energy_of_a_window_without_samples_is_none(bursts):
    bursts()
    monitor = PowerMonitor(update_period=0.005, power_domains=["device_instant"])
    while not monitor.get_power_timeline("device_instant")[0]:
        time.sleep(0.01)
    now = time.time()
    # An hour that has not happened, and one before the monitor existed.
    assert monitor.get_energy(now + 3600, now + 7200) is None
    assert monitor.get_energy(monitor._created_at - 7200, monitor._created_at - 3600) is None
    assert monitor.get_energy(now + 3600, now + 7200, power_domain="device_instant") is None
    # The widest window is what was covered so far, never an extrapolation.
    huge = monitor.get_energy(-1e300, 1e300)
    after = time.time()
    for index in monitor.gpu_indices:
        assert 0.0 < huge[index] <= 400.0 * (after - monitor._created_at)
    assert monitor.get_energy(now, now - 1.0) == {index: 0.0 for index in monitor.gpu_indices}
    for bad in (float("nan"), "1", None, True):
        with pytest.raises(InvalidArgumentError, match="start_time must be a Unix time"):
            monitor.get_energy(bad, now)
    monitor.stop()


@pytest.mark.parametrize("period", [float("nan"), float("inf"), 0, -1.0, "0.1", True])
def test_update_periods_that_are_not_finite_positive_numbers_are_refused(period):
    with pytest.raises(InvalidArgumentError,
                       match="update_period must be a finite number of s > 0, got"):
        PowerMonitor(update_period=period)


def test_memory_domain_missing_before_hopper_is_a_value_error(monkeypatch, bursts):
    bursts()
    monkeypatch.setenv("FAKE_NVML_ARCHITECTURES", "8,8")
    monitor = PowerMonitor(update_period=0.05)
    assert PowerDomain.MEMORY_AVERAGE not in monitor.measurement_domains
    monitor.stop()
    with pytest.raises(ValueError, match="memory_average"):
        PowerMonitor(update_period=0.05, power_domains=["memory_average"])


def test_grace_hopper_module_scope_answers(monkeypatch, bursts):
    bursts()
    monkeypatch.setenv("FAKE_NVML_MODULE_SCOPE_ONLY", "1")
    monitor = PowerMonitor(update_period=0.01, power_domains=["device_instant"])
    time.sleep(0.2)
    assert monitor.get_power()[0] in (100.0, 400.0)
    monitor.stop()


def test_update_period_is_inferred_from_how_often_power_changes(bursts):
    bursts(period_ms=50)
    # Instant power changes every 25 ms: half of the shortest interval seen
    # between changes, about 12.5 ms (longer when a loaded machine reads
    # slower than the changes come), below the 50 ms of a steady reading.
    assert 0 < infer_counter_update_period([0]) < 0.05
    monitor = PowerMonitor(gpu_indices=[1])
    assert 0 < monitor.update_period < 0.05
    monitor.stop()


def test_update_period_of_a_steady_reading_is_capped(monkeypatch):
    for name in BURST_ENV:
        monkeypatch.delenv(name, raising=False)
    assert infer_counter_update_period([0, 1]) == pytest.approx(0.05)


def test_temperature_monitor(monkeypatch):
    monkeypatch.setenv("FAKE_NVML_TEMPERATURES_C", "51,67")
    monitor = TemperatureMonitor(update_period=0.05, max_samples_per_gpu=10)
    time.sleep(0.3)
    assert monitor.get_temperature() == {0: 51, 1: 67}
    timeline = monitor.get_temperature_timeline(gpu_index=1)
    assert set(timeline) == {1}
    # A steady reading keeps the first and last points only.
    assert len(timeline[1]) == 2 and all(t == 67 for _, t in timeline[1])
    assert monitor.get_temperature(time.time() - 100)[0] == 51
    monitor.stop()
    with pytest.raises(ValueError, match="update_period"):
        TemperatureMonitor(update_period=0)


def _run_cli(args, env=None, ready=None):
    """Runs `python -m zeus.monitor args`; once a line of its output
    contains `ready`, interrupts it (Ctrl-C). With ready None, lets it exit
    by itself. Returns (exit code, output)."""
    proc = subprocess.Popen([sys.executable, "-m", "zeus.monitor"] + args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    if ready is not None:
        for line in proc.stdout:  # Ends when the CLI exits.
            lines.append(line)
            if ready in line:
                proc.send_signal(signal.SIGINT)
                break
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, "".join(lines) + out


def test_cli_power_prints_the_domain_and_energy_on_ctrl_c(bursts):
    bursts()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    code, out = _run_cli(["power", "--gpu-indices", "1", "--update-period", "0.1",
                          "--power-domain", "device_average"], env=env,
                         ready="device_average {'GPU1':")
    assert code == 0, out
    assert "device_average {'GPU1':" in out
    assert "Total time (s):" in out
    # The chosen domain's energy, once (as the original prints it).
    assert out.count("Total energy (J): {'GPU1':") == 1, out
    assert "Integral of" not in out
    code, out = _run_cli(["power", "--power-domain", "gpu"], env=env)
    assert code == 2 and "invalid choice" in out


def test_cli_energy_prints_the_measurement(bursts):
    bursts()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    code, out = _run_cli(["energy", "--gpu-indices", "0"], env=env,
                         ready="Measuring; press Ctrl-C to stop.")
    assert code == 0, out
    assert "Measurement(time=" in out and "gpu_energy={0:" in out


def test_window_keys_must_be_strings():
    monitor = ZeusMonitor(gpu_indices=[0])
    with pytest.raises(TypeError, match="begin_window: the window key must be a str, got None"):
        monitor.begin_window(None)
    with pytest.raises(TypeError, match="end_window"):
        monitor.end_window(3)
    monitor.begin_window("a")
    assert isinstance(monitor.measurement_states["a"], MeasurementState)
    monitor.begin_window("a", restart=True)  # Drops the open one.
    m = monitor.end_window("a")
    assert isinstance(m, Measurement) and m.soc_energy is None
    monitor.begin_window("b")
    monitor.reset_windows()
    assert not monitor.is_window_open("b") and monitor.measurement_states == {}
    assert monitor.approx_instant_energy is False and monitor.soc_is_present is False
    monitor.close()
    assert ZeusMonitor(gpu_indices=[0], sync_execution_with="cupy").sync_with == "cupy"
    with pytest.raises(ValueError, match="cupy"):
        ZeusMonitor(sync_execution_with="tensorflow")


# ---- Fork safety (issue 23 item 2) -------------------------------------------

CHILD_TIMEOUT_S = 30


def _end_inherited_window(queue):
    """In a forked child: ends the window the parent opened."""
    try:
        m = _INHERITED["monitor"].end_window("parent window")
        queue.put(("ok", sorted(m.gpu_energy)))
    except BaseException as e:  # Reported to the parent.
        queue.put(("error", repr(e)))


def _measure_in_spawned_child(queue):
    """In a spawned child: a monitor of its own."""
    try:
        monitor = ZeusMonitor(gpu_indices=[0, 1])
        monitor.begin_window("child")
        m = monitor.end_window("child")
        queue.put(("ok", sorted(m.gpu_energy)))
    except BaseException as e:
        queue.put(("error", repr(e)))


_INHERITED = {}


def _wait_or_kill(pid):
    deadline = time.time() + CHILD_TIMEOUT_S
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung for {CHILD_TIMEOUT_S} s in end_window")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_os_fork_child_ends_a_window_opened_before_the_fork():
    monitor = ZeusMonitor(gpu_indices=[0, 1])
    monitor.begin_window("parent window")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            m = monitor.end_window("parent window")
            monitor.begin_window("child window")
            monitor.end_window("child window")
            os.write(write_fd, f"{sorted(m.gpu_energy)}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    status = _wait_or_kill(pid)
    with os.fdopen(read_fd) as f:
        reported = f.read()
    assert os.waitstatus_to_exitcode(status) == 0
    assert reported == "[0, 1]"
    # The parent's window is still open and measures.
    assert monitor.end_window("parent window").gpu_energy[1] > 0
    monitor.close()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_multiprocessing_fork_child_ends_a_window_opened_before_the_fork():
    monitor = ZeusMonitor(gpu_indices=[0, 1])
    monitor.begin_window("parent window")
    _INHERITED["monitor"] = monitor
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_end_inherited_window, args=(queue,))
    child.start()
    child.join(CHILD_TIMEOUT_S)
    hung = child.is_alive()
    if hung:
        child.kill()
        child.join()
    _INHERITED.clear()
    assert not hung, f"the forked child hung for {CHILD_TIMEOUT_S} s in end_window"
    assert queue.get(timeout=5) == ("ok", [0, 1])
    assert child.exitcode == 0
    assert monitor.end_window("parent window").gpu_energy[0] > 0
    monitor.close()


def test_multiprocessing_spawn_child_measures_beside_an_open_window():
    monitor = ZeusMonitor(gpu_indices=[0, 1])
    monitor.begin_window("parent window")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_measure_in_spawned_child, args=(queue,))
    child.start()
    child.join(CHILD_TIMEOUT_S * 2)
    hung = child.is_alive()
    if hung:
        child.kill()
        child.join()
    assert not hung, "the spawned child hung"
    assert queue.get(timeout=5) == ("ok", [0, 1])
    assert monitor.end_window("parent window").gpu_energy[0] > 0
    monitor.close()
