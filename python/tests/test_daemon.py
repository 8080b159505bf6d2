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
