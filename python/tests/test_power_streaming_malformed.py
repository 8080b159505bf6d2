"""PowerStreamingClient keeps a stream whose daemon sends malformed events:
each one is logged and skipped, and the events after it still arrive on the
same connection (no reconnect)."""

from zeus.monitor.power_streaming import PowerStreamingClient
from zeus.utils.zeusd import ZeusdConfig

from conftest import FakeStreamDaemon, start_event_stream, wait_for_gpu_power

MALFORMED = [
    b'{"timestamp_ms": 1, "power_mw": {"0": 1' + b"0" * 400 + b"}}",  # OverflowError.
    b"[" * 100000 + b"]" * 100000,  # RecursionError.
    b'{"power_mw": {"0": {"nested": []}}}',  # TypeError.
    b"not json",
]


def malformed_first(connection, handler):
    """Every connection starts with the MALFORMED events."""
    start_event_stream(handler)
    for event in MALFORMED:
        handler.wfile.write(b"data: " + event + b"\n\n")
    return "streaming"


def endless_line_first(connection, handler):
    """The first connection sends a 2 MiB data line with no end and stays
    open until the client hangs up; later ones go straight to snapshots."""
    if connection > 1:
        return True
    start_event_stream(handler)
    handler.wfile.write(b"data: " + b"7" * (2 << 20))
    handler.wfile.flush()
    handler.rfile.read()
    return False


def test_malformed_events_are_skipped_and_the_stream_survives(caplog):
    fake = FakeStreamDaemon(malformed_first, power_mw=123000)
    client = PowerStreamingClient([ZeusdConfig.tcp("127.0.0.1", fake.port, gpu_indices=[0],
                                                   cpu_indices=[])], reconnect_delay_s=60.0)
    try:
        mine = wait_for_gpu_power(client, f"127.0.0.1:{fake.port}")
        assert mine is not None and mine.gpu_power_w == {0: 123.0}
        assert fake.connections == 1  # The same stream, never reconnected.
        assert all(t.is_alive() for t in client._threads)
    finally:
        client.stop()
        fake.close()
    skipped = [r for r in caplog.records if "not a power snapshot" in r.getMessage()]
    assert len(skipped) == len(MALFORMED), [r.getMessage()[:200] for r in caplog.records]


def test_an_endless_line_is_cut_at_the_cap_and_the_stream_reconnects(caplog):
    """A daemon that sends a line with no end is read up to 1 MiB, never
    more: the stream is dropped, logged, and reconnected."""
    fake = FakeStreamDaemon(endless_line_first, power_mw=77000)
    client = PowerStreamingClient([ZeusdConfig.tcp("127.0.0.1", fake.port, gpu_indices=[0],
                                                   cpu_indices=[])], reconnect_delay_s=0.05)
    try:
        mine = wait_for_gpu_power(client, f"127.0.0.1:{fake.port}")
        assert mine is not None and mine.gpu_power_w == {0: 77.0}
        assert fake.connections >= 2
    finally:
        client.stop()
        fake.close()
    assert any("longer than 1048576 bytes" in r.getMessage() for r in caplog.records), \
        [r.getMessage()[:200] for r in caplog.records]
