"""What the README's quick start promises a newcomer: the core's logs in
`logging` (never on stdout), simulated GPUs (ZEUS_FAKE_GPUS) behind the
Python API, and the `zeus` console command with every subcommand."""

import json
import os
import re
import subprocess
import sys
import textwrap

from conftest import HERE, run_python

FAKE = {"ZEUS_FAKE_GPUS": "2", "ZEUS_DRY_RUN": "1"}

# Sets a limit in dry run: the core logs one INFO notice per call.
SET_LIMIT = """
from zeus.device import get_gpus
get_gpus().set_power_management_limit(0, 300_000)
print("done")
"""


def child(script, **env):
    full_env = dict(os.environ)
    full_env.pop("ZEUS_LOG_LEVEL", None)
    full_env.update(env)
    return run_python(["-c", textwrap.dedent(script)], env=full_env, timeout=120)


def test_core_logs_reach_logging_only_and_nothing_reaches_stdout():
    quiet = child(SET_LIMIT, **FAKE)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "done\n"
    assert quiet.stderr == ""  # INFO, and no handler configured.

    records = child(textwrap.dedent("""
        import logging
        class Keep(logging.Handler):
            def emit(self, record):
                print("record", record.name, record.levelname, record.getMessage())
        logging.getLogger("zeus").addHandler(Keep())
        logging.getLogger("zeus").setLevel(logging.INFO)
    """) + SET_LIMIT, **FAKE)
    assert records.returncode == 0, records.stderr
    lines = records.stdout.splitlines()
    assert any(line.startswith("record zeus.core INFO ZEUS_DRY_RUN: would set the power limit")
               for line in lines), lines
    assert lines[-1] == "done"


def test_logging_disable_and_zeus_log_level_silence_the_core():
    configured = "import logging\nlogging.basicConfig(level=logging.INFO)\n"
    disabled = child(configured + "logging.disable(logging.CRITICAL)\n" + SET_LIMIT, **FAKE)
    assert disabled.returncode == 0 and disabled.stderr == "", disabled.stderr
    warning = child(configured + SET_LIMIT, ZEUS_LOG_LEVEL="WARNING", **FAKE)
    assert warning.returncode == 0 and warning.stderr == "", warning.stderr
    info = child(configured + SET_LIMIT, ZEUS_LOG_LEVEL="info", **FAKE)
    assert "INFO:zeus.core:ZEUS_DRY_RUN: would set" in info.stderr, info.stderr


def test_simulated_gpus_measure_plausibly_and_take_limits_in_process():
    result = child("""
        import json, time
        from zeus.device import get_gpus
        from zeus.monitor import ZeusMonitor
        from zeus.device.gpu import NVIDIAGPUs, nvml_is_available
        assert nvml_is_available() and len(NVIDIAGPUs()) == 2  # They stand in for NVIDIA's.
        gpus = get_gpus()
        monitor = ZeusMonitor(gpu_indices=[0, 1])
        monitor.begin_window("w")
        time.sleep(1.0)
        m = monitor.end_window("w")
        gpus.set_power_management_limit(1, 120_000)
        print(json.dumps(dict(time=m.time, energy=m.gpu_energy, name=gpus.get_name(0),
                              limit=get_gpus().get_power_management_limit(1),
                              power=gpus.get_instant_power_usage(1))))
    """, ZEUS_FAKE_GPUS="2")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["name"] == "Zeus Simulated GPU"
    for energy in report["energy"].values():
        # 150-352 W over the window.
        assert 150 * report["time"] * 0.9 <= energy <= 352 * report["time"] * 1.1, report
    assert report["limit"] == 120_000
    assert report["power"] <= 120_000


def test_the_zeus_command_runs_the_bundled_tool_with_every_subcommand():
    command = os.path.join(os.path.dirname(sys.executable), "zeus")
    assert os.path.isfile(command), "the wheel installs no zeus console command"
    env = dict(os.environ, ZEUS_FAKE_GPUS="1")
    version = subprocess.run([command, "--version"], capture_output=True, text=True, env=env,
                             timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("zeus "), version
    for sub in ("simulate", "monitor", "power-limit", "show-env", "serve", "exporter", "daemon"):
        help_run = subprocess.run([command, sub, "--help"], capture_output=True, text=True,
                                  env=env, timeout=60)
        assert help_run.returncode == 0, (sub, help_run.stderr)
        assert "not built" not in help_run.stdout, sub
    show = subprocess.run([command, "show-env"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert "Zeus Simulated GPU" in show.stdout, show.stdout


def readme_python_blocks():
    """The ```python blocks of the README's "Try it without a GPU"."""
    with open(os.path.join(HERE, "..", "..", "README.md")) as f:
        text = f.read()
    section = text.split("### Try it without a GPU", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readmes_no_gpu_examples_run_as_written(zeus_server):
    """The README's examples, unchanged but for the server's port: the
    power-limit optimizer in dry run on a simulated GPU, and the batch-size
    optimizer against `zeus serve`. Their stdout is their own prints only
    (no core log line), and every recurrence gets a batch size."""
    power_limit, batch_size = readme_python_blocks()
    result = child(power_limit, ZEUS_FAKE_GPUS="1", ZEUS_DRY_RUN="1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 10 and all(re.fullmatch(r"\d+ [\d.]+ J", line) for line in lines), lines
    assert "http://127.0.0.1:8000" in batch_size
    result = child(batch_size.replace("http://127.0.0.1:8000", zeus_server), ZEUS_FAKE_GPUS="1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 8, lines
    sizes = [int(line.split()[1]) for line in lines]
    assert set(sizes) <= {32, 64, 128, 256} and sizes[0] == 128, lines  # The default first.
    assert all(line.endswith("reached the target") or " stopped: " in line for line in lines)
