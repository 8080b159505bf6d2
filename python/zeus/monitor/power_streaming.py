"""Live GPU and CPU power from several Zeus daemons at once.

PowerStreamingClient subscribes to the Server-Sent Event streams of each
daemon: `GET /gpu/stream_power?gpu_ids=0,1` and `GET /cpu/stream_power?
cpu_ids=0`, whose events are `data: <JSON>` lines in zeusd v0.5's shape, one
per device per sample: {"timestamp_ms", "gpu_id", "power_mw"} and
{"timestamp_ms", "cpu_id", "cpu_mw", "dram_mw"} (mW; dram_mw may be null).
Each event updates its device's reading. An event holding a snapshot of
every device, the JSON of `/gpu/get_power` ({"timestamp_ms", "power_mw":
{"0": mW}}) or `/cpu/get_power` ({"timestamp_ms", "power_mw": {"0":
{"cpu_mw", "dram_mw"}}}), is read too and replaces that kind's readings. One thread per stream per daemon holds the
connection (standard library http.client, over TCP or a Unix socket) and
reconnects after `reconnect_delay_s` when it drops; the latest snapshot of
every daemon is kept in watts.

A daemon is described by a zeus.utils.zeusd.ZeusdConfig (or any object with
its attributes: `host_port` "host:port" or `socket_path`, `token`,
`gpu_indices`, `cpu_indices`). For gpu_indices and cpu_indices, None streams
every device, a list only those devices, [] none of that kind. Unless
cpu_indices is [], the client asks the daemon's one-shot `/cpu/get_power` on
construction; a daemon that answers with an error (no RAPL, the cpu-read
group disabled, a token without the scope) gets a warning and no CPU stream.
"""

import asyncio
import http.client
import json
import logging
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Dict, Iterator, List, Optional, Sequence, TypeVar

logger = logging.getLogger(__name__)

_V = TypeVar("_V")

# A stream silent for this long is taken as dead and reconnected.
_READ_TIMEOUT_S = 30.0
# Timeout of the one-shot CPU probe on construction.
_PROBE_TIMEOUT_S = 5.0


@dataclass
class CpuPowerReading:
    """One CPU socket's power, W (dram_w None where DRAM is not measured)."""

    cpu_w: float = 0.0
    dram_w: Optional[float] = None


@dataclass
class PowerReadings:
    """The latest readings of one daemon.

    Attributes:
        timestamp_s: Unix time of the newest snapshot, s (the daemon's clock).
        gpu_power_w: GPU index -> W.
        cpu_power_w: CPU index -> CpuPowerReading.
    """

    timestamp_s: float = 0.0
    gpu_power_w: Dict[int, float] = field(default_factory=dict)
    cpu_power_w: Dict[int, CpuPowerReading] = field(default_factory=dict)


# The most bytes one event (its lines up to the blank line) may take: a
# daemon's event is under a kilobyte; the C++ relay caps answers at 1 MiB.
_MAX_EVENT_BYTES = 1 << 20


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class _Server:
    """One daemon: where it is and what to stream from it."""

    def __init__(self, config):
        self.config = config
        self.socket_path = getattr(config, "socket_path", None)
        host_port = getattr(config, "host_port", None)
        if host_port is None and getattr(config, "host", None) is not None:
            host_port = f"{config.host}:{config.port}"
        if (host_port is None) == (self.socket_path is None):
            raise ValueError("PowerStreamingClient: each server needs exactly one of host_port "
                             f"(\"host:port\") and socket_path, got {config!r}")
        self.host = self.port = None
        if host_port is not None:
            text = host_port.split("://", 1)[-1].rstrip("/")
            host, sep, port = text.rpartition(":")
            if not sep or not port.isdigit() or not host:
                raise ValueError(f"PowerStreamingClient: host_port must be \"host:port\", got "
                                 f"{host_port!r}")
            self.host, self.port = host.strip("[]"), int(port)
        endpoint = getattr(config, "endpoint", None)
        self.key = endpoint if isinstance(endpoint, str) else (
            f"{self.host}:{self.port}" if self.host is not None else self.socket_path)
        self.token = getattr(config, "token", None)
        self.gpu_indices = getattr(config, "gpu_indices", None)
        self.cpu_indices = getattr(config, "cpu_indices", None)

    def connection(self, timeout):
        if self.socket_path is not None:
            return _UnixHTTPConnection(self.socket_path, timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def path(self, route, indices, name):
        if indices is None:
            return route
        return f"{route}?{urllib.parse.urlencode({name: ','.join(str(i) for i in indices)})}"

    def headers(self, accept):
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers


class PowerStreamingClient:
    """Streams power from several Zeus daemons.

    Args:
        servers: One ZeusdConfig per daemon.
        reconnect_delay_s: Wait before reconnecting a dropped stream.

    Streams start on construction. get_power() returns the latest readings;
    iterating the client (for, or async for) yields a snapshot every time
    one arrives, until stop(). Thread-safety: every method may be called
    from any thread.
    """

    def __init__(self, servers: Sequence, reconnect_delay_s: float = 1.0) -> None:
        if not reconnect_delay_s >= 0:
            raise ValueError(f"PowerStreamingClient: reconnect_delay_s must be >= 0, got "
                             f"{reconnect_delay_s!r}")
        self._servers = [_Server(config) for config in servers]
        keys = [s.key for s in self._servers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"PowerStreamingClient: the same daemon is listed twice: {keys}")
        self._reconnect_delay_s = reconnect_delay_s
        self._stop_event = threading.Event()
        self._changed = threading.Condition()
        self._readings: Dict[str, PowerReadings] = {}
        self._version = 0
        self._connections = set()
        self._connections_lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        for server in self._servers:
            if server.gpu_indices != []:
                self._start(server, "gpu")
            if server.cpu_indices != [] and self._cpu_available(server):
                self._start(server, "cpu")

    def _start(self, server, kind):
        thread = threading.Thread(target=self._stream_forever, args=(server, kind), daemon=True,
                                  name=f"zeus power stream {kind} {server.key}")
        self._threads.append(thread)
        thread.start()

    def _cpu_available(self, server) -> bool:
        connection = server.connection(_PROBE_TIMEOUT_S)
        try:
            connection.request("GET", server.path("/cpu/get_power", server.cpu_indices,
                                                  "cpu_ids"),
                               headers=server.headers("application/json"))
            response = connection.getresponse()
            body = response.read(2048).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as e:
            # Not reachable yet: stream anyway, the thread keeps reconnecting.
            logger.warning("PowerStreamingClient: could not ask %s for CPU power (%s); will keep "
                           "trying to stream it", server.key, e)
            return True
        finally:
            connection.close()
        if response.status != 200:
            logger.warning("PowerStreamingClient: %s has no CPU power (HTTP %d: %s); streaming "
                           "GPU power only", server.key, response.status, body.strip()[:200])
            return False
        return True

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
                current = replace(current, timestamp_s=max(current.timestamp_s,
                                                           float(timestamp_ms) / 1000.0))
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

    def _stream_once(self, server, kind):
        ids_name = "gpu_ids" if kind == "gpu" else "cpu_ids"
        indices = server.gpu_indices if kind == "gpu" else server.cpu_indices
        connection = server.connection(_READ_TIMEOUT_S)
        with self._connections_lock:
            if self._stop_event.is_set():
                return
            self._connections.add(connection)
        try:
            connection.request("GET", server.path(f"/{kind}/stream_power", indices, ids_name),
                               headers=server.headers("text/event-stream"))
            response = connection.getresponse()
            if response.status != 200:
                body = response.read(2048).decode("utf-8", "replace").strip()
                raise ConnectionError(f"HTTP {response.status}: {body[:200]}")
            data_lines = []
            event_bytes = 0
            while not self._stop_event.is_set():
                raw = response.readline(_MAX_EVENT_BYTES + 1)
                if not raw:
                    raise ConnectionError("the daemon closed the stream")
                event_bytes += len(raw)
                if event_bytes > _MAX_EVENT_BYTES:
                    # Never held beyond the cap: the stream is dropped and
                    # reconnected.
                    raise ConnectionError(f"an event longer than {_MAX_EVENT_BYTES} bytes")
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    event_bytes = 0
                if line.startswith("data:"):
                    data_lines.append(line[5:].lstrip(" "))
                elif not line and data_lines:
                    payload = "\n".join(data_lines)
                    data_lines = []
                    try:
                        self._update(server, kind, json.loads(payload))
                    except Exception as e:  # noqa: BLE001 - any malformed event (a
                        # 400-digit number's OverflowError, deep nesting's
                        # RecursionError) is skipped; the stream goes on.
                        logger.warning("PowerStreamingClient: %s sent an event that is not a "
                                       "power snapshot (%s): %.200s", server.key, e, payload)
                # Other fields (event:, id:, retry:) and comments are ignored.
        finally:
            with self._connections_lock:
                self._connections.discard(connection)
            connection.close()

    def _stream_forever(self, server, kind):
        last_problem = None
        while not self._stop_event.is_set():
            try:
                self._stream_once(server, kind)
            except (OSError, http.client.HTTPException, ConnectionError) as e:
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
        """Latest readings per daemon key ("host:port" or the socket path),
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
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            sock = connection.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        with self._changed:
            self._changed.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)

    def __del__(self):
        try:
            if not self._stop_event.is_set():
                self.stop()
        except Exception:
            pass
