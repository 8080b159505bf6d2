"""zeus.utils (env, lr_scaler, metric, logging, multiprocessing, async_utils,
lat_lon, framework, testing), zeus.callback, zeus.exception and
`python -m zeus.show_env`."""

import asyncio
import http.server
import io
import logging
import os
import sys
import textwrap
import warnings

import pytest

from conftest import run_python, serve_in_background
from zeus.callback import Callback, CallbackSet
from zeus.exception import NotFoundError, ZeusBaseError
from zeus.utils import framework
from zeus.utils.env import MissingEnvironmentVariableError, get_env
from zeus.utils.lr_scaler import LinearScaler, SquareRootScaler
from zeus.utils.metric import avg_power, energy, zeus_cost


# --- env -------------------------------------------------------------------

def test_get_env_converts_and_defaults(monkeypatch):
    monkeypatch.setenv("ZEUS_T_INT", "42")
    monkeypatch.setenv("ZEUS_T_FLOAT", "0.25")
    monkeypatch.setenv("ZEUS_T_STR", "hello")
    monkeypatch.delenv("ZEUS_T_MISSING", raising=False)
    assert get_env("ZEUS_T_INT", int) == 42
    assert get_env("ZEUS_T_FLOAT", float) == 0.25
    assert get_env("ZEUS_T_STR", str) == "hello"
    assert get_env("ZEUS_T_MISSING", int, default=7) == 7
    assert get_env("ZEUS_T_INT", int, default=7) == 42  # Set wins over the default.


@pytest.mark.parametrize("text,value", [("true", True), ("True", True), ("TRUE", True),
                                        ("1", True), ("yes", True), ("on", True),
                                        ("false", False), ("False", False), ("0", False),
                                        ("no", False), ("off", False), (" true ", True)])
def test_get_env_parses_booleans(monkeypatch, text, value):
    monkeypatch.setenv("ZEUS_T_BOOL", text)
    assert get_env("ZEUS_T_BOOL", bool) is value


@pytest.mark.parametrize("valtype,text", [(bool, "maybe"), (bool, ""), (int, "4O"),
                                          (int, "1.5"), (float, "fast")])
def test_get_env_names_the_variable_of_a_malformed_value(monkeypatch, valtype, text):
    monkeypatch.setenv("ZEUS_T_BAD", text)
    with pytest.raises(ValueError) as info:
        get_env("ZEUS_T_BAD", valtype, default=valtype())
    assert "ZEUS_T_BAD" in str(info.value) and repr(text) in str(info.value)


def test_get_env_missing_without_default_is_a_value_and_key_error(monkeypatch):
    monkeypatch.delenv("ZEUS_T_MISSING", raising=False)
    with pytest.raises(MissingEnvironmentVariableError) as info:
        get_env("ZEUS_T_MISSING", int)
    assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
    assert str(info.value) == "missing environment variable ZEUS_T_MISSING (no default given)"


# --- lr_scaler, zeus_cost ----------------------------------------------------

def test_lr_scalers():
    assert SquareRootScaler(bs=32, lr=0.1).compute_lr(128) == pytest.approx(0.2)
    assert LinearScaler(bs=32, lr=0.1).compute_lr(128) == pytest.approx(0.4)
    assert LinearScaler(32, 0.1) == LinearScaler(bs=32, lr=0.1)  # Dataclasses.
    with pytest.raises(ValueError, match="new_bs must be positive, got 0"):
        LinearScaler(32, 0.1).compute_lr(0)
    with pytest.raises(ValueError, match="bs must be positive, got -1"):
        SquareRootScaler(-1, 0.1).compute_lr(8)


def test_zeus_cost():
    assert zeus_cost(energy=1000.0, time=10.0, eta_knob=0.5, max_power=300) == 2000.0
    assert zeus_cost(1000.0, 10.0, 1.0, 300) == 1000.0
    assert zeus_cost(1000.0, 10.0, 0.0, 300) == 3000.0


# --- metric: energy from a power log -----------------------------------------

def write_power_log(path, samples, extra_last="2024-05-01 12:00:09.000000,999999"):
    lines = ["Time,Power"] + [f"{t},{p}" for t, p in samples]
    if extra_last is not None:
        lines.append(extra_last)  # The original drops the last line.
    path.write_text("\n".join(lines) + "\n")


def test_energy_and_avg_power_of_a_power_log(tmp_path):
    log = tmp_path / "power.csv"
    # 100 W for 2 s, then a ramp to 300 W over 2 s (mW in the file).
    write_power_log(log, [("2024-05-01 12:00:00.000000", 100000),
                          ("2024-05-01 12:00:02.000000", 100000),
                          ("2024-05-01T12:00:04.000000", 300000)])
    assert energy(log) == pytest.approx(200.0 + 400.0)
    assert avg_power(log) == pytest.approx(600.0 / 4.0)
    # Windows relative to the first sample; negative ones count from the last.
    assert energy(log, start=2.0) == pytest.approx(400.0)
    assert energy(log, end=2.0) == pytest.approx(200.0)
    assert energy(log, start=-2.0) == pytest.approx(400.0)
    assert avg_power(log, start=2.0, end=4.0) == pytest.approx(200.0)


def test_energy_accepts_unix_seconds_and_ignores_other_columns(tmp_path):
    log = tmp_path / "power.csv"
    log.write_text("Time,GPU,Power\n1000.0,0,50000\n1001.5,0,50000\n1002,0,1\n")
    assert energy(log) == pytest.approx(75.0)


@pytest.mark.parametrize("content,message", [
    ("", "empty power log"),
    ("Time,Watts\n0,1\n1,1\n2,1\n", "lacks a Time or Power column"),
    ("Time,Power\n0,1\n1,lots\n2,1\n", "Power 'lots' is not a number"),
    ("Time,Power\nyesterday,1\n1,1\n2,1\n", "Time 'yesterday' is neither"),
    ("Time,Power\n0,1\n1,1\n", "at least 2 power samples"),
])
def test_energy_rejects_a_malformed_log(tmp_path, content, message):
    log = tmp_path / "power.csv"
    log.write_text(content)
    with pytest.raises(ValueError, match=message):
        energy(log)


# --- logging -------------------------------------------------------------------

def test_file_and_console_tees(tmp_path, monkeypatch):
    from zeus.utils.logging import FileAndConsole
    console = io.StringIO()
    monkeypatch.setattr(sys, "stdout", console)
    tee = FileAndConsole(tmp_path / "out.log")
    assert tee.stdout is console
    print("hello", file=tee)
    tee.flush()
    assert console.getvalue() == "hello\n"
    assert (tmp_path / "out.log").read_text() == "hello\n"  # Flushed on write.


def test_get_logger_reads_zeus_log_level(monkeypatch):
    from zeus.utils.logging import get_logger
    monkeypatch.setenv("ZEUS_LOG_LEVEL", "warning")
    logger = get_logger("zeus.test_utils.level")
    assert logger.level == logging.WARNING and not logger.propagate
    assert get_logger("zeus.test_utils.level") is logger
    assert len(logger.handlers) == 1
    monkeypatch.setenv("ZEUS_LOG_LEVEL", "10")
    assert get_logger("zeus.test_utils.numeric_level").level == logging.DEBUG
    monkeypatch.setenv("ZEUS_LOG_LEVEL", "LOUD")
    with pytest.raises(ValueError, match="ZEUS_LOG_LEVEL='LOUD'"):
        get_logger("zeus.test_utils.bad_level")


# --- multiprocessing -----------------------------------------------------------

def test_warn_if_global_in_subprocess_only_warns_in_spawned_children(tmp_path):
    from zeus.utils.multiprocessing import warn_if_global_in_subprocess
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_global_in_subprocess(object())  # The main process: silent.
    script = tmp_path / "spawner.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import warnings
        warnings.simplefilter("always")
        from zeus.utils.multiprocessing import warn_if_global_in_subprocess

        class GlobalMonitor:
            def __init__(self):
                warn_if_global_in_subprocess(self)

        class LocalMonitor(GlobalMonitor):
            pass

        GlobalMonitor()  # Module level: re-run in the child.

        def child():
            LocalMonitor()  # Inside a function: fine.

        if __name__ == "__main__":
            p = mp.get_context("spawn").Process(target=child)
            p.start()
            p.join()
            print("exit", p.exitcode)
    """))
    env = dict(os.environ)
    result = run_python([str(script)], env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "exit 0" in result.stdout
    # The original's category and words.
    assert result.stderr.count("UserWarning: GlobalMonitor was instantiated during module import "
                               "in a spawned subprocess. This usually means the monitor was "
                               "created as a global variable") == 1, result.stderr
    assert "LocalMonitor" not in result.stderr


# --- async_utils ---------------------------------------------------------------

def test_create_task_logs_the_exception_of_a_dead_task(caplog):
    from zeus.utils.async_utils import create_task

    async def fails():
        raise RuntimeError("boom")

    async def works():
        return 5

    async def main():
        bad = create_task(fails())
        good = create_task(works())
        await asyncio.sleep(0.01)
        return bad, await good

    logger = logging.getLogger("zeus.test_utils.async")
    caplog.set_level(logging.ERROR)
    bad, result = asyncio.run(main())
    assert result == 5
    assert isinstance(bad.exception(), RuntimeError)
    assert any("died with an exception" in r.message and r.exc_info for r in caplog.records)
    with pytest.raises(RuntimeError):  # No running loop.
        coroutine = works()
        try:
            create_task(coroutine, logger)
        finally:
            coroutine.close()


# --- lat_lon -------------------------------------------------------------------

class _IpInfo(http.server.BaseHTTPRequestHandler):
    body = b'{"ip": "192.0.2.1", "loc": "42.2808,-83.7430"}'

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def test_get_ip_lat_long_from_a_local_ipinfo(monkeypatch):
    from zeus.utils.lat_lon import ZeusLatLonError, get_ip_lat_long
    server = http.server.HTTPServer(("127.0.0.1", 0), _IpInfo)
    stop = serve_in_background(server)
    try:
        monkeypatch.setenv("ZEUS_IPINFO_URL", f"http://127.0.0.1:{server.server_port}/json")
        assert get_ip_lat_long() == (42.2808, -83.7430)
        monkeypatch.setattr(_IpInfo, "body", b'{"ip": "192.0.2.1"}')
        with pytest.raises(ZeusLatLonError, match='without a valid "loc"'):
            get_ip_lat_long()
    finally:
        stop()


def test_get_ip_lat_long_offline_is_a_clear_connection_error(monkeypatch):
    from zeus.utils.lat_lon import ZeusLatLonError, get_ip_lat_long
    import socket
    with socket.socket() as s:  # A port nobody listens on.
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ZEUS_IPINFO_URL", f"http://127.0.0.1:{port}/json")
    with pytest.raises(ZeusLatLonError) as info:
        get_ip_lat_long()
    assert isinstance(info.value, ConnectionError) and isinstance(info.value, ZeusBaseError)
    assert f"127.0.0.1:{port}" in str(info.value) and "offline?" in str(info.value)


# --- framework -----------------------------------------------------------------

def test_framework_names_outside_distributed_training():
    assert framework.get_rank() == 0
    assert framework.get_world_size() == 1
    assert framework.is_distributed() is False
    assert framework.all_reduce([1.0, 2.0], "sum") == [1.0, 2.0]
    with pytest.raises(ValueError, match="'mean'"):
        framework.all_reduce([1.0], "mean")
    assert framework.cupy_is_available() is False  # Not installed here.
    with pytest.raises(RuntimeError, match="CuPy is not importable"):
        framework.sync_execution([0], sync_with="cupy")
    with pytest.raises(ValueError, match="'tensorflow'"):
        framework.sync_execution([0], sync_with="tensorflow")


def test_torch_is_available_requires_cuda_only_when_asked():
    import torch
    assert framework.torch_is_available(ensure_cuda=False) is True
    assert framework.MODULE_CACHE["torch"] is torch
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA support"):
            framework.torch_is_available()


# --- testing.ReplayZeusMonitor -------------------------------------------------

def test_replay_monitor_replays_a_real_monitors_log(tmp_path):
    from zeus.monitor import ZeusMonitor
    from zeus.utils.testing import ReplayZeusMonitor
    log = tmp_path / "windows.csv"
    real = ZeusMonitor(log_file=str(log))
    recorded = []
    for name in ("epoch", "step,1", "epoch"):
        real.begin_window(name)
        recorded.append(real.end_window(name))
    real.close()

    replay = ReplayZeusMonitor(log_file=log)
    assert isinstance(replay, ZeusMonitor)
    assert replay.gpu_indices == [0, 1] and replay.nvml_gpu_indices == [0, 1]
    for name, m in zip(("epoch", "step,1", "epoch"), recorded):
        replay.begin_window(name)
        got = replay.end_window(name)
        assert got.time == pytest.approx(m.time)
        assert got.gpu_energy == pytest.approx(m.gpu_energy)
    replay.begin_window("more")
    with pytest.raises(RuntimeError, match="no rows left"):
        replay.end_window("more")
    replay.close()


def test_replay_monitor_checks_names_and_order(tmp_path):
    from zeus.utils.testing import ReplayZeusMonitor
    log = tmp_path / "windows.csv"
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy,gpu2_energy\n"
                   "1.0,a,2.0,10.0,20.0\n1.5,b,3.0,1.0,2.0\n")
    replay = ReplayZeusMonitor(log_file=log, ignore_sync_execution=True)
    assert replay.gpu_indices == [0, 2]
    replay.begin_window("b")
    with pytest.raises(RuntimeError, match="^Measurement window 'b' is already ongoing.$"):
        replay.begin_window("b")
    replay.begin_window("b", restart=True)
    cancelled = replay.end_window("b", cancel=True)  # Consumes no row.
    assert cancelled.time == 0.0 and cancelled.gpu_energy == {0: 0.0, 2: 0.0}
    replay.begin_window("b")
    with pytest.raises(RuntimeError, match="the next logged window is 'a', not 'b'"):
        replay.end_window("b")
    with pytest.raises(RuntimeError, match="^Measurement window 'b' is not ongoing.$"):
        replay.end_window("b")
    replay.begin_window("c")
    replay.reset_windows()
    assert not replay.is_window_open("c")
    replay.begin_window("c")  # Not "already open".
    loose = ReplayZeusMonitor(log_file=log, match_window_name=False)
    loose.begin_window("x")
    assert loose.end_window("x").gpu_energy == {0: 10.0, 2: 20.0}
    with pytest.raises(ValueError, match="log_file is required"):
        ReplayZeusMonitor()
    (tmp_path / "other.csv").write_text("Time,Power\n")
    with pytest.raises(ValueError, match="not a ZeusMonitor log"):
        ReplayZeusMonitor(log_file=tmp_path / "other.csv")


def test_power_limit_optimizer_profiles_from_a_replayed_log(tmp_path):
    """The original documents ReplayZeusMonitor as a stand-in for ZeusMonitor:
    GlobalPowerLimitOptimizer profiles every limit from the log's windows and
    pins the cheapest."""
    from zeus.device import get_gpus
    from zeus.optimizer.power_limit import Done, Energy, GlobalPowerLimitOptimizer
    from zeus.utils.testing import ReplayZeusMonitor
    joules = {700: 90.0, 600: 80.0, 500: 70.0, 400: 50.0, 300: 60.0, 200: 75.0, 100: 95.0}
    log = tmp_path / "replay.csv"
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n" + "".join(
        f"{i}.0,__GlobalPowerLimitOptimizer_{w},2.0,{j},{j}\n"
        for i, (w, j) in enumerate(joules.items())))
    monitor = ReplayZeusMonitor(log_file=log, ignore_sync_execution=True)
    plo = GlobalPowerLimitOptimizer(monitor, Energy(), wait_steps=1, warmup_steps=1,
                                    profile_steps=2, pl_step=100)
    for _ in range(100):
        plo.on_step_begin()
        if isinstance(plo.state, Done):
            break
    assert isinstance(plo.state, Done), plo.state
    assert plo.state.optimal_power_limit == 400_000
    assert [m.power_limit for m in plo.measurements] == list(joules)
    assert [m.energy for m in plo.measurements] == [2 * j for j in joules.values()]
    gpus = get_gpus()
    assert [gpus.getPowerManagementLimit(i) for i in (0, 1)] == [400_000, 400_000]
    plo.close()
    monitor.close()

    # A log whose windows are not the optimizer's: the replay's error.
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
                   "0.0,epoch,1.0,1.0,1.0\n")
    monitor = ReplayZeusMonitor(log_file=log, ignore_sync_execution=True)
    plo = GlobalPowerLimitOptimizer(monitor, Energy(), wait_steps=1, warmup_steps=1,
                                    profile_steps=1, pl_step=100)
    with pytest.raises(RuntimeError, match="the next logged window is 'epoch'"):
        for _ in range(10):
            plo.on_step_begin()
    plo.close()


# --- callback, exception -------------------------------------------------------

def test_callback_set_calls_every_hook_in_order():
    calls = []

    class Recorder(Callback):
        def __init__(self, tag):
            self.tag = tag

        def on_step_begin(self):
            calls.append((self.tag, "step"))

        def on_evaluate(self, metric):
            calls.append((self.tag, metric))

        def on_instruction_begin(self, name):
            calls.append((self.tag, "begin " + name))

        def on_instruction_end(self, name):
            calls.append((self.tag, "end " + name))

    both = CallbackSet([Recorder("a"), Recorder("b")])
    both.on_step_begin()
    both.on_evaluate(0.5)
    both.on_instruction_begin("forward")
    both.on_instruction_end("forward")
    both.on_train_end()  # Not overridden: the base does nothing.
    assert calls == [("a", "step"), ("b", "step"), ("a", 0.5), ("b", 0.5),
                     ("a", "begin forward"), ("b", "begin forward"),
                     ("a", "end forward"), ("b", "end forward")]


def test_exceptions_keep_their_message():
    e = ZeusBaseError("went wrong")
    assert e.message == "went wrong" and str(e) == "went wrong"
    assert isinstance(NotFoundError("no GPU 9"), KeyError)
    assert str(NotFoundError("no GPU 9")) == "no GPU 9"


# --- show_env ------------------------------------------------------------------

def test_show_env_prints_every_section(tmp_path):
    env = dict(os.environ, COLUMNS="40",
               ZEUSD_SOCK_PATH=str(tmp_path / "nobody.sock"))
    env.pop("ZEUSD_HOST_PORT", None)
    result = run_python(["-m", "zeus.show_env"], env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for title in ("Package availability", "GPU availability", "CPU availability",
                  "SoC availability", "Daemon (zeusd)"):
        assert f"## {title}" in out
    assert "-" * 40 + "\n" in out
    assert f"Python: {sys.version.split()[0]}" in out
    import torch
    cuda = "with" if torch.cuda.is_available() else "without"
    assert f"PyTorch: {torch.__version__} ({cuda} CUDA support)" in out
    assert "CuPy: not available" in out
    try:
        import jax  # noqa: F401
    except ImportError:
        assert "JAX: not available" in out
    # As the original, GPUs refuse a ZEUSD_SOCK_PATH that names no socket; the
    # section says why instead of failing the whole report.
    assert "Error initializing GPUs: ZeusdError: ZEUSD_SOCK_PATH" in out
    assert f"zeusd at {tmp_path / 'nobody.sock'}: unusable: Cannot reach Zeusd" in out
    env.pop("ZEUSD_SOCK_PATH")
    result = run_python(["-m", "zeus.show_env"], env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "GPU 0: " in result.stdout and "GPU 1: " in result.stdout  # The fake's two GPUs.
