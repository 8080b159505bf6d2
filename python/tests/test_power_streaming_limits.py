"""PowerStreamingClient's bounds on a daemon that answers too slowly: the
stream's headers arrive within a total deadline, each line of the stream
ends within a deadline of its first byte, and the one-shot CPU probe on
construction completes within its total deadline. A daemon that drips bytes
(each one resetting a socket timeout) breaks them; the stream is dropped,
logged and reconnected. The deadlines are shortened here so that the tests
stay short; the fakes drip until the client leaves."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from zeus.monitor import power_streaming
from zeus.monitor.power_streaming import PowerStreamingClient
from zeus.utils.zeusd import ZeusdConfig

from conftest import wait_for_gpu_power

DRIP_PERIOD_S = 0.05


class FakeDaemon:
    """A fake daemon on loopback TCP. GPU stream connection n (from 1)
    first runs `prelude(n, handler)`, which may write anything (status and
    headers included) and returns False to end the connection there, True
    to go on with a good stream of GPU 0 at 55 W (status and headers
    written unless the prelude wrote them: it returns "streaming").
    `/cpu/get_power` runs `cpu_probe(handler)`."""

    def __init__(self, prelude, cpu_probe=None):
        self.connections = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                try:
                    if self.path.startswith("/cpu/get_power") and cpu_probe is not None:
                        cpu_probe(self)
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
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.end_headers()
                    while True:
                        event = {"timestamp_ms": int(time.time() * 1000), "gpu_id": 0,
                                 "power_mw": 55000}
                        self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                        self.wfile.flush()
                        time.sleep(0.02)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.key = f"127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def drip(handler, byte=b"7"):
    """Writes `byte` every DRIP_PERIOD_S until the client hangs up."""
    while True:
        handler.wfile.write(byte)
        handler.wfile.flush()
        time.sleep(DRIP_PERIOD_S)


def stream_from(fake, **kwargs):
    return PowerStreamingClient([ZeusdConfig.tcp("127.0.0.1", fake.port, gpu_indices=[0],
                                                 **kwargs)], reconnect_delay_s=0.05)


def messages(caplog):
    return [r.getMessage()[:300] for r in caplog.records]


def test_a_line_dripped_past_its_deadline_drops_the_stream(monkeypatch, caplog):
    monkeypatch.setattr(power_streaming, "_LINE_DEADLINE_S", 0.5, raising=False)

    def dripping_first(connection, handler):
        if connection > 1:
            return True
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.wfile.write(b'data: {"timestamp_ms": 1, "gpu_id": 0, "power_mw": ')
        drip(handler)
        return False

    fake = FakeDaemon(dripping_first)
    client = stream_from(fake, cpu_indices=[])
    try:
        mine = wait_for_gpu_power(client, fake.key)
        assert mine is not None and mine.gpu_power_w == {0: 55.0}
        assert fake.connections >= 2
    finally:
        client.stop()
        fake.close()
    assert any("a line not ended within 0.5 s" in m for m in messages(caplog)), messages(caplog)


def test_headers_dripped_past_the_open_deadline_drop_the_stream(monkeypatch, caplog):
    monkeypatch.setattr(power_streaming, "_OPEN_DEADLINE_S", 0.5, raising=False)

    def headers_dripped_first(connection, handler):
        if connection > 1:
            return True
        handler.wfile.write(b"HTTP/1.0 200 OK\r\nX-Drip: ")
        drip(handler, b"a")
        return False

    fake = FakeDaemon(headers_dripped_first)
    client = stream_from(fake, cpu_indices=[])
    try:
        mine = wait_for_gpu_power(client, fake.key)
        assert mine is not None and mine.gpu_power_w == {0: 55.0}
        assert fake.connections >= 2
    finally:
        client.stop()
        fake.close()
    assert any("no answer to GET /gpu/stream_power within 0.5 s" in m
               for m in messages(caplog)), messages(caplog)


def test_stop_does_not_wait_for_a_stream_still_opening(monkeypatch):
    """stop() returns, and the thread ends, while the daemon is still
    dripping the headers of the stream's answer (the open deadline is an
    hour here)."""
    monkeypatch.setattr(power_streaming, "_OPEN_DEADLINE_S", 3600.0, raising=False)
    dripping = threading.Event()

    def headers_dripped(connection, handler):
        handler.wfile.write(b"HTTP/1.0 200 OK\r\nX-Drip: ")
        dripping.set()
        drip(handler, b"a")
        return False

    fake = FakeDaemon(headers_dripped)
    client = stream_from(fake, cpu_indices=[])
    try:
        assert dripping.wait(60)
    finally:
        client.stop()
        fake.close()
    assert all(not t.is_alive() for t in client._threads)


def test_the_cpu_probe_has_a_total_deadline(monkeypatch, caplog):
    """A daemon that drips its answer to `/cpu/get_power` keeps the
    constructor no longer than the probe's deadline: the client is built
    while the daemon is still dripping, and it streams CPU power anyway (the
    CPU stream's thread keeps trying)."""
    monkeypatch.setattr(power_streaming, "_PROBE_TIMEOUT_S", 0.5, raising=False)
    probe_ended = threading.Event()

    def dripping_probe(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        try:
            # Long enough to outlast any reasonable probe, short enough
            # that a client without a total deadline ends the test.
            for _ in range(int(30 / DRIP_PERIOD_S)):
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(DRIP_PERIOD_S)
        finally:
            probe_ended.set()

    fake = FakeDaemon(lambda connection, handler: True, cpu_probe=dripping_probe)
    client = stream_from(fake)
    try:
        assert not probe_ended.is_set()
        assert any(t.name.startswith("zeus power stream cpu") for t in client._threads)
        assert wait_for_gpu_power(client, fake.key) is not None
    finally:
        client.stop()
        fake.close()
    assert any("could not ask" in m and "for CPU power" in m for m in messages(caplog)), \
        messages(caplog)


@pytest.mark.parametrize("status", [401, 500])
def test_a_refused_stream_is_logged_with_its_answer_and_retried(status, caplog):
    def refused_first(connection, handler):
        if connection > 1:
            return True
        body = json.dumps({"error": f"refused with {status}"}).encode()
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return False

    fake = FakeDaemon(refused_first)
    client = stream_from(fake, cpu_indices=[])
    try:
        assert wait_for_gpu_power(client, fake.key) is not None
    finally:
        client.stop()
        fake.close()
    assert any(f"HTTP {status}" in m and f"refused with {status}" in m
               for m in messages(caplog)), messages(caplog)
