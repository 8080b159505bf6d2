"""zeus.utils.zeusd: the zeusd client (httpx over a Unix socket or TCP)
against a small in-test daemon whose answers each test sets,
and against a real `zeus daemon` over the fake libnvml (or the fake
libamd_smi, in the ctest zeus_python_pytest_amd)."""

import http.server
import json
import os
import socketserver
import time
import urllib.parse

import pytest

from conftest import run_python, serve_in_background, start_zeus_daemon
from zeus.exception import ZeusBaseError
from zeus.utils.zeusd import (CpuEnergyResult, CpuInfo, GpuInfo, ZeusdAuthError,
                              ZeusdCapabilityError, ZeusdClient, ZeusdConfig,
                              ZeusdConnectionError, require_capabilities)

DISCOVER = {
    "gpus": [{"id": 0, "name": "NVIDIA H100", "pci_address": "0000:19:00.0",
              "cumulative_energy_available": True},
             {"id": 1, "name": "NVIDIA H100", "pci_address": "0000:3b:00.0",
              "cumulative_energy_available": False}],
    "cpus": [{"id": 0, "dram_available": True}, {"id": 1, "dram_available": False}],
    "enabled_api_groups": ["gpu-read", "gpu-control", "cpu-read"],
    "auth_required": False,
    "gpu_ids": [0, 1],  # An older daemon's extra keys are ignored.
}


class FakeDaemon:
    """Answers `routes[(method, path)]` = (status, JSON body or bytes); records
    every request as (method, path, query dict, headers)."""

    def __init__(self, routes):
        self.routes = routes
        self.requests = []

    def handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, method):
                target = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(target.query))
                fake.requests.append((method, target.path, query, dict(self.headers)))
                status, body = fake.routes.get((method, target.path),
                                               (404, {"error": f"no route {target.path}"}))
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data:  # The client may be gone once it has all it was promised.
                    self.wfile.write(data)

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

            def log_message(self, *args):
                pass

        return Handler


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def fake_daemon(tmp_path):
    """(FakeDaemon with /discover and /time, its Unix socket path)."""
    fake = FakeDaemon({("GET", "/discover"): (200, json.loads(json.dumps(DISCOVER))),
                       ("GET", "/time"): (200, {"timestamp_ms": 1700000000123})})
    path = str(tmp_path / "fake.sock")
    server = _UnixHTTPServer(path, fake.handler())
    stop = serve_in_background(server)
    yield fake, path
    stop()


def test_discovery_over_a_unix_socket(fake_daemon):
    fake, path = fake_daemon
    client = ZeusdClient(ZeusdConfig.uds(path))
    assert client.endpoint == path
    assert client.gpus == [GpuInfo(0, "NVIDIA H100", "0000:19:00.0", True),
                           GpuInfo(1, "NVIDIA H100", "0000:3b:00.0", False)]
    assert client.gpu_ids == [0, 1] and client.cpu_ids == [0, 1]
    assert client.cpus == [CpuInfo(0, True), CpuInfo(1, False)]
    assert client.dram_available == [True, False]
    assert client.auth_required is False and client.auth_error is None
    assert client.granted_scopes == frozenset()
    assert client.can_read_gpu and client.can_control_gpu and client.can_read_cpu
    assert client.get_time() == pytest.approx(1700000000.123)
    assert fake.requests[0][:2] == ("GET", "/discover")
    assert "Authorization" not in fake.requests[0][3]
    require_capabilities(client, read_gpu=True, control_gpu=True, read_cpu=True,
                         gpu_ids=[0, 1], cpu_ids=[1])


def test_reads_and_writes_speak_the_zeusd_wire(fake_daemon):
    fake, path = fake_daemon
    fake.routes.update({
        ("GET", "/gpu/get_power"): (200, {"timestamp_ms": 5, "power_mw": {"0": 150000}}),
        ("GET", "/gpu/get_cumulative_energy"): (200, {"0": {"energy_mj": 123456}}),
        ("GET", "/gpu/get_power_limit"): (200, {"0": {"power_limit_mw": 700000},
                                                "1": {"power_limit_mw": 300000}}),
        ("GET", "/gpu/get_power_limit_constraints"): (
            200, {"0": {"min_power_limit_mw": 100000, "max_power_limit_mw": 700000}}),
        ("GET", "/gpu/get_persistence_mode"): (200, {"1": {"enabled": True}}),
        ("GET", "/cpu/get_cumulative_energy"): (
            200, {"0": {"cpu_energy_uj": 10, "dram_energy_uj": None}}),
        ("GET", "/cpu/get_power"): (200, {"timestamp_ms": 9, "power_mw": {
            "0": {"cpu_mw": 50000, "dram_mw": 4000}, "1": {"cpu_mw": 40000}}}),
        ("POST", "/gpu/set_power_limit"): (200, b""),
        ("POST", "/gpu/set_persistence_mode"): (200, b""),
        ("POST", "/gpu/set_gpu_locked_clocks"): (200, b""),
        ("POST", "/gpu/set_mem_locked_clocks"): (200, b""),
        ("POST", "/gpu/reset_gpu_locked_clocks"): (200, b""),
        ("POST", "/gpu/reset_mem_locked_clocks"): (200, b""),
        ("POST", "/gpu/reset_locked_clocks"): (200, b""),
    })
    client = ZeusdClient(ZeusdConfig.uds(path))
    snapshot = client.get_gpu_power([0])
    assert snapshot.timestamp_ms == 5 and snapshot.power_mw == {0: 150000}
    assert client.get_gpu_energy([0]) == {0: 123456}
    assert client.get_power_limit() == {0: 700000, 1: 300000}
    assert client.get_power_limit_constraints([0]) == {0: (100000, 700000)}
    assert client.get_persistence_mode([1]) == {1: True}
    assert client.get_cpu_energy([0], dram=False) == {0: CpuEnergyResult(10, None)}
    cpu = client.get_cpu_power()
    assert cpu.power_mw[0].cpu_mw == 50000 and cpu.power_mw[0].dram_mw == 4000
    assert cpu.power_mw[1].dram_mw is None
    client.set_power_limit([0, 1], 250000)
    client.set_persistence_mode([1], enabled=False, block=False)
    client.set_gpu_locked_clocks([0], 500, 1500)
    client.set_mem_locked_clocks([0], 800, 1600)
    client.reset_gpu_locked_clocks([0])
    client.reset_mem_locked_clocks([0])
    client.reset_locked_clocks([0, 1])
    sent = [(m, p, q) for m, p, q, _ in fake.requests[1:]]
    assert sent == [
        ("GET", "/gpu/get_power", {"gpu_ids": "0"}),
        ("GET", "/gpu/get_cumulative_energy", {"gpu_ids": "0"}),
        ("GET", "/gpu/get_power_limit", {}),
        ("GET", "/gpu/get_power_limit_constraints", {"gpu_ids": "0"}),
        ("GET", "/gpu/get_persistence_mode", {"gpu_ids": "1"}),
        ("GET", "/cpu/get_cumulative_energy", {"cpu": "true", "dram": "false", "cpu_ids": "0"}),
        ("GET", "/cpu/get_power", {}),
        ("POST", "/gpu/set_power_limit",
         {"gpu_ids": "0,1", "power_limit_mw": "250000", "block": "true"}),
        ("POST", "/gpu/set_persistence_mode",
         {"gpu_ids": "1", "enabled": "false", "block": "false"}),
        ("POST", "/gpu/set_gpu_locked_clocks",
         {"gpu_ids": "0", "min_clock_mhz": "500", "max_clock_mhz": "1500", "block": "true"}),
        ("POST", "/gpu/set_mem_locked_clocks",
         {"gpu_ids": "0", "min_clock_mhz": "800", "max_clock_mhz": "1600", "block": "true"}),
        ("POST", "/gpu/reset_gpu_locked_clocks", {"gpu_ids": "0", "block": "true"}),
        ("POST", "/gpu/reset_mem_locked_clocks", {"gpu_ids": "0", "block": "true"}),
        ("POST", "/gpu/reset_locked_clocks", {"gpu_ids": "0,1", "block": "true"}),
    ]


def test_a_refusal_raises_with_the_daemons_message(fake_daemon):
    fake, path = fake_daemon
    fake.routes[("POST", "/gpu/set_power_limit")] = (
        409, {"error": "GPU 0 is held by pid 1234 (uid 1000)"})
    client = ZeusdClient(ZeusdConfig.uds(path))
    with pytest.raises(ZeusBaseError) as info:
        client.set_power_limit([0], 250000)
    message = str(info.value)
    # The original's words: "Failed to <operation>: <the daemon's answer>".
    assert message.startswith("Failed to set_power_limit: ")
    assert "GPU 0 is held by pid 1234 (uid 1000)" in message
    try:
        from zeus.device.exception import ZeusdError
    except ImportError:
        return  # zeus.device.exception arrives with the device module's branch.
    assert isinstance(info.value, ZeusdError)


@pytest.mark.parametrize("missing", ["pci_address", "cumulative_energy_available"])
def test_a_daemon_whose_gpus_lack_new_fields_is_refused(fake_daemon, missing):
    fake, path = fake_daemon
    discover = json.loads(json.dumps(DISCOVER))
    del discover["gpus"][1][missing]
    fake.routes[("GET", "/discover")] = (200, discover)
    with pytest.raises(ZeusdConnectionError) as info:
        ZeusdClient(ZeusdConfig.uds(path))
    assert f"did not report '{missing}' in /discover" in str(info.value)
    assert "older than this version of Zeus. Upgrade zeusd." in str(info.value)


def test_discovery_failures_are_connection_errors(fake_daemon, tmp_path):
    fake, path = fake_daemon
    fake.routes[("GET", "/discover")] = (500, {"error": "NVML is gone"})
    with pytest.raises(ZeusdConnectionError, match="returned HTTP 500 on /discover"):
        ZeusdClient(ZeusdConfig.uds(path))
    fake.routes[("GET", "/discover")] = (200, b"not json")
    with pytest.raises(ZeusdConnectionError, match="malformed /discover answer"):
        ZeusdClient(ZeusdConfig.uds(path))
    nowhere = str(tmp_path / "nowhere.sock")
    with pytest.raises(ZeusdConnectionError, match=f"^Cannot reach Zeusd at {nowhere}: "):
        ZeusdClient(ZeusdConfig.uds(nowhere))


def test_authentication(fake_daemon, monkeypatch):
    fake, path = fake_daemon
    discover = dict(DISCOVER, auth_required=True)
    fake.routes[("GET", "/discover")] = (200, discover)
    monkeypatch.delenv("ZEUSD_TOKEN", raising=False)

    anonymous = ZeusdClient(ZeusdConfig.uds(path))
    assert anonymous.auth_error == (
        f"Zeusd at {path} requires authentication but no token was provided. Set the "
        "ZEUSD_TOKEN environment variable or pass token= in the config.")
    assert not anonymous.can_read_gpu
    with pytest.raises(ZeusdAuthError, match="no token was provided"):
        require_capabilities(anonymous, read_gpu=True)

    fake.routes[("GET", "/auth/whoami")] = (401, {"error": "bad signature"})
    rejected = ZeusdClient(ZeusdConfig.uds(path, token="forged"))
    assert rejected.auth_error.startswith(f"Token rejected by Zeusd at {path}: ")
    assert "bad signature" in rejected.auth_error

    fake.routes[("GET", "/auth/whoami")] = (200, {"sub": "alice", "scopes": ["gpu-read"]})
    monkeypatch.setenv("ZEUSD_TOKEN", "t0ken")  # Read when the config has none.
    alice = ZeusdClient(ZeusdConfig.uds(path))
    assert alice.auth_error is None
    assert alice.granted_scopes == frozenset({"gpu-read"})
    assert alice.can_read_gpu and not alice.can_control_gpu and not alice.can_read_cpu
    assert fake.requests[-1][3]["Authorization"] == "Bearer t0ken"
    require_capabilities(alice, read_gpu=True)
    with pytest.raises(ZeusdCapabilityError) as info:
        require_capabilities(alice, control_gpu=True, read_cpu=True, gpu_ids=[0, 7])
    message = str(info.value)
    assert message.startswith(f"Zeusd at {path}: ")
    assert "Token lacks required scope 'gpu-control' (granted: ['gpu-read'])" in message
    assert "Token lacks required scope 'cpu-read'" in message
    assert "GPU indices [7] not available (available: [0, 1])" in message


def test_a_disabled_api_group_is_named(fake_daemon):
    fake, path = fake_daemon
    fake.routes[("GET", "/discover")] = (200, dict(DISCOVER, enabled_api_groups=["gpu-read"]))
    client = ZeusdClient(ZeusdConfig.uds(path))
    assert client.can_read_gpu and not client.can_control_gpu
    with pytest.raises(ZeusdCapabilityError, match="API group 'gpu-control' is not enabled on this server"):
        require_capabilities(client, control_gpu=True)


def test_config_from_the_environment(monkeypatch):
    for name in ("ZEUSD_SOCK_PATH", "ZEUSD_HOST_PORT", "ZEUSD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert ZeusdConfig.from_env() is None
    with pytest.raises(ZeusdConnectionError) as info:
        ZeusdClient()
    assert str(info.value) == ("No Zeusd connection configured. Set ZEUSD_SOCK_PATH or "
                               "ZEUSD_HOST_PORT, or pass a ZeusdConfig.")
    monkeypatch.setenv("ZEUSD_HOST_PORT", "gpu1:4938")
    monkeypatch.setenv("ZEUSD_TOKEN", "abc")
    config = ZeusdConfig.from_env()
    assert config == ZeusdConfig(host_port="gpu1:4938", token="abc")
    assert config.url("/time") == "http://gpu1:4938/time" and config.endpoint == "gpu1:4938"
    monkeypatch.setenv("ZEUSD_SOCK_PATH", "/run/zeusd.sock")  # Wins over TCP.
    config = ZeusdConfig.from_env()
    assert config.socket_path == "/run/zeusd.sock" and config.host_port is None
    assert config.url("/time") == "http://localhost/time"
    assert ZeusdConfig.tcp("h", 1, gpu_indices=[0]).gpu_indices == [0]
    with pytest.raises(ValueError, match="neither socket_path nor host_port"):
        ZeusdConfig().endpoint


def test_make_client_is_httpx_and_a_replaced_one_carries_every_request(monkeypatch):
    """The original's make_client() returns an httpx.Client and ZeusdClient
    sends every request through it: a user's mock transport sees them all."""
    import httpx
    assert isinstance(ZeusdConfig.tcp("127.0.0.1", 1).make_client(), httpx.Client)
    seen = []

    def answer(request):
        seen.append((request.method, request.url.path, dict(request.url.params),
                     request.headers.get("authorization")))
        if request.url.path == "/discover":
            return httpx.Response(200, json=DISCOVER)
        if request.url.path == "/gpu/get_power_limit":
            return httpx.Response(200, json={"0": {"power_limit_mw": 250000}})
        return httpx.Response(400, text='{"error":"no"}')

    monkeypatch.setattr(ZeusdConfig, "make_client", lambda self: httpx.Client(
        transport=httpx.MockTransport(answer), headers=self._auth_headers()))
    client = ZeusdClient(ZeusdConfig.tcp("zeusd.example", 4938, token="tok"))
    assert client.gpu_ids == [0, 1]
    assert client.get_power_limit([0]) == {0: 250000}
    with pytest.raises(ZeusBaseError, match='^Failed to set_power_limit: {"error":"no"}$'):
        client.set_power_limit([0], 1)
    assert seen == [("GET", "/discover", {}, "Bearer tok"),
                    ("GET", "/gpu/get_power_limit", {"gpu_ids": "0"}, "Bearer tok"),
                    ("POST", "/gpu/set_power_limit",
                     {"gpu_ids": "0", "power_limit_mw": "1", "block": "true"}, "Bearer tok")]


def test_an_unreachable_tcp_daemon_is_a_connection_error():
    from conftest import free_port
    port = free_port()
    with pytest.raises(ZeusdConnectionError, match=f"^Cannot reach Zeusd at 127.0.0.1:{port}: "):
        ZeusdClient(ZeusdConfig.tcp("127.0.0.1", port))


def test_tcp_and_streams():
    fake = FakeDaemon({("GET", "/discover"): (200, DISCOVER),
                       ("GET", "/gpu/stream_power"): (
                           200, b'data: {"timestamp_ms": 1, "power_mw": {"0": 5}}\n\n'
                                b'data: {"timestamp_ms": 2, "power_mw": {"0": 6}}\n\n')})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    stop = serve_in_background(server)
    try:
        client = ZeusdClient(ZeusdConfig.tcp("127.0.0.1", server.server_port))
        assert client.gpu_ids == [0, 1]
        with client.make_client().stream("GET", client.url("/gpu/stream_power"),
                                         params={"gpu_ids": "0"}) as response:
            assert response.status_code == 200
            events = [json.loads(line[len("data: "):]) for line in response.iter_lines()
                      if line.startswith("data: ")]
        assert [e["power_mw"]["0"] for e in events] == [5, 6]
        assert fake.requests[-1][2] == {"gpu_ids": "0"}
    finally:
        stop()


# --- A real `zeus daemon` over the fake libnvml or libamd_smi -----------------

@pytest.fixture
def zeus_daemon(tmp_path):
    """A `zeus daemon` on a Unix socket in tmp_path; yields its socket path."""
    proc, sock, _, _ = start_zeus_daemon(tmp_path, tmp_path / "no-powercap", "--group",
                                         str(os.getgid()))
    try:
        yield sock
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_transport_against_the_real_daemon(zeus_daemon):
    http_client = ZeusdConfig.uds(zeus_daemon).make_client()
    before = time.time()
    answer = http_client.get("http://localhost/time")
    assert answer.status_code == 200
    assert abs(answer.json()["timestamp_ms"] / 1000.0 - before) < 5.0
    discover = http_client.get("http://localhost/discover").json()
    assert [g["id"] for g in discover["gpus"]] == [0, 1]
    refused = http_client.post("http://localhost/gpu/set_power_limit",
                               params={"gpu_ids": "0", "power_limit_mw": "1", "block": "true"})
    assert refused.status_code == 400 and "outside" in refused.json()["error"]


def test_client_against_the_real_daemon(zeus_daemon):
    discover = ZeusdConfig.uds(zeus_daemon).make_client().get("http://localhost/discover").json()
    if any("pci_address" not in gpu for gpu in discover["gpus"]):
        pytest.skip("this zeus daemon's /discover has no pci_address (added with issue 24's "
                    "daemon wire); the client refuses it, as the original does")
    client = ZeusdClient(ZeusdConfig.uds(zeus_daemon))
    assert client.gpu_ids == [0, 1]
    assert all(g.pci_address.count(":") == 2 and "." in g.pci_address for g in client.gpus)
    require_capabilities(client, read_gpu=True, control_gpu=True, gpu_ids=[0, 1])
    assert abs(client.get_time() - time.time()) < 5.0
    assert client.get_power_limit_constraints([0]) == {0: (100000, 700000)}
    client.set_power_limit([0], 300000)
    assert client.get_power_limit([0, 1]) == {0: 300000, 1: 700000}
    with pytest.raises(ZeusBaseError, match=r"outside GPU 0's range \[100000, 700000\] mW"):
        client.set_power_limit([0], 1)
    assert client.get_power_limit([0]) == {0: 300000}  # Nothing changed by the refusal.
    energy = client.get_gpu_energy([0])
    assert set(energy) == {0} and energy[0] >= 0
    assert set(client.get_gpu_power().power_mw) == {0, 1}


def test_show_env_reports_the_configured_daemon(fake_daemon):
    _, path = fake_daemon
    env = dict(os.environ, ZEUSD_SOCK_PATH=path)
    result = run_python(["-m", "zeus.show_env"], env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"zeusd at {path}: GPUs [0, 1], CPUs [0, 1], auth not required" in result.stdout
    assert "GPU 1: NVIDIA H100 (0000:3b:00.0)" in result.stdout
    assert "read GPUs: True, control GPUs: True, read CPUs: True" in result.stdout


class _Misbehaving(http.server.BaseHTTPRequestHandler):
    """A daemon that answers /discover too slowly (a byte every 50 ms, so no
    single read times out) or too much (20 MiB), as its server's `mode`
    says."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            if self.server.mode == "slow":
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            else:
                chunk = b" " * (1 << 20)
                for _ in range(20):
                    self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.mark.parametrize("mode, words", [("slow", "did not answer GET /discover within 0.5 s"),
                                         ("huge", "larger than")])
def test_a_slow_or_flooding_daemon_is_a_connection_error(mode, words, monkeypatch):
    """Every request has one deadline in all (REQUEST_TIMEOUT_S) and an
    answer of at most 16 MiB, read as it arrives."""
    import zeus.utils.zeusd as zeusd
    monkeypatch.setattr(zeusd, "REQUEST_TIMEOUT_S", 0.5)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    server.daemon_threads = True
    server.mode = mode
    stop = serve_in_background(server)
    try:
        with pytest.raises(ZeusdConnectionError, match=words):
            ZeusdClient(ZeusdConfig.tcp("127.0.0.1", server.server_address[1]))
    finally:
        stop()
