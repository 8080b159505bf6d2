"""Original power limits come back when a Python program is interrupted
(SIGINT: the C++ handler restores, then Python raises KeyboardInterrupt) or
ends with an uncaught exception (at interpreter exit). Each case runs in a
child process over the fake GPUs, which starts at 700 W."""

import textwrap

from conftest import run_python

PRELUDE = textwrap.dedent("""
    import atexit, os, signal
    from zeus.device import get_gpus
    from zeus.monitor import ZeusMonitor
    from zeus.optimizer.power_limit import Energy, GlobalPowerLimitOptimizer

    gpus = get_gpus()
    def limits_w():
        return [gpus.getPowerManagementLimit(i) // 1000 for i in range(len(gpus))]

    monitor = ZeusMonitor()
    plo = GlobalPowerLimitOptimizer(monitor, Energy(), wait_steps=1, warmup_steps=1,
                                    profile_steps=3, pl_step=100, min_measure_time_s=0.0)
    for _ in range(6):  # Wait, then 700 W (warm-up, measure), then 600 W is set.
        plo.on_step_begin()
    print("profiling", limits_w(), flush=True)
""")


def test_sigint_restores_before_keyboard_interrupt():
    script = PRELUDE + textwrap.dedent("""
        for _ in range(3):
            plo.on_step_begin()
        print("measuring", limits_w(), flush=True)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000000):
                pass
        except KeyboardInterrupt:
            print("interrupted", limits_w(), flush=True)
    """)
    result = run_python(["-c", script])
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("[")]  # Logs.
    assert lines[:2] == ["profiling [600, 600]", "measuring [600, 600]"]
    assert lines[-1] == "interrupted [700, 700]"


def test_uncaught_exception_restores_at_exit():
    script = PRELUDE + textwrap.dedent("""
        # Registered after the optimizer's own exit hook, so it runs before it.
        atexit.register(lambda: print("at exit, before zeus", limits_w(), flush=True))
        raise RuntimeError("training crashed")
    """)
    # Read the limits after zeus's exit hook: a hook registered before it.
    script = script.replace("monitor = ZeusMonitor()",
                            "atexit.register(lambda: print('at exit, after zeus', limits_w(), "
                            "flush=True))\nmonitor = ZeusMonitor()", 1)
    result = run_python(["-c", script])
    assert result.returncode != 0 and "training crashed" in result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("[")]
    assert lines[0] == "profiling [600, 600]"
    assert "at exit, before zeus [600, 600]" in lines
    assert lines[-1] == "at exit, after zeus [700, 700]"
