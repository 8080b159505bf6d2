"""The limits of the zeus package's urllib clients (zeus.utils.http_limits)
against hostile servers on loopback: a redirect to another origin does not
carry the bearer token or the ElectricityMaps auth-token; a huge answer is
refused as it arrives; a server that drips its answer meets the request's
total deadline."""

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import serve_in_background
from zeus.exception import InternalError, UnavailableError
from zeus.monitor.carbon import ElectrictyMapsClient, ZeusCarbonIntensityHTTPError
from zeus.optimizer.batch_size.http import BatchSizeServer
from zeus.utils import http_limits


class Server:
    """A loopback server whose GET and POST answers come from `handle(path,
    handler)`; records each request's path and headers."""

    def __init__(self, handle):
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                try:
                    handle(self.path, self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.close = serve_in_background(self.httpd)


def answer(handler, status, body=b"", headers=()):
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def servers():
    started = []

    def start(handle):
        s = Server(handle)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def test_a_redirect_to_another_origin_drops_the_credentials(servers):
    elsewhere = servers(lambda path, h: answer(h, 200, b'{"carbonIntensity": 100, "ok": 1}'))

    def redirect(path, handler):
        if path.startswith("/same"):  # Within the origin.
            answer(handler, 302, headers=[("Location", "/here" + path)])
        elif path.startswith("/here"):
            answer(handler, 200, b'{"carbonIntensity": 100}')
        else:  # Another port: another origin.
            answer(handler, 302, headers=[("Location", elsewhere.url + path)])

    origin = servers(redirect)

    bso = BatchSizeServer(origin.url, token="bearer-secret", timeout_s=30)
    bso.next_batch_size("job")
    client = ElectrictyMapsClient((1.0, 2.0), api_key="em-secret", base_url=origin.url)
    assert client.get_current_carbon_intensity() == 100.0
    assert [h.get("authorization") for _, h in origin.requests[:1]] == ["Bearer bearer-secret"]
    assert origin.requests[1][1].get("auth-token") == "em-secret"
    for path, headers in elsewhere.requests:
        assert "authorization" not in headers and "auth-token" not in headers, (path, headers)
    # On the same origin, the credentials go along.
    same = ElectrictyMapsClient((1.0, 2.0), api_key="em-secret", base_url=origin.url + "/same")
    assert same.get_current_carbon_intensity() == 100.0
    assert origin.requests[-1][0].startswith("/here") and \
        origin.requests[-1][1].get("auth-token") == "em-secret"


def huge(path, handler):
    size = http_limits.MAX_BODY_BYTES + (1 << 20)
    handler.send_response(200)
    handler.send_header("Content-Length", str(size))
    handler.end_headers()
    chunk = b" " * (1 << 16)
    for _ in range(size // len(chunk)):
        handler.wfile.write(chunk)


def test_an_answer_beyond_the_body_limit_is_refused(servers):
    server = servers(huge)
    with pytest.raises(ZeusCarbonIntensityHTTPError, match="answer body larger than the limit"):
        ElectrictyMapsClient((1.0, 2.0), base_url=server.url).get_current_carbon_intensity()
    with pytest.raises(InternalError, match="answer body larger than the limit"):
        BatchSizeServer(server.url, timeout_s=60).next_batch_size("job")


def drip(path, handler):
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(1000):  # One byte every 0.1 s: 100 s in all.
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.1)


def test_a_dripping_server_meets_the_total_deadline(servers):
    server = servers(drip)
    with pytest.raises(ZeusCarbonIntensityHTTPError, match="no complete answer within 1 s"):
        ElectrictyMapsClient((1.0, 2.0), base_url=server.url,
                             timeout_s=1.0).get_current_carbon_intensity()
    with pytest.raises(UnavailableError, match="did not answer GET .* within 1 s"):
        BatchSizeServer(server.url, timeout_s=1.0).next_batch_size("job")


def test_with_deadline_hands_back_the_result_or_the_error():
    assert http_limits.with_deadline(lambda: 42, 5.0) == 42
    with pytest.raises(KeyError):
        http_limits.with_deadline(lambda: {}["x"], 5.0)


def test_a_hung_pushgateway_costs_end_window_one_bounded_push(monkeypatch):
    import socket

    import zeus.metric
    from zeus.exception import ZeusBaseError
    from zeus.metric import EnergyHistogram

    # Accepts connections (the backlog) and never answers.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    monkeypatch.setattr(zeus.metric, "PUSH_TIMEOUT_S", 0.5)
    try:
        histogram = EnergyHistogram(cpu_indices=[], gpu_indices=[0], job="hung",
                                    pushgateway_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
        histogram.begin_window("step")
        with pytest.raises(ZeusBaseError, match="no complete answer within 0.5 s"):
            histogram.end_window("step")
    finally:
        listener.close()
