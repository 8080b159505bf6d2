"""Fixtures of the zeus package tests. Run by ctest (python/CMakeLists.txt)
in a venv with the wheel installed, with ZEUS_NVML_LIBRARY naming the fake
libnvml of tests/device (2 GPUs, limits 100-700 W, instant power 150 W, each
energy-counter read advancing the counter by a step) and ZEUS_SERVE naming
the `zeus` binary."""

import gc
import os
import re
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# The fake's energy model, per power limit in W: each counter read advances
# the counter by this many mJ (1000 mJ at limits not listed, e.g. 700 W).
# Per step, 400 W is the cheapest limit.
ENERGY_STEP_MJ_BY_LIMIT = {600: 800, 500: 600, 400: 300, 300: 500, 200: 900, 100: 1200}
# Both fakes (libnvml, and libamd_smi for the zeus_python_pytest_amd run).
for _fake in ("FAKE_NVML_", "FAKE_AMDSMI_"):
    os.environ[_fake + "ENERGY_STEP_MJ_BY_LIMIT"] = ",".join(
        f"{w}:{mj}" for w, mj in ENERGY_STEP_MJ_BY_LIMIT.items())
# The fakes' energy moves per counter read, not with time: their "draw" says
# nothing about which limits bind, so the suites profile every limit (tests
# with their own fakes check the skipping).
os.environ["ZEUS_SKIP_NONBINDING_LIMITS"] = "0"
os.environ.pop("ZEUS_DRY_RUN", None)  # The fake accepts limits: let the optimizer set them.

if "ZEUS_NVML_LIBRARY" not in os.environ:
    pytest.exit("ZEUS_NVML_LIBRARY must name the fake libnvml (run through ctest)", returncode=2)


@pytest.fixture(autouse=True)
def release_devices():
    """Frees every handle between tests, so the fake libnvml starts afresh
    (and reads the next test's FAKE_NVML_* settings): the GPUs get_gpus()
    shares too, which would otherwise stay open for the rest of the run."""
    yield
    import zeus.device.gpu as gpu_module  # pylint: disable=import-outside-toplevel
    with gpu_module._lock:
        shared, gpu_module._gpus = gpu_module._gpus, None
    if hasattr(shared, "close"):
        shared.close()
    gc.collect()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def zeus_server(tmp_path):
    """A `zeus serve` on 127.0.0.1 (a free port, SQLite in tmp_path); yields
    its URL and stops it."""
    serve = os.environ.get("ZEUS_SERVE")
    if not serve:
        pytest.fail("ZEUS_SERVE must name the zeus binary (run through ctest)")
    proc = subprocess.Popen(
        [serve, "serve", "--listen", "127.0.0.1:0", "--db", f"sqlite:{tmp_path / 'bso.db'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if not match:
            proc.kill()
            pytest.fail(f"zeus serve did not start: {line}{proc.stdout.read()}")
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_zeus_daemon(directory, powercap_root, *args):
    """Starts `zeus daemon` with its socket (zeusd.sock), state file
    (state.json), log (daemon.log) and fake GPUs' state (FAKE_NVML_STATE or,
    on the fake AMD GPUs, FAKE_AMDSMI_STATE=gpus) in `directory`, the powercap
    tree at `powercap_root` and the extra command line `args`; waits (up to
    10 s) until it serves. Returns (the process, the socket path, its
    environment, the log's path); the caller stops the process. Fails the
    test, the daemon stopped, when it does not start."""
    zeus = os.environ.get("ZEUS_SERVE")
    if not zeus:
        pytest.fail("ZEUS_SERVE must name the zeus binary (run through ctest)")
    sock = str(directory / "zeusd.sock")
    # Whichever fake the daemon loads (zeus_python_pytest or _amd) keeps its
    # GPUs' state there.
    env = dict(os.environ, FAKE_NVML_STATE=str(directory / "gpus"),
               FAKE_AMDSMI_STATE=str(directory / "gpus"))
    log_path = directory / "daemon.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [zeus, "daemon", "--socket", sock, "--state-file", str(directory / "state.json"),
             "--powercap-root", str(powercap_root), *args],
            env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while "serving" not in log_path.read_text():
        if proc.poll() is not None or time.time() > deadline:
            proc.terminate()
            proc.wait(timeout=10)
            pytest.fail(f"zeus daemon did not start: {log_path.read_text()}")
        time.sleep(0.02)
    return proc, sock, env, log_path


def run_python(args, env=None, timeout=300):
    """Runs this interpreter on `args`; returns the CompletedProcess."""
    return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


def wait_for_gpu_power(client, key):
    """The client's readings of `key` once they name a GPU (None after 60 s,
    a bound for a broken client, not a speed target)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        mine = client.get_power().get(key)
        if mine is not None and mine.gpu_power_w:
            return mine
        time.sleep(0.01)
    return None
