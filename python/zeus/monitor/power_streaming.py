"""Live GPU and CPU power from several Zeus daemons at once.

PowerStreamingClient subscribes to the Server-Sent Event streams of each
daemon: `GET /gpu/stream_power?gpu_ids=0,1` and `GET /cpu/stream_power?
cpu_ids=0`, whose events are `data: <JSON>` lines in zeusd v0.5's shape, one
per device per sample: {"timestamp_ms", "gpu_id", "power_mw"} and
{"timestamp_ms", "cpu_id", "cpu_mw", "dram_mw"} (mW; dram_mw may be null).
Each event updates its device's reading. An event holding a snapshot of
every device, the JSON of `/gpu/get_power` ({"timestamp_ms", "power_mw":
{"0": mW}}) or `/cpu/get_power` ({"timestamp_ms", "power_mw": {"0":
{"cpu_mw", "dram_mw"}}}), is read too and replaces that kind's readings.
One thread per stream per daemon holds the connection (httpx, over TCP or a
Unix socket) and reconnects after `reconnect_delay_s` when it drops; the
latest snapshot of every daemon is kept in watts.

A daemon is described by a zeus.utils.zeusd.ZeusdConfig (or any object with
its attributes: `host_port` "host:port" or `socket_path`, `token`,
`gpu_indices`, `cpu_indices`; it is copied into a ZeusdConfig). Construction
connects to every daemon as the original does: a ZeusdClient discovers it
(ZeusdConnectionError when it cannot be reached), the requested devices and
scopes are checked, and five `GET /time` round trips estimate the offset of
the daemon's clock, which is added to every timestamp (timestamp_s is in this
machine's clock). Every request, streams included, goes through the
config's `make_client()`, so a replaced one (a mock transport, a proxy, TLS)
carries them all. For gpu_indices and cpu_indices, None streams every device
the daemon has when the token may read them (otherwise that kind is skipped,
logged at INFO), a list exactly those devices (ValueError naming the missing
indices, ZeusdCapabilityError naming a missing scope), [] none of that kind.

Limits on what a daemon can make the client hold or wait for: one event
(its lines up to the blank line) is at most _MAX_EVENT_BYTES (1 MiB; a
longer one drops the stream, never more than that and one read is held);
the stream's answer (status and headers) must arrive within
_OPEN_DEADLINE_S in all; each line must end within _LINE_DEADLINE_S of its
first byte, and a stream silent for _READ_TIMEOUT_S is dead; the requests of
construction have ZeusdClient's deadline and size cap. A stream that breaks
a limit is dropped, logged and reconnected; one refused with HTTP 401 or 403
is logged as an error and not retried.
"""

import asyncio
import json
import logging
import socket
import statistics
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Dict, Iterator, List, Optional, Sequence, TypeVar

import httpx

from zeus.utils.zeusd import ZeusdCapabilityError, ZeusdClient, ZeusdConfig

logger = logging.getLogger(__name__)

_V = TypeVar("_V")

# A stream silent for this long is taken as dead and reconnected.
_READ_TIMEOUT_S = 30.0
# The stream's status line and headers arrive within this, in all.
_OPEN_DEADLINE_S = 30.0
# A line of the stream ends within this of its first byte.
_LINE_DEADLINE_S = 30.0
# Connecting a stream (TCP or Unix socket) takes at most this.
_CONNECT_TIMEOUT_S = 5.0
# GET /time round trips whose median gives a daemon's clock offset.
_CLOCK_SAMPLES = 5


@dataclass
class CpuPowerReading:
    """One CPU socket's power, W (dram_w None where DRAM is not measured)."""

    cpu_w: float = 0.0
    dram_w: Optional[float] = None


@dataclass
class PowerReadings:
    """The latest readings of one daemon.

    Attributes:
        timestamp_s: Unix time of the newest reading, s, in this machine's
            clock (the daemon's timestamp plus its estimated clock offset).
        gpu_power_w: GPU index -> W.
        cpu_power_w: CPU index -> CpuPowerReading.
    """

    timestamp_s: float = 0.0
    gpu_power_w: Dict[int, float] = field(default_factory=dict)
    cpu_power_w: Dict[int, CpuPowerReading] = field(default_factory=dict)


# The most bytes one event (its lines up to the blank line) may take: a
# daemon's event is under a kilobyte; the C++ relay caps answers at 1 MiB.
_MAX_EVENT_BYTES = 1 << 20


def _as_config(config) -> ZeusdConfig:
    """`config` as a ZeusdConfig: itself, or a copy of the attributes of an
    object that has them. ValueError naming what is wrong."""
    socket_path = getattr(config, "socket_path", None)
    host_port = getattr(config, "host_port", None)
    if host_port is None and getattr(config, "host", None) is not None:
        host_port = f"{config.host}:{config.port}"
    if (host_port is None) == (socket_path is None):
        raise ValueError("PowerStreamingClient: each server needs exactly one of host_port "
                         f"(\"host:port\") and socket_path, got {config!r}")
    if host_port is not None:
        host, sep, port = host_port.rpartition(":")
        if not sep or not port.isdigit() or not host or "/" in host:
            raise ValueError(f"PowerStreamingClient: host_port must be \"host:port\", got "
                             f"{host_port!r}")
    if isinstance(config, ZeusdConfig):
        return config
    return ZeusdConfig(host_port=host_port, socket_path=socket_path,
                       token=getattr(config, "token", None),
                       gpu_indices=getattr(config, "gpu_indices", None),
                       cpu_indices=getattr(config, "cpu_indices", None))


def _wants(indices, available, may_read, scope, kind, endpoint) -> bool:
    """Whether to stream a kind of device: `indices` None streams what the
    daemon has if the token may read it (else logged and skipped); [] never;
    a list needs every index served (ValueError) and the scope
    (ZeusdCapabilityError)."""
    if indices is not None:
        if not indices:
            return False
        missing = sorted(set(indices) - set(available))
        if missing:
            raise ValueError(f"{kind} indices {missing} requested for {endpoint} but only "
                             f"{sorted(available)} are available")
        if not may_read:
            raise ZeusdCapabilityError(
                f"Token for {endpoint} lacks required scope '{scope}' (explicitly requested "
                f"{kind.lower()}_indices={list(indices)})")
        return True
    if not available:
        logger.info("No %ss available on %s; skipping %s power streaming", kind, endpoint, kind)
        return False
    if not may_read:
        logger.info("Token for %s lacks '%s' scope; skipping %s streaming", endpoint, scope, kind)
        return False
    return True


class _Server:
    """One daemon, connected: its config, its discovered ZeusdClient, what
    to stream from it and its clock's offset from ours (s, added to its
    timestamps)."""

    def __init__(self, config: ZeusdConfig):
        self.config = config
        self.key = config.endpoint
        self.gpu_indices = config.gpu_indices
        self.cpu_indices = config.cpu_indices
        self.client = None
        self.stream_gpu = self.stream_cpu = False
        self.clock_offset_s = 0.0

    def connect(self) -> None:
        """Discovers the daemon and decides what to stream (raises
        ZeusdConnectionError, ValueError, ZeusdCapabilityError)."""
        self.client = ZeusdClient(self.config)
        self.stream_gpu = _wants(self.gpu_indices, self.client.gpu_ids, self.client.can_read_gpu,
                                 "gpu-read", "GPU", self.key)
        self.stream_cpu = _wants(self.cpu_indices, self.client.cpu_ids, self.client.can_read_cpu,
                                 "cpu-read", "CPU", self.key)
        self.clock_offset_s = self._clock_offset_s()

    def _clock_offset_s(self) -> float:
        """Median over _CLOCK_SAMPLES round trips of (our time at the
        midpoint - the daemon's /time), s; ZeusdConnectionError when /time
        fails."""
        offsets = []
        for _ in range(_CLOCK_SAMPLES):
            sent = time.time()
            daemon_s = self.client.get_time()
            offsets.append((sent + time.time()) / 2.0 - daemon_s)
        offset = statistics.median(offsets)
        logger.info("PowerStreamingClient: clock offset of %s: %.4f s (median of %d)", self.key,
                    offset, _CLOCK_SAMPLES)
        return offset

    def request(self, client, route, indices, ids_name, accept, timeout) -> httpx.Request:
        params = None if indices is None else {ids_name: ",".join(str(i) for i in indices)}
        return client.build_request("GET", self.config.url(route), params=params,
                                    headers={"Accept": accept}, timeout=timeout)


def _head_of_body(response, limit, deadline_s) -> str:
    """At most `limit` bytes of the body, as much as arrived within
    `deadline_s` (for an error message)."""
    body = bytearray()
    end = time.monotonic() + deadline_s
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= limit or time.monotonic() > end:
            break
    return bytes(body[:limit]).decode("utf-8", "replace").strip()


def _shutdown(response) -> None:
    """Shuts down the socket under a streamed response (a blocked read
    returns); nothing for a transport without one (a mock)."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _RefusedError(ConnectionError):
    """A stream refused for its token (HTTP 401 or 403)."""


class PowerStreamingClient:
    """Streams power from several Zeus daemons.

    Args:
        servers: One ZeusdConfig per daemon.
        reconnect_delay_s: Wait before reconnecting a dropped stream.

    Raises (on construction, as the original): ZeusdConnectionError for a
    daemon that cannot be reached, ValueError for a bad config or requested
    indices a daemon lacks, ZeusdCapabilityError for requested devices the
    token may not read.

    Streams start on construction. get_power() returns the latest readings;
    iterating the client (for, or async for) yields a snapshot every time
    one arrives, until stop(). Thread-safety: every method may be called
    from any thread.
    """

    def __init__(self, servers: Sequence, reconnect_delay_s: float = 1.0) -> None:
        if not reconnect_delay_s >= 0:
            raise ValueError(f"PowerStreamingClient: reconnect_delay_s must be >= 0, got "
                             f"{reconnect_delay_s!r}")
        self._servers = [_Server(_as_config(config)) for config in servers]
        keys = [s.key for s in self._servers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"PowerStreamingClient: the same daemon is listed twice: {keys}")
        try:
            for server in self._servers:
                server.connect()
        except BaseException:
            for server in self._servers:  # Those connected before the failure.
                if server.client is not None:
                    server.client.close()
            raise
        self._reconnect_delay_s = reconnect_delay_s
        self._stop_event = threading.Event()
        self._changed = threading.Condition()
        self._readings: Dict[str, PowerReadings] = {}
        self._version = 0
        # The open streams' responses (stop() shuts their sockets down),
        # under _wake, which stop() also notifies.
        self._connections = set()
        self._wake = threading.Condition()
        self._threads: List[threading.Thread] = []
        for server in self._servers:
            if server.stream_gpu:
                self._start(server, "gpu")
            if server.stream_cpu:
                self._start(server, "cpu")
        if not self._threads:
            logger.warning("PowerStreamingClient: no GPU or CPU power stream was started; check "
                           "that the daemons have the expected devices and the token their "
                           "read scopes")

    def _start(self, server, kind):
        thread = threading.Thread(target=self._stream_forever, args=(server, kind), daemon=True,
                                  name=f"zeus power stream {kind} {server.key}")
        self._threads.append(thread)
        thread.start()

    def _update(self, server, kind, event):
        """Folds one event into the server's readings: zeusd v0.5's one
        device ({"timestamp_ms", "gpu_id", "power_mw"} or {"timestamp_ms",
        "cpu_id", "cpu_mw", "dram_mw"}) updates that device; a snapshot of
        every device ({"timestamp_ms", "power_mw": {"<id>": ...}}) replaces
        the kind's readings."""
        timestamp_ms = event.get("timestamp_ms")
        id_key = f"{kind}_id"
        if id_key in event:
            index = event[id_key]
            if isinstance(index, bool) or not isinstance(index, int):
                raise ValueError(f"{id_key} is not an integer in {event!r}")
            values = {index: self._reading(kind, event)}
            merge = True
        else:
            power_mw = event.get("power_mw")
            if not isinstance(power_mw, dict):
                raise ValueError(f"neither {id_key} nor a power_mw object in {event!r}")
            if kind == "gpu":
                values = {int(k): self._reading(kind, {"power_mw": v})
                          for k, v in power_mw.items()}
            else:
                values = {int(k): self._reading(kind, v) for k, v in power_mw.items()}
            merge = False
        with self._changed:
            current = self._readings.get(server.key) or PowerReadings()
            field_name = "gpu_power_w" if kind == "gpu" else "cpu_power_w"
            if merge:
                values = {**getattr(current, field_name), **values}
            current = replace(current, **{field_name: values})
            if timestamp_ms is not None:
                timestamp_s = float(timestamp_ms) / 1000.0 + server.clock_offset_s
                current = replace(current, timestamp_s=max(current.timestamp_s, timestamp_s))
            self._readings[server.key] = current
            self._version += 1
            self._changed.notify_all()

    @staticmethod
    def _reading(kind, fields):
        """W from one device's mW fields: a float for a GPU, a
        CpuPowerReading for a CPU."""
        if kind == "gpu":
            return float(fields["power_mw"]) / 1000.0
        dram = fields.get("dram_mw")
        return CpuPowerReading(cpu_w=float(fields["cpu_mw"]) / 1000.0,
                               dram_w=None if dram is None else float(dram) / 1000.0)

    def _open(self, client, request):
        """Sends the stream's request: its response once the status and
        headers arrived (registered for stop()), None when stop() came
        first; ConnectionError when they did not arrive within
        _OPEN_DEADLINE_S. The send runs on a helper thread so that neither a
        slow daemon nor stop() waits on it; a response it gets after the
        caller gave up is closed (and the caller closes the client)."""
        outcome = {}

        def send():
            try:
                response = client.send(request, stream=True)
            except BaseException as e:  # noqa: BLE001 - handed to the caller.
                with self._wake:
                    outcome["error"] = e
                    self._wake.notify_all()
                return
            with self._wake:
                if "gave_up" not in outcome:
                    outcome["response"] = response
                    self._wake.notify_all()
                    return
            response.close()

        threading.Thread(target=send, daemon=True, name="zeus power stream open").start()
        with self._wake:
            self._wake.wait_for(lambda: len(outcome) or self._stop_event.is_set(),
                                timeout=_OPEN_DEADLINE_S)
            response = outcome.get("response")
            if response is not None and not self._stop_event.is_set():
                self._connections.add(response)
                return response
            outcome["gave_up"] = True
        if response is not None:
            response.close()
        if "error" in outcome:
            raise outcome["error"]
        if self._stop_event.is_set():
            return None
        raise ConnectionError(f"no answer to GET {request.url.path} within "
                              f"{_OPEN_DEADLINE_S:g} s")

    def _stream_once(self, server, kind):
        ids_name = "gpu_ids" if kind == "gpu" else "cpu_ids"
        indices = server.gpu_indices if kind == "gpu" else server.cpu_indices
        client = server.config.make_client()  # One per stream.
        try:
            request = server.request(client, f"/{kind}/stream_power", indices, ids_name,
                                     "text/event-stream",
                                     httpx.Timeout(_READ_TIMEOUT_S, connect=_CONNECT_TIMEOUT_S))
            response = self._open(client, request)
            if response is None:
                return
            try:
                if response.status_code != 200:
                    body = _head_of_body(response, 2048, _LINE_DEADLINE_S)
                    error = _RefusedError if response.status_code in (401, 403) \
                        else ConnectionError
                    raise error(f"HTTP {response.status_code}: {body[:200]}")
                self._read_events(server, kind, response.iter_bytes())
            finally:
                with self._wake:
                    self._connections.discard(response)
                response.close()
        finally:
            client.close()

    def _read_events(self, server, kind, chunks):
        """Reads SSE lines from `chunks` (the body's bytes as they arrive)
        and folds each event into the readings, until stop() or the end of
        the stream (ConnectionError), or a limit is broken (ConnectionError:
        an event over _MAX_EVENT_BYTES, a line not ended within
        _LINE_DEADLINE_S of its first byte)."""
        partial = b""  # The bytes of a line whose end has not arrived.
        line_started = None  # When its first byte arrived (monotonic s).
        data_lines = []
        event_bytes = 0  # The current event's bytes in complete lines.
        for chunk in chunks:
            if self._stop_event.is_set():
                return
            now = time.monotonic()
            if line_started is None and chunk:
                line_started = now
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            for raw in lines:
                event_bytes += len(raw) + 1
                line_started = now
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if line.startswith("data:"):
                    data_lines.append(line[5:].lstrip(" "))
                elif not line:
                    event_bytes = 0
                    if data_lines:
                        payload = "\n".join(data_lines)
                        data_lines = []
                        try:
                            self._update(server, kind, json.loads(payload))
                        except Exception as e:  # noqa: BLE001 - any malformed event (a
                            # 400-digit number's OverflowError, deep nesting's
                            # RecursionError) is skipped; the stream goes on.
                            logger.warning("PowerStreamingClient: %s sent an event that is not "
                                           "a power snapshot (%s): %.200s", server.key, e,
                                           payload)
                # Other fields (event:, id:, retry:) and comments are ignored.
            if not partial:
                line_started = None
            if event_bytes + len(partial) > _MAX_EVENT_BYTES:
                # Never held beyond the cap and one read: the stream is
                # dropped and reconnected.
                raise ConnectionError(f"an event longer than {_MAX_EVENT_BYTES} bytes")
            if line_started is not None and now - line_started > _LINE_DEADLINE_S:
                raise ConnectionError(f"a line not ended within {_LINE_DEADLINE_S:g} s of its "
                                      f"first byte")
        if not self._stop_event.is_set():
            raise ConnectionError("the daemon closed the stream")

    def _stream_forever(self, server, kind):
        last_problem = None
        while not self._stop_event.is_set():
            try:
                self._stream_once(server, kind)
            except _RefusedError as e:
                # A token refused or without the scope stays so: not retried.
                logger.error("PowerStreamingClient: %s power stream of %s refused (%s); not "
                             "retried", kind.upper(), server.key, e)
                return
            except Exception as e:  # noqa: BLE001 - the thread outlives any failure of a
                # stream (transport errors, a broken limit, a bad answer).
                if self._stop_event.is_set():
                    break
                # The same problem again (a daemon down for a while) is logged
                # once at warning level, then at debug level.
                problem = f"{type(e).__name__}: {e}"
                logger.log(logging.DEBUG if problem == last_problem else logging.WARNING,
                           "PowerStreamingClient: %s power stream of %s lost (%s); "
                           "reconnecting every %.1f s", kind.upper(), server.key, problem,
                           self._reconnect_delay_s)
                last_problem = problem
                self._stop_event.wait(self._reconnect_delay_s)

    def get_power(self) -> Dict[str, PowerReadings]:
        """Latest readings per daemon (its config's `endpoint`: "host:port" or the socket path),
        for the daemons that have sent at least one snapshot. A daemon whose
        stream dropped keeps its last readings (see timestamp_s) until it
        sends again."""
        with self._changed:
            return {key: replace(r, gpu_power_w=dict(r.gpu_power_w),
                                 cpu_power_w=dict(r.cpu_power_w))
                    for key, r in self._readings.items()}

    def _wait_next(self, seen, timeout=None):
        with self._changed:
            self._changed.wait_for(lambda: self._version != seen or self._stop_event.is_set(),
                                   timeout=timeout)
            return self._version

    def __iter__(self) -> Iterator[Dict[str, PowerReadings]]:
        seen = self._version
        while not self._stop_event.is_set():
            version = self._wait_next(seen)
            if self._stop_event.is_set():
                return
            if version != seen:
                seen = version
                yield self.get_power()

    async def __aiter__(self):
        loop = asyncio.get_running_loop()
        seen = self._version
        while not self._stop_event.is_set():
            version = await loop.run_in_executor(None, self._wait_next, seen, 0.5)
            if self._stop_event.is_set():
                return
            if version != seen:
                seen = version
                yield self.get_power()

    def stop(self) -> None:
        """Closes every stream and joins the threads; iteration ends."""
        self._stop_event.set()
        with self._wake:
            connections = list(self._connections)
            self._wake.notify_all()
        for response in connections:
            _shutdown(response)
        with self._changed:
            self._changed.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)
        for server in self._servers:
            if server.client is not None:
                server.client.close()  # The connection discovery kept open.

    def __del__(self):
        try:
            if not self._stop_event.is_set():
                self.stop()
        except Exception:
            pass
