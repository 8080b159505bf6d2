"""The zeus package needs no privilege with `zeus daemon`: with ZEUSD_SOCK_PATH
set, the power-limit optimizer's limits go through the daemon, which puts
them back when the Python process is SIGKILLed (no exit hook runs). The fake
GPUs' state is shared between the processes through FAKE_NVML_STATE (or
FAKE_AMDSMI_STATE: the ctest zeus_python_pytest_amd runs this on the fake AMD
GPUs, whose limits and defaults are the same)."""

import os
import re
import signal
import textwrap
import time

import pytest

from conftest import run_python, start_zeus_daemon


@pytest.fixture
def zeus_daemon(tmp_path):
    """A `zeus daemon` on a socket in tmp_path; yields (env for clients, the
    fake GPUs' state file, a function returning the daemon's log so far)."""
    proc, sock, env, log_path = start_zeus_daemon(tmp_path, tmp_path / "no-powercap", "--group",
                                                  str(os.getgid()))
    try:
        yield dict(env, ZEUSD_SOCK_PATH=sock), tmp_path / "gpus", log_path.read_text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def limits_w(state_file):
    if not state_file.exists():
        return [700, 700]
    return [int(line.split()[0]) // 1000 for line in state_file.read_text().splitlines()]


def test_sigkilled_job_gets_its_limits_back_through_the_daemon(zeus_daemon):
    env, state_file, daemon_log = zeus_daemon
    script = textwrap.dedent("""
        import os, signal
        from zeus.device import get_gpus
        from zeus.monitor import ZeusMonitor
        from zeus.optimizer.power_limit import Energy, GlobalPowerLimitOptimizer

        gpus = get_gpus()
        plo = GlobalPowerLimitOptimizer(ZeusMonitor(), Energy(), wait_steps=1, warmup_steps=1,
                                        profile_steps=3, pl_step=100, min_measure_time_s=0.0)
        for _ in range(6):  # Wait, then 700 W (warm-up, measure), then 600 W is set.
            plo.on_step_begin()
        print("profiling", [gpus.getPowerManagementLimit(i) // 1000 for i in range(len(gpus))],
              flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = run_python(["-c", script], env=env)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert "profiling [600, 600]" in result.stdout
    pid_lines = re.findall(r"power limit 600000 mW for pid (\d+)", daemon_log())
    assert len(pid_lines) == 2, daemon_log()  # Both GPUs, set by the daemon.
    deadline = time.time() + 1.0
    while limits_w(state_file) != [700, 700] and time.time() < deadline:
        time.sleep(0.01)
    assert limits_w(state_file) == [700, 700], daemon_log()


@pytest.fixture
def tcp_daemon(tmp_path):
    """A `zeus daemon` that also accepts changes over TCP (--tcp-changes);
    yields (env for clients with ZEUSD_HOST_PORT, the fake GPUs' state file,
    the log reader, the process)."""
    from conftest import free_port
    port = free_port()
    proc, sock, env, log_path = start_zeus_daemon(
        tmp_path, tmp_path / "no-powercap", "--group", str(os.getgid()), "--tcp",
        f"127.0.0.1:{port}", "--tcp-changes")
    try:
        yield dict(env, ZEUSD_HOST_PORT=f"127.0.0.1:{port}"), tmp_path / "gpus", \
            log_path.read_text, proc, sock
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_get_gpus_relays_setters_to_zeusd_host_port(tcp_daemon):
    """The original's documented TCP setup: with ZEUSD_HOST_PORT set, get_gpus()
    returns Zeusd GPUs whose setters go to the daemon (no local privilege)."""
    env, state_file, daemon_log, proc, _ = tcp_daemon
    env.pop("ZEUSD_SOCK_PATH", None)
    script = textwrap.dedent("""
        from zeus.device import get_gpus
        from zeus.device.gpu.amd import ZeusdAMDGPU
        from zeus.device.gpu.nvidia import ZeusdNVIDIAGPU
        gpus = get_gpus()
        print(all(isinstance(g, (ZeusdNVIDIAGPU, ZeusdAMDGPU)) for g in gpus.gpus))
        gpus.set_power_management_limit(1, 300_000)
        print("set", gpus.get_power_management_limit(1))
    """)
    result = run_python(["-c", script], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in result.stdout.splitlines() if not line.startswith("[")] == [
        "True", "set 300000"]
    assert re.search(r"power limit 300000 mW for a TCP client", daemon_log()), daemon_log()
    # TCP clients' changes stay until the daemon stops (it knows no process).
    assert limits_w(state_file) == [700, 300]
    proc.terminate()
    assert proc.wait(timeout=10) == 0
    assert limits_w(state_file) == [700, 700], daemon_log()


def test_zeusd_gpu_honours_the_client_it_is_given(tcp_daemon, monkeypatch):
    """ZeusdNVIDIAGPU(index, client) sends its setters through `client`,
    without ZEUSD_SOCK_PATH."""
    from zeus.device.gpu import amd, nvidia
    from zeus.utils.zeusd import ZeusdClient, ZeusdConfig
    env, state_file, daemon_log, _, sock = tcp_daemon
    monkeypatch.delenv("ZEUSD_SOCK_PATH", raising=False)
    monkeypatch.delenv("ZEUSD_HOST_PORT", raising=False)
    amd_run = not os.path.exists(os.environ.get("ZEUS_NVML_LIBRARY", ""))
    cls = amd.ZeusdAMDGPU if amd_run else nvidia.ZeusdNVIDIAGPU
    host, port = env["ZEUSD_HOST_PORT"].split(":")
    for client in (ZeusdClient(ZeusdConfig.tcp(host, int(port))),
                   ZeusdClient(ZeusdConfig.uds(sock))):
        gpu = cls(1, client)
        assert gpu.supports_nonblocking_setters
        gpu.set_power_management_limit(250_000)
        assert client.get_power_limit([1]) == {1: 250_000}
        # Both clock domains in one request, as the original's relay.
        before = len(daemon_log())
        gpu.reset_locked_clocks()
        unlocked = daemon_log()[before:]
        assert "GPU 1: graphics clocks unlocked" in unlocked, unlocked
        assert "GPU 1: memory clocks unlocked" in unlocked, unlocked
        if client.endpoint == sock:
            assert re.search(rf"power limit 250000 mW for pid {os.getpid()} ", daemon_log())
        else:
            assert "power limit 250000 mW for a TCP client" in daemon_log()
            assert client.make_client().post(client.url("/lease/release")).status_code == 200
    with pytest.raises(Exception, match="pass a ZeusdClient, or set ZEUSD_SOCK_PATH"):
        cls(0, None)


def test_relayed_setters_honour_block_false(tcp_daemon):
    """Under ZEUSD_SOCK_PATH (the core relays the setters, and the daemon
    puts the changes back when the process ends), block=False returns while
    the daemon cannot answer (it is stopped with SIGSTOP), and the change
    follows once it can; a blocking setter made after it waits for it and
    lands last."""
    env, state_file, daemon_log, proc, sock = tcp_daemon
    env = dict(env, ZEUSD_SOCK_PATH=sock)
    env.pop("ZEUSD_HOST_PORT", None)
    script = textwrap.dedent(f"""
        import os, signal
        from zeus.device import get_gpus
        gpu = get_gpus().gpus[1]
        print(gpu.supports_nonblocking_setters, flush=True)
        os.kill({proc.pid}, signal.SIGSTOP)
        try:
            gpu.set_power_management_limit(500_000, block=False)
            gpu.set_power_management_limit(450_000, block=False)
            print("returned", flush=True)
        finally:
            os.kill({proc.pid}, signal.SIGCONT)
        gpu.set_power_management_limit(400_000)
        print("set", gpu.get_power_management_limit())
    """)
    result = run_python(["-c", script], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in result.stdout.splitlines() if not line.startswith("[")] == [
        "True", "returned", "set 400000"]
    log = daemon_log()
    order = [int(mw) for mw in re.findall(r"power limit (\d+) mW for pid", log)]
    # In order, then the default back when the process ended.
    assert order == [500000, 450000, 400000, 700000], log


def gpu_clocks_mhz(state_file):
    """The locked graphics clock range of each fake GPU, (0, 0): unlocked."""
    if not state_file.exists():
        return [(0, 0), (0, 0)]
    return [tuple(int(f) for f in line.split()[2:4])
            for line in state_file.read_text().splitlines()]


# The fake AMD GPUs list no clocks (AMD SMI clock lists are not read yet).
@pytest.mark.skipif(bool(os.environ.get("ZEUS_AMDSMI_LIBRARY"))
                    and not os.path.exists(os.environ.get("ZEUS_NVML_LIBRARY", "")),
                    reason="the frequency optimizer needs NVML's clock lists")
def test_sigkilled_job_gets_its_clocks_unlocked_through_the_daemon(zeus_daemon):
    env, state_file, daemon_log = zeus_daemon
    script = textwrap.dedent("""
        import os, signal
        from zeus.monitor import ZeusMonitor
        from zeus.optimizer.frequency import GlobalFrequencyOptimizer

        fo = GlobalFrequencyOptimizer(ZeusMonitor(), wait_steps=1, warmup_steps=1,
                                      profile_steps=3, clock_step=300, min_clock=1000,
                                      min_measure_time_s=0.0)
        for _ in range(6):  # Wait, then 1980 MHz (warm-up, measure), then 1680 MHz is locked.
            fo.on_step_begin()
        print("profiling", fo.current_clock, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = run_python(["-c", script], env=env)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert "profiling 1680" in result.stdout
    assert daemon_log().count("graphics clocks locked to 1680-1680 MHz") == 2, daemon_log()
    deadline = time.time() + 1.0
    while gpu_clocks_mhz(state_file) != [(0, 0), (0, 0)] and time.time() < deadline:
        time.sleep(0.01)
    assert gpu_clocks_mhz(state_file) == [(0, 0), (0, 0)], daemon_log()
