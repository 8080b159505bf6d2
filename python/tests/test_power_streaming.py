"""PowerStreamingClient against fake zeusd Server-Sent Event servers on
loopback TCP and on a Unix socket: several daemons at once, one dropping its
stream mid-way, one without CPU power. The fakes write raw SSE bytes in zeusd
v0.5's shape (one event per device per sample) unless told to send one
snapshot of every device per event."""

import json
import logging
import os
import re
import socketserver
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Optional

import pytest

from conftest import (answer_zeusd_discovery, free_port, serve_in_background,
                      zeusd_discovery_answer)
from zeus.monitor.power_streaming import CpuPowerReading, PowerReadings, PowerStreamingClient
from zeus.utils.zeusd import ZeusdCapabilityError, ZeusdConnectionError


@dataclass
class Config:
    """The attributes of zeus.utils.zeusd.ZeusdConfig the client reads."""

    host_port: Optional[str] = None
    socket_path: Optional[str] = None
    token: Optional[str] = None
    gpu_indices: Optional[List[int]] = None
    cpu_indices: Optional[List[int]] = None


class FakeZeusd:
    """Streams GPU power 100 W x (index + 1) + the sample number, and CPU
    power, as zeusd v0.5 does (one event per device per sample) or, with
    `snapshots`, one event per sample holding every device; drops the GPU stream after `drop_after`
    events of its first connection; without CPUs, discovers none and answers
    CPU routes 404. Its clock is `clock_offset_s` ahead of this machine's
    (in /time and in the events' timestamps)."""

    def __init__(self, unix_path=None, drop_after=None, has_cpu=True, chunked=False,
                 period_s=0.02, snapshots=False, clock_offset_s=0.0,
                 groups=("gpu-read", "gpu-control", "cpu-read")):
        self.gpu_connections = 0
        self.cpu_connections = 0
        self.requests = []
        self.headers = []
        self.events_sent = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if chunked else "HTTP/1.0"

            def log_message(self, *args):
                pass

            def _send(self, data):
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                else:
                    self.wfile.write(data)
                self.wfile.flush()

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                fake.requests.append(self.path)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if answer_zeusd_discovery(self, gpu_ids=(0, 1, 2), cpu_ids=(0, 1) if has_cpu
                                          else (), clock_offset_s=clock_offset_s, groups=groups):
                    return
                if url.path.startswith("/cpu/") and not has_cpu:
                    body = json.dumps({"error": "cpu-read is not enabled"}).encode()
                    self.send_response(404)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if url.path == "/cpu/get_power":
                    body = json.dumps({"timestamp_ms": int(time.time() * 1000), "power_mw": {
                        "0": {"cpu_mw": 50000, "dram_mw": 7000}}}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if url.path not in ("/gpu/stream_power", "/cpu/stream_power"):
                    self.send_response(404)
                    self.end_headers()
                    return
                gpu = url.path.startswith("/gpu")
                if gpu:
                    fake.gpu_connections += 1
                    connection = fake.gpu_connections
                else:
                    fake.cpu_connections += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                ids = [int(i) for i in query.get("gpu_ids" if gpu else "cpu_ids", "0,1").split(",")]
                n = 0
                try:
                    while True:
                        n += 1
                        fake.events_sent += 1
                        if gpu:
                            power = {str(i): 100000 * (i + 1) + n for i in ids}
                        else:
                            power = {str(i): {"cpu_mw": 40000 + n, "dram_mw": None if i else 5000}
                                     for i in ids}
                        now_ms = int((time.time() + clock_offset_s) * 1000)
                        if snapshots:
                            events = [{"timestamp_ms": now_ms, "power_mw": power}]
                        elif gpu:
                            events = [{"timestamp_ms": now_ms, "gpu_id": int(i), "power_mw": mw}
                                      for i, mw in power.items()]
                        else:
                            events = [{"timestamp_ms": now_ms, "cpu_id": int(i), **fields}
                                      for i, fields in power.items()]
                        # A comment line and the events, as SSE allows.
                        if n == 1:
                            self._send(b": keep-alive\n")
                        self._send(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n"
                                            for e in events))
                        if gpu and drop_after and connection == 1 and n >= drop_after:
                            return  # Drops the stream mid-way.
                        time.sleep(period_s)
                except (BrokenPipeError, ConnectionResetError):
                    return

        if unix_path:
            class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
                daemon_threads = True
            self.server = Server(unix_path, Handler)
            self.host_port = None
        else:
            self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self.server.daemon_threads = True
            self.host_port = f"127.0.0.1:{self.server.server_address[1]}"
        self.close = serve_in_background(self.server)


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


@pytest.fixture
def daemons():
    started = []
    directory = tempfile.mkdtemp(prefix="zeusd-fake-")

    def start(**kwargs):
        if kwargs.pop("unix", False):
            kwargs["unix_path"] = os.path.join(directory, f"zeusd{len(started)}.sock")
        d = FakeZeusd(**kwargs)
        started.append(d)
        return d

    yield start
    for d in started:
        d.close()


def test_streams_several_daemons_and_survives_a_dropped_stream(daemons):
    steady = daemons(chunked=True)
    dropping = daemons(drop_after=5, has_cpu=False)
    local = daemons(unix=True)
    client = PowerStreamingClient([
        Config(host_port=steady.host_port, token="tok", gpu_indices=[0, 1], cpu_indices=[0]),
        Config(host_port=dropping.host_port, gpu_indices=[2]),
        Config(socket_path=local.server.server_address, cpu_indices=[]),
    ], reconnect_delay_s=0.05)
    try:
        keys = {steady.host_port, dropping.host_port, local.server.server_address}
        readings = wait_for(lambda: (lambda r: r if set(r) == keys and all(
            x.gpu_power_w for x in r.values()) and r[steady.host_port].cpu_power_w else None)(
                client.get_power()))
        steady_now = readings[steady.host_port]
        assert isinstance(steady_now, PowerReadings)
        assert set(steady_now.gpu_power_w) == {0, 1}
        assert 100.0 < steady_now.gpu_power_w[0] < 110.0  # mW -> W.
        assert 200.0 < steady_now.gpu_power_w[1] < 210.0
        cpu = steady_now.cpu_power_w[0]
        assert isinstance(cpu, CpuPowerReading)
        assert 40.0 < cpu.cpu_w < 41.0 and cpu.dram_w == 5.0
        assert abs(steady_now.timestamp_s - time.time()) < 5
        assert set(readings[dropping.host_port].gpu_power_w) == {2}
        assert readings[dropping.host_port].cpu_power_w == {}  # No CPU discovered: GPU only.
        assert set(readings[local.server.server_address].gpu_power_w) == {0, 1}
        # The dropped stream is reconnected and keeps arriving.
        wait_for(lambda: dropping.gpu_connections >= 2)
        before = client.get_power()[dropping.host_port].gpu_power_w[2]
        wait_for(lambda: client.get_power()[dropping.host_port].gpu_power_w[2] != before)
        # Others were never interrupted.
        assert steady.gpu_connections == 1 and local.gpu_connections == 1
        assert local.cpu_connections == 0  # cpu_indices=[]: no CPU stream at all.
        assert dropping.cpu_connections == 0
    finally:
        client.stop()
    assert "/gpu/stream_power?gpu_ids=0%2C1" in steady.requests
    assert "/cpu/stream_power?cpu_ids=0" in steady.requests
    assert "/gpu/stream_power" in local.requests  # None: every GPU, no query.
    assert "/discover" in steady.requests and "/time" in steady.requests
    assert all(h.get("authorization") == "Bearer tok" for h in steady.headers)
    assert all("authorization" not in h for h in dropping.headers)


@pytest.mark.parametrize("snapshots", [False, True], ids=["zeusd_v05_events", "snapshots"])
def test_reads_zeusd_v05_events_and_snapshots(daemons, snapshots):
    """zeusd v0.5 sends `data: {"timestamp_ms", "gpu_id", "power_mw"}` per
    GPU and `data: {"timestamp_ms", "cpu_id", "cpu_mw", "dram_mw"}` per CPU;
    each event updates its device, the others keep their readings. The
    snapshot shape is read too."""
    d = daemons(snapshots=snapshots)
    client = PowerStreamingClient([Config(host_port=d.host_port, gpu_indices=[0, 1],
                                          cpu_indices=[0, 1])], reconnect_delay_s=0.05)
    try:
        readings = wait_for(lambda: (lambda r: r if r and len(r.gpu_power_w) == 2 and len(
            r.cpu_power_w) == 2 else None)(client.get_power().get(d.host_port)))
    finally:
        client.stop()
    assert 100.0 < readings.gpu_power_w[0] < 110.0 and 200.0 < readings.gpu_power_w[1] < 210.0
    assert 40.0 < readings.cpu_power_w[0].cpu_w < 41.0 and readings.cpu_power_w[0].dram_w == 5.0
    assert readings.cpu_power_w[1].dram_w is None
    assert abs(readings.timestamp_s - time.time()) < 5


def test_iteration_yields_new_snapshots_until_stop(daemons):
    d = daemons()
    client = PowerStreamingClient([Config(host_port=d.host_port, cpu_indices=[])])
    seen = []
    stopper = threading.Thread(target=client.stop)
    for snapshot in client:
        seen.append(snapshot[d.host_port].gpu_power_w[0])
        if len(seen) == 3:
            stopper.start()
    stopper.join()
    assert len(seen) >= 3
    assert seen[0] != seen[2]  # Each snapshot is a newer event.
    # Stopped: the threads are gone and no stream or connection is held open.
    assert all(not t.is_alive() for t in client._threads)
    daemon = client._servers[0].client
    with pytest.raises(ZeusdConnectionError, match="was closed"):
        daemon.get_time()


def test_stop_ends_streams_and_a_dead_daemon_is_retried(daemons):
    d = daemons()
    client = PowerStreamingClient([Config(host_port=d.host_port, cpu_indices=[])],
                                  reconnect_delay_s=0.05)
    wait_for(lambda: client.get_power())
    d.close()
    time.sleep(0.2)  # Connection refused: retried quietly every 50 ms.
    started = time.monotonic()
    client.stop()
    assert time.monotonic() - started < 30  # Promptly; the bound leaves room for a busy machine.
    assert all(not t.is_alive() for t in client._threads)


def test_bad_configs_are_refused_clearly():
    with pytest.raises(ValueError, match="exactly one of host_port"):
        PowerStreamingClient([Config()])
    with pytest.raises(ValueError, match="host:port"):
        PowerStreamingClient([Config(host_port="nohost")])
    with pytest.raises(ValueError, match="listed twice"):
        PowerStreamingClient([Config(host_port="127.0.0.1:1", gpu_indices=[], cpu_indices=[]),
                              Config(host_port="127.0.0.1:1", gpu_indices=[], cpu_indices=[])])


def test_async_iteration_yields_snapshots(daemons):
    import asyncio
    d = daemons()
    client = PowerStreamingClient([Config(host_port=d.host_port, cpu_indices=[])])

    async def take(n):
        seen = []
        async for snapshot in client:
            seen.append(snapshot[d.host_port].gpu_power_w[0])
            if len(seen) == n:
                break
        return seen

    try:
        seen = asyncio.run(take(3))
    finally:
        client.stop()
    assert len(seen) == 3 and seen[0] < seen[2]  # The fake's power grows each event.


def test_takes_the_zeusd_configs_of_zeus_utils(daemons):
    zeusd = pytest.importorskip("zeus.utils.zeusd")  # Until that module is merged.
    tcp, unix = daemons(), daemons(unix=True)
    host, port = tcp.host_port.split(":")
    client = PowerStreamingClient([
        zeusd.ZeusdConfig.tcp(host, int(port), token="t", gpu_indices=[1], cpu_indices=[]),
        zeusd.ZeusdConfig.uds(unix.server.server_address, cpu_indices=[0]),
    ])
    try:
        readings = wait_for(lambda: (lambda r: r if len(r) == 2 and all(
            x.gpu_power_w for x in r.values()) and r[unix.server.server_address].cpu_power_w
            else None)(client.get_power()))
    finally:
        client.stop()
    assert set(readings) == {tcp.host_port, unix.server.server_address}
    assert set(readings[tcp.host_port].gpu_power_w) == {1}
    assert set(readings[unix.server.server_address].cpu_power_w) == {0}


def test_streams_go_through_the_httpx_client_of_the_config():
    """A ZeusdConfig whose make_client() is replaced (a mock transport, as
    users inject proxies or TLS) carries the discovery, the clock's round
    trips and both streams: the client never opens a socket of its own."""
    import httpx
    from zeus.utils.zeusd import ZeusdConfig
    seen = []

    def handler(request):
        seen.append(request)
        answer = zeusd_discovery_answer(request.url.path)
        if answer is not None:
            return httpx.Response(answer[0], json=answer[1])
        if request.url.path == "/cpu/stream_power":
            event = {"timestamp_ms": 2000, "cpu_id": 0, "cpu_mw": 30000, "dram_mw": None}
            return httpx.Response(200, headers={"Content-Type": "text/event-stream"},
                                  content=b"data: " + json.dumps(event).encode() + b"\n\n")
        body = b"".join(b"data: " + json.dumps({"timestamp_ms": 1000 + n, "gpu_id": i,
                                                "power_mw": 100000 * (i + 1)}).encode() + b"\n\n"
                        for n in range(3) for i in (0, 1))
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=body)

    class MockedConfig(ZeusdConfig):
        def make_client(self):
            return httpx.Client(transport=httpx.MockTransport(handler),
                                headers={"X-Through": "mock"})

    client = PowerStreamingClient([MockedConfig(host_port="zeusd.invalid:4938",
                                                gpu_indices=[0, 1], cpu_indices=[0])],
                                  reconnect_delay_s=0.05)
    try:
        readings = wait_for(lambda: (lambda r: r if r and len(r.gpu_power_w) == 2 and
                                     r.cpu_power_w else None)(
            client.get_power().get("zeusd.invalid:4938")))
    finally:
        client.stop()
    assert readings.gpu_power_w == {0: 100.0, 1: 200.0}
    assert readings.cpu_power_w == {0: CpuPowerReading(cpu_w=30.0, dram_w=None)}
    assert abs(readings.timestamp_s - 2.0) < 5  # The mock's clock agrees with ours.
    assert all(r.headers["x-through"] == "mock" for r in seen)
    targets = {(r.url.path, r.url.query.decode()) for r in seen}
    assert ("/gpu/stream_power", "gpu_ids=0%2C1") in targets
    assert ("/cpu/stream_power", "cpu_ids=0") in targets
    assert ("/discover", "") in targets and ("/time", "") in targets
    assert {r.headers["accept"] for r in seen if "stream" in r.url.path} == {"text/event-stream"}


def test_an_unreachable_daemon_raises_on_construction_as_the_original():
    port = free_port()
    with pytest.raises(ZeusdConnectionError, match=f"Cannot reach Zeusd at 127.0.0.1:{port}"):
        PowerStreamingClient([Config(host_port=f"127.0.0.1:{port}")])


def test_requested_devices_are_checked_against_the_daemon(daemons, caplog):
    d = daemons(has_cpu=False)
    with pytest.raises(ValueError, match=re.escape(
            f"GPU indices [5] requested for {d.host_port} but only [0, 1, 2] are available")):
        PowerStreamingClient([Config(host_port=d.host_port, gpu_indices=[0, 5])])
    with pytest.raises(ValueError, match=re.escape(
            f"CPU indices [0] requested for {d.host_port} but only [] are available")):
        PowerStreamingClient([Config(host_port=d.host_port, cpu_indices=[0])])
    # Without the scope: refused when asked for explicitly, skipped otherwise.
    no_cpu_read = daemons(groups=("gpu-read",))
    with pytest.raises(ZeusdCapabilityError, match=re.escape(
            f"Token for {no_cpu_read.host_port} lacks required scope 'cpu-read' "
            "(explicitly requested cpu_indices=[0])")):
        PowerStreamingClient([Config(host_port=no_cpu_read.host_port, cpu_indices=[0])])
    caplog.set_level(logging.INFO, logger="zeus.monitor.power_streaming")
    client = PowerStreamingClient([Config(host_port=no_cpu_read.host_port, gpu_indices=[1])])
    try:
        assert wait_for(lambda: client.get_power().get(no_cpu_read.host_port))
    finally:
        client.stop()
    assert all("cpu" not in t.name for t in client._threads)
    assert not any(r.startswith("/cpu/") for r in no_cpu_read.requests)
    assert any("lacks 'cpu-read' scope; skipping CPU streaming" in r.getMessage()
               for r in caplog.records)


def test_timestamps_are_in_this_machines_clock(daemons):
    """A daemon whose clock is an hour ahead: its timestamps are shifted by
    the offset measured over GET /time, as the original does."""
    d = daemons(clock_offset_s=3600.0)
    client = PowerStreamingClient([Config(host_port=d.host_port, cpu_indices=[])])
    try:
        readings = wait_for(lambda: client.get_power().get(d.host_port))
    finally:
        client.stop()
    assert abs(readings.timestamp_s - time.time()) < 60
    assert sum(1 for r in d.requests if r == "/time") == 5
