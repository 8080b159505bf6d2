"""Fixtures of the zeus package tests. Run by ctest (python/CMakeLists.txt)
in a venv with the wheel installed, with ZEUS_NVML_LIBRARY naming the fake
libnvml of tests/device (2 GPUs, limits 100-700 W, instant power 150 W, each
energy-counter read advancing the counter by a step) and ZEUS_SERVE naming
the `zeus` binary."""

import gc
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@pytest.fixture(autouse=True, scope="session")
def freeze_imported_modules():
    """Moves what the heavy imports built (torch's heap above all) out of the
    collector's reach, so release_devices' collection walks what the tests
    made, not about 50 ms of module objects per test. No device is open yet."""
    import torch  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    import zeus.device.gpu  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    gc.collect()
    gc.freeze()


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


def run_child(script, **env):
    """Runs `script` (dedented) in a child interpreter with `env` added;
    returns (stdout lines without core log lines, all output, returncode)."""
    full_env = dict(os.environ)
    full_env.update({k: str(v) for k, v in env.items()})
    result = run_python(["-c", textwrap.dedent(script)], env=full_env, timeout=120)
    lines = [line for line in result.stdout.splitlines() if not line.startswith("[")]
    return lines, result.stdout + result.stderr, result.returncode


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


def zeusd_discovery_answer(path, gpu_ids=(0, 1), cpu_ids=(0,), clock_offset_s=0.0,
                           groups=("gpu-read", "gpu-control", "cpu-read")):
    """What a fake zeusd answers on `path` (the request's path, query
    included) before its streams: (status, JSON body) for `/discover` (GPUs
    `gpu_ids`, CPUs `cpu_ids`, API groups `groups`, no auth) and `/time`
    (this machine's time plus `clock_offset_s`); None for any other path."""
    route = path.split("?", 1)[0]
    if route == "/discover":
        return 200, {"gpus": [{"id": i, "name": "Fake GPU", "pci_address": f"0000:{i:02x}:00.0",
                               "cumulative_energy_available": True} for i in gpu_ids],
                     "cpus": [{"id": i, "dram_available": True} for i in cpu_ids],
                     "enabled_api_groups": list(groups), "auth_required": False}
    if route == "/time":
        return 200, {"timestamp_ms": int((time.time() + clock_offset_s) * 1000)}
    return None


def answer_zeusd_discovery(handler, **fake):
    """Writes zeusd_discovery_answer(handler.path, **fake) to the
    BaseHTTPRequestHandler `handler`; False (nothing written) for another
    path."""
    answer = zeusd_discovery_answer(handler.path, **fake)
    if answer is None:
        return False
    body = json.dumps(answer[1]).encode()
    handler.send_response(answer[0])
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
    return True


class FakeStreamDaemon:
    """A fake zeusd on loopback TCP for stream tests: `/discover` (GPU 0, no
    CPU) and `/time` as zeusd_discovery_answer, unless `discover(handler)`
    is given, which then answers `/discover` itself. GPU stream connection n
    (from 1) first runs `prelude(n, handler)`, which may write anything
    (status and headers included) and returns False to end the connection
    there, True to go on with a good stream of GPU 0 at `power_mw` (status
    and headers written unless the prelude wrote them: it returns
    "streaming"). Counts the stream's connections."""

    def __init__(self, prelude, power_mw=55000, discover=None):
        self.connections = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                try:
                    if discover is not None and self.path.startswith("/discover"):
                        discover(self)
                        return
                    if answer_zeusd_discovery(self, gpu_ids=(0,), cpu_ids=()):
                        return
                    if not self.path.startswith("/gpu/stream_power"):
                        self.send_response(404)
                        self.end_headers()
                        return
                    fake.connections += 1
                    went_on = prelude(fake.connections, self)
                    if not went_on:
                        return
                    if went_on != "streaming":
                        start_event_stream(self)
                    while True:
                        event = {"timestamp_ms": int(time.time() * 1000), "gpu_id": 0,
                                 "power_mw": power_mw}
                        self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                        self.wfile.flush()
                        time.sleep(0.02)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.key = f"127.0.0.1:{self.port}"
        self.close = serve_in_background(self.server)


def serve_in_background(server):
    """Runs `server` (a socketserver) on a daemon thread; returns a function
    that stops it, closes its socket and joins the thread. The loop checks
    for shutdown every 10 ms, so stopping does not cost the default 0.5 s."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()
        thread.join()
    return stop


def start_event_stream(handler):
    """Writes a 200 answer's status and headers for an SSE stream."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
