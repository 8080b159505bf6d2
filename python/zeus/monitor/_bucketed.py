"""Named energy windows split at fixed time boundaries (the hours of a carbon
intensity or an electricity price), shared by CarbonEmissionMonitor and
EnergyCostMonitor: BucketedWindows, the monitors' common base
BucketedMonitor, and per-device energy and charge totals over buckets.

Each open window is measured as a chain of ZeusMonitor windows, one per
bucket: a background thread ends the running piece and begins the next one
when the wall clock crosses the bucket's end. The seam between two pieces is
two counter reads long (microseconds); a rollover runs within milliseconds of
the boundary, so energy spent in that delay counts towards the bucket that
just ended.

Thread-safety: begin/end may be called from any thread.
"""

import logging
import math
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Dict, List, Optional, Tuple

from zeus.monitor.energy import ZeusMonitor

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


JOULES_PER_KWH = 3.6e6


def is_rate(value) -> bool:
    """Whether `value` is a usable rate (a carbon intensity, a price): a
    finite non-negative int or float, not a bool."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def checked_rate(value, what: str, error_cls) -> float:
    """`value` as a float when is_rate(value); else raises error_cls naming
    `what` and the value received."""
    if not is_rate(value):
        raise error_cls(f"{what}: expected a finite non-negative number, got {value!r}")
    return float(value)


class Op(Enum):
    """Window operations (the original's command names)."""

    BEGIN = 0
    END = 1
    NEXTITER = 2


def _per_device(buckets: List[Bucket], attr: str, convert_at):
    """Sum over buckets of convert_at(bucket start)(joules) per device of the
    measurement's `attr` (e.g. "gpu_energy"); None when no bucket has it."""
    total = None
    for bucket in buckets:
        energies = getattr(bucket.measurement, attr, None)
        if energies is None:
            continue
        total = {} if total is None else total
        convert = convert_at(bucket.start_s)
        for index, joules in energies.items():
            total[index] = total.get(index, 0.0) + convert(joules)
    return total


def sum_energy(buckets: List[Bucket], attr: str) -> Optional[Dict[int, float]]:
    """Energy (J) per device of `attr` over all buckets; None when no bucket
    has it."""
    return _per_device(buckets, attr, lambda start_s: lambda joules: joules)


def charge(buckets: List[Bucket], attr: str,
           rate_of: Callable[[float], Optional[float]]) -> Optional[Dict[int, float]]:
    """Sum over buckets of energy (J) / 3.6e6 x rate (per kWh) per device of
    `attr`; NaN for a device when some bucket's rate is missing (None)."""

    def convert_at(start_s):
        rate = rate_of(start_s)
        return lambda joules: math.nan if rate is None else joules / JOULES_PER_KWH * rate

    return _per_device(buckets, attr, convert_at)


def bucket_totals(buckets: List[Bucket], rate_of: Callable[[float], Optional[float]]):
    """(time s, gpu J, gpu charge, cpu J, cpu charge, dram J, dram charge) of
    a window's buckets; gpu ones are {} rather than None when absent."""
    return (sum(b.measurement.time for b in buckets),
            sum_energy(buckets, "gpu_energy") or {},
            charge(buckets, "gpu_energy", rate_of) or {},
            sum_energy(buckets, "cpu_energy"),
            charge(buckets, "cpu_energy", rate_of),
            sum_energy(buckets, "dram_energy"),
            charge(buckets, "dram_energy", rate_of))


class BucketedMonitor:
    """The window handling shared by CarbonEmissionMonitor and
    EnergyCostMonitor: a ZeusMonitor (`zeus_monitor`) measured bucket by
    bucket under `name`. Thread-safety: as BucketedWindows.
    """

    def __init__(self, name: str, bucket_of: Callable[[float], Tuple[float, float]],
                 gpu_indices: Optional[List[int]], cpu_indices: Optional[List[int]],
                 sync_execution_with: str) -> None:
        self.zeus_monitor = ZeusMonitor(gpu_indices=gpu_indices, cpu_indices=cpu_indices,
                                        sync_execution_with=sync_execution_with)
        self._windows = BucketedWindows(self.zeus_monitor, bucket_of, name)
        # The original's process and queues: the buckets run on a thread here.
        self.context = self.command_q = self.finished_q = None

    @property
    def current_keys(self):
        """Keys of the open windows."""
        return self._windows.keys()

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        """Opens window `key`. Raises ValueError when it is open already."""
        self._windows.begin(key, sync_execution)

    def _end_buckets(self, key: str, sync_execution: bool) -> List[Bucket]:
        """Closes window `key`; its buckets. Raises ValueError when `key` is
        not open."""
        try:
            return self._windows.end(key, sync_execution)
        except KeyError as e:
            raise ValueError(str(e.args[0])) from None

    @staticmethod
    def _raise_keeping_energy(error: Optional[BaseException], measurement, known: tuple,
                              message_of: Callable[[BaseException], str]) -> None:
        """Nothing when `error` is None. Else raises with `measurement` as the
        exception's `measurement` attribute: an error of a `known` type as a
        new one of its type with message_of(error) (chained), any other as
        itself."""
        if error is None:
            return
        if not isinstance(error, known):
            error.measurement = measurement
            raise error
        raised = type(error)(message_of(error))
        raised.measurement = measurement
        raise raised from error

    def close(self) -> None:
        """Stops the bucket thread and the ZeusMonitor; open windows are
        dropped."""
        self._windows.close()
        close = getattr(self.zeus_monitor, "close", None)
        if close is not None:
            close()

    def __del__(self):
        try:
            self._windows.close()
        except Exception:
            pass


def http_get_json(url: str, headers: Dict[str, str], timeout_s: float, error_cls, service: str,
                  redact: Optional[str] = None):
    """GETs `url` and parses its JSON body (standard library urllib).

    Raises error_cls("<service>: ...") naming the URL (with `redact`, e.g. an
    API key in the query, replaced by ***) for an unreachable host, an HTTP
    error status (with the service's own error text), an answer that is not
    complete within `timeout_s` in all or is larger than
    zeus.utils.http_limits.MAX_BODY_BYTES, or a body that is not JSON.
    Credential headers are not sent on to another origin by a redirect.
    """
    import http.client
    import json
    import urllib.error
    import urllib.request

    from zeus.utils import http_limits

    shown = url if not redact else url.replace(redact, "***")
    request = urllib.request.Request(url, headers=dict(headers, Accept="application/json"))

    def fetch():
        with http_limits.opener().open(request, timeout=timeout_s) as response:
            return http_limits.read_body(response)

    try:
        body = http_limits.with_deadline(fetch, timeout_s)
    except (http_limits.AnswerTooLargeError, http_limits.DeadlineExceededError) as e:
        raise error_cls(f"{service}: GET {shown}: {e}") from e
    except urllib.error.HTTPError as e:
        detail = ""
        try:
            text = e.read(64 << 10).decode("utf-8", "replace")
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
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        # http.client's errors (IncompleteRead, ...) say little as str().
        text = repr(reason) if isinstance(reason, http.client.HTTPException) else str(reason)
        raise error_cls(f"{service}: GET {shown} failed (no network or service unreachable): "
                        f"{text}") from e
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:
        raise error_cls(f"{service}: GET {shown} answered a body that is not JSON: "
                        f"{body[:200]!r}") from e
