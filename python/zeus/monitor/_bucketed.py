"""Named energy windows split at fixed time boundaries (the hours of a carbon
intensity or an electricity price), shared by CarbonEmissionMonitor and
EnergyCostMonitor.

Each open window is measured as a chain of ZeusMonitor windows, one per
bucket: a background thread ends the running piece and begins the next one
when the wall clock crosses the bucket's end. The seam between two pieces is
two counter reads long (microseconds); a rollover runs within milliseconds of
the boundary, so energy spent in that delay counts towards the bucket that
just ended.

Thread-safety: begin/end may be called from any thread.
"""

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

logger = logging.getLogger(__name__)


@dataclass
class Bucket:
    """What one window measured inside one bucket.

    Attributes:
        start_s: Start of the bucket, Unix seconds (the boundary, not when
            the window began).
        measurement: The ZeusMonitor Measurement of the window's piece
            inside the bucket (energies in J, time in s).
    """

    start_s: float
    measurement: object


class _Window:
    def __init__(self, key, piece_name, bucket_start_s, bucket_end_s):
        self.key = key
        self.piece_name = piece_name
        self.bucket_start_s = bucket_start_s
        self.bucket_end_s = bucket_end_s
        self.buckets: List[Bucket] = []
        self.pieces = 1


class BucketedWindows:
    """Measures named windows bucket by bucket on a ZeusMonitor.

    Args:
        monitor: The ZeusMonitor measuring the pieces (owned by the caller).
        bucket_of: Maps a Unix time to (start_s, end_s) of its bucket;
            start_s <= t < end_s.
        name: Prefix of the piece windows' names (for logs and errors).
    """

    def __init__(self, monitor, bucket_of: Callable[[float], Tuple[float, float]], name: str):
        self._monitor = monitor
        self._bucket_of = bucket_of
        self._name = name
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._windows: Dict[str, _Window] = {}
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        # Called (outside the lock) with the start of every bucket a rollover
        # just finished; a provider may fetch that bucket's rate.
        self.on_rollover: Optional[Callable[[List[float]], None]] = None

    def keys(self):
        with self._lock:
            return set(self._windows)

    def begin(self, key: str, sync_execution: bool) -> None:
        """Opens `key`. Raises ValueError when it is open already."""
        with self._lock:
            if self._closed:
                raise ValueError(f"{self._name}: the monitor is closed")
            if key in self._windows:
                raise ValueError(f"{self._name}: measurement window '{key}' is already open")
            piece = f"{self._name}:{key}#0"
            self._monitor.begin_window(piece, sync_execution=sync_execution)
            start_s, end_s = self._bucket_of(time.time())
            self._windows[key] = _Window(key, piece, start_s, end_s)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self._name} buckets",
                                                daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def end(self, key: str, sync_execution: bool) -> List[Bucket]:
        """Closes `key`; returns its buckets in time order (at least one).
        Raises KeyError when `key` is not open."""
        with self._lock:
            window = self._windows.get(key)
            if window is None:
                raise KeyError(f"{self._name}: measurement window '{key}' is not open")
            measurement = self._monitor.end_window(window.piece_name,
                                                   sync_execution=sync_execution)
            del self._windows[key]
            window.buckets.append(Bucket(window.bucket_start_s, measurement))
            self._changed.notify_all()
            return window.buckets

    def close(self) -> None:
        """Stops the rollover thread; open windows are dropped."""
        with self._lock:
            self._closed = True
            for window in self._windows.values():
                try:
                    self._monitor.end_window(window.piece_name, sync_execution=False)
                except Exception:  # The monitor may be closed already.
                    pass
            self._windows.clear()
            self._changed.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _rollover(self, now: float) -> List[float]:
        # REQUIRES: the lock is held. Returns the starts of finished buckets.
        finished = []
        for window in self._windows.values():
            if window.bucket_end_s > now:
                continue
            next_piece = f"{self._name}:{window.key}#{window.pieces}"
            try:
                measurement = self._monitor.end_window(window.piece_name, sync_execution=False)
                self._monitor.begin_window(next_piece, sync_execution=False)
            except Exception:
                # Keep the piece running: its energy lands in a later bucket
                # rather than being lost.
                logger.exception("%s: rolling window '%s' over to the next bucket failed",
                                 self._name, window.key)
                window.bucket_end_s = now + 1.0
                continue
            window.buckets.append(Bucket(window.bucket_start_s, measurement))
            finished.append(window.bucket_start_s)
            window.piece_name = next_piece
            window.pieces += 1
            window.bucket_start_s, window.bucket_end_s = self._bucket_of(now)
            if window.bucket_end_s <= now:  # A bucket_of that does not advance.
                window.bucket_end_s = now + 1.0
        return finished

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                if not self._windows:
                    self._changed.wait()
                    continue
                deadline = min(w.bucket_end_s for w in self._windows.values())
                delay = deadline - time.time()
                if delay > 0:
                    self._changed.wait(timeout=delay)
                    continue
                finished = self._rollover(time.time())
            callback = self.on_rollover
            if finished and callback is not None:
                try:
                    callback(sorted(set(finished)))
                except Exception:
                    logger.warning("%s: prefetching the rate of a finished bucket failed",
                                   self._name, exc_info=True)


def http_get_json(url: str, headers: Dict[str, str], timeout_s: float, error_cls, service: str,
                  redact: Optional[str] = None):
    """GETs `url` and parses its JSON body (standard library urllib).

    Raises error_cls("<service>: ...") naming the URL (with `redact`, e.g. an
    API key in the query, replaced by ***) for an unreachable host, an HTTP
    error status (with the service's own error text), or a body that is not
    JSON.
    """
    import json
    import urllib.error
    import urllib.request

    shown = url if not redact else url.replace(redact, "***")
    request = urllib.request.Request(url, headers=dict(headers, Accept="application/json"))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
    except urllib.error.HTTPError as e:
        detail = ""
        try:
            text = e.read().decode("utf-8", "replace")
            try:
                parsed = json.loads(text)
                if isinstance(parsed, dict):
                    nested = parsed.get("error")
                    if isinstance(nested, dict):
                        nested = nested.get("message") or nested
                    text = str(nested or parsed.get("message") or text)
            except ValueError:
                pass
            detail = ": " + text.strip()[:300]
        except Exception:
            pass
        raise error_cls(f"{service}: GET {shown} answered HTTP {e.code}{detail}") from e
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise error_cls(f"{service}: GET {shown} failed (no network or service unreachable): "
                        f"{reason}") from e
    try:
        return json.loads(body)
    except ValueError as e:
        raise error_cls(f"{service}: GET {shown} answered a body that is not JSON: "
                        f"{body[:200]!r}") from e
