"""PowerStreamingClient's bounds on a daemon that answers too slowly: the
stream's headers arrive within a total deadline, each line of the stream
ends within a deadline of its first byte, and the discovery on construction
completes within its total deadline. A daemon that drips bytes
(each one resetting a socket timeout) breaks them; the stream is dropped,
logged and reconnected. The deadlines are shortened here so that the tests
stay short; the fakes drip until the client leaves."""

import json
import threading
import time

import pytest

from zeus.monitor import power_streaming
from zeus.monitor.power_streaming import PowerStreamingClient
from zeus.utils import zeusd
from zeus.utils.zeusd import ZeusdConfig, ZeusdConnectionError

from conftest import FakeStreamDaemon as FakeDaemon, wait_for_gpu_power

DRIP_PERIOD_S = 0.05


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


def test_construction_has_a_total_deadline(monkeypatch):
    """A daemon that drips its answer to `/discover` keeps the constructor
    no longer than ZeusdClient's deadline: it raises ZeusdConnectionError
    while the daemon is still dripping."""
    monkeypatch.setattr(zeusd, "REQUEST_TIMEOUT_S", 0.5)
    discover_ended = threading.Event()

    def dripping_discover(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        try:
            # Long enough to outlast any reasonable deadline, short enough
            # that a client without a total deadline ends the test.
            for _ in range(int(30 / DRIP_PERIOD_S)):
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(DRIP_PERIOD_S)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            discover_ended.set()

    fake = FakeDaemon(lambda connection, handler: True, discover=dripping_discover)
    try:
        with pytest.raises(ZeusdConnectionError, match="did not answer GET /discover within"):
            stream_from(fake)
        assert not discover_ended.is_set()
    finally:
        fake.close()


@pytest.mark.parametrize("status", [401, 403, 500])
def test_a_refused_stream_is_logged_with_its_answer(status, caplog):
    """HTTP 401 and 403 (a token refused, a scope missing) are logged as
    errors and the stream is not retried, as the original; other refusals
    are retried."""
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
        if status == 500:
            assert wait_for_gpu_power(client, fake.key) is not None
        else:
            client._threads[0].join(timeout=60)
            assert not client._threads[0].is_alive()
            assert client.get_power() == {} and fake.connections == 1
    finally:
        client.stop()
        fake.close()
    assert any(f"HTTP {status}" in m and f"refused with {status}" in m
               for m in messages(caplog)), messages(caplog)
