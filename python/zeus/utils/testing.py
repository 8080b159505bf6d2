"""Testing helpers (the original's `zeus.utils.testing`).

`ReplayZeusMonitor` is a ZeusMonitor that touches no device: it replays the
windows a real ZeusMonitor wrote to its `log_file` (CSV, header
`start_time,window_name,elapsed_time,gpu<i>_energy,...`, one row per ended
window in `end_window` order; names may be RFC 4180 quoted), so a training
loop can be fast-forwarded through recorded measurements. Each non-cancelled
`end_window` consumes the next row and returns its time and energies;
`match_window_name` (default) makes a row for another window an error.
Errors raise RuntimeError (window already open, not open, no rows left, a
row of the wrong shape) as in the original. Not thread-safe.

A GlobalPowerLimitOptimizer built on it profiles from the replayed rows
(its windows `__GlobalPowerLimitOptimizer_<W>` consume them as end_window
does) and sets the limits of the monitor's GPUs, which are opened for it.
"""

from __future__ import annotations

import csv
import ctypes
import logging
from pathlib import Path
from typing import List, Optional

from zeus import _lib
from zeus.monitor.energy import Measurement, ZeusMonitor
from zeus.utils.framework import sync_execution as _sync_execution

logger = logging.getLogger(__name__)


def _gpu_indices_from_header(header: List[str], log_file) -> List[int]:
    indices = []
    for column in header[3:]:
        column = column.strip()
        if not column:
            continue
        name = column.split("_")[0]
        if not name.startswith("gpu") or not name[3:].isdigit():
            raise ValueError(f"{log_file}: column {column!r} is not gpu<index>_energy")
        indices.append(int(name[3:]))
    return indices


class ReplayZeusMonitor(ZeusMonitor):
    """A ZeusMonitor replaying the windows of a ZeusMonitor log file."""

    def __init__(self, gpu_indices: list[int] | None = None, approx_instant_energy: bool = False,
                 log_file: str | Path | None = None, ignore_sync_execution: bool = False,
                 match_window_name: bool = True) -> None:
        # ZeusMonitor.__init__ is not called: no device, no core handle. The
        # base class's close() and __del__ accept a monitor without a handle.
        self._handle = None
        if log_file is None:
            raise ValueError("ReplayZeusMonitor: log_file is required (the log to replay)")
        self.approx_instant_energy = approx_instant_energy
        self.ignore_sync_execution = ignore_sync_execution
        self.match_window_name = match_window_name
        self.sync_with = "torch"
        self.cpu_indices = []
        self._log_path = str(log_file)
        self.log_file = open(log_file, newline="")
        self._rows = csv.reader(self.log_file)
        header = next(self._rows, None)
        if not header or [h.strip() for h in header[:3]] != ["start_time", "window_name",
                                                              "elapsed_time"]:
            raise ValueError(f"{log_file}: not a ZeusMonitor log (header {header!r}, expected "
                             "start_time,window_name,elapsed_time,gpu<i>_energy,...)")
        if gpu_indices is None:
            gpu_indices = _gpu_indices_from_header(header, log_file)
        self.gpu_indices = list(gpu_indices)
        self.ongoing_windows: List[str] = []
        logger.info("Replaying %s with GPU indices %s", log_file, self.gpu_indices)

    def _sync(self, sync_execution: bool) -> None:
        if sync_execution and not self.ignore_sync_execution:
            _sync_execution(self.gpu_indices, self.sync_with)

    def begin_window(self, key: str, sync_execution: bool = True, restart: bool = False) -> None:
        """Opens window `key` (RuntimeError if ongoing, unless `restart`)."""
        if key in self.ongoing_windows:
            if not restart:
                raise RuntimeError(f"Measurement window '{key}' is already ongoing.")
            self.ongoing_windows.remove(key)
        self.ongoing_windows.append(key)
        self._sync(sync_execution)

    def end_window(self, key: str, sync_execution: bool = True,
                   cancel: bool = False) -> Measurement:
        """Closes window `key` and returns the next logged measurement (all
        zero with `cancel`, which consumes no row)."""
        try:
            self.ongoing_windows.remove(key)
        except ValueError:
            raise RuntimeError(f"Measurement window '{key}' is not ongoing.") from None
        self._sync(sync_execution)
        if cancel:
            return Measurement(time=0.0, gpu_energy={i: 0.0 for i in self.gpu_indices})
        time_s, energies = self._next_row(key)
        return Measurement(time=time_s, gpu_energy=dict(zip(self.gpu_indices, energies)))

    def _next_row(self, key: str):
        """The next logged window's (time, GPU energies), which must be `key`
        under match_window_name."""
        row: Optional[List[str]] = next(self._rows, None)
        while row is not None and not any(cell.strip() for cell in row):
            row = next(self._rows, None)
        if row is None:
            raise RuntimeError(f"ReplayZeusMonitor: no rows left in {self._log_path} "
                               f"for window {key!r}")
        if len(row) != 3 + len(self.gpu_indices):
            raise RuntimeError(f"ReplayZeusMonitor: {self._log_path}: row {row!r} does not have "
                               f"{len(self.gpu_indices)} GPU energies")
        name = row[1]
        if self.match_window_name and name != key:
            raise RuntimeError(f"ReplayZeusMonitor: the next logged window is {name!r}, "
                               f"not {key!r}")
        try:
            values = [float(v) for v in row[2:]]
        except ValueError:
            raise RuntimeError(f"ReplayZeusMonitor: {self._log_path}: row {row!r} has a "
                               "non-numeric time or energy") from None
        return values[0], values[1:]

    def _handle_for_optimizer(self):
        """A core monitor over this monitor's GPUs whose windows end with the
        next logged row (for GlobalPowerLimitOptimizer)."""
        if getattr(self, "_replay_handle", None) is None:
            def end(name, time_s, energies_j, num_gpus, _user):
                try:
                    time, energies = self._next_row(name.decode())
                    time_s[0] = time
                    for position in range(min(num_gpus, len(energies))):
                        energies_j[position] = energies[position]
                    return 0
                except BaseException as e:  # Never let an exception cross into C.
                    self._replay_error = e
                    return 1

            self._replay_end_fn = _lib.REPLAY_END_FN(end)
            handle = ctypes.c_void_p()
            _lib.call(_lib.lib().zeus_monitor_create_replay,
                      _lib.options_json({"gpu_indices": self.gpu_indices}), self._replay_end_fn,
                      None, ctypes.byref(handle))
            self._replay_handle = handle
        return self._replay_handle

    def _take_replay_error(self):
        """The error of the last failed replayed window of the optimizer, once."""
        error, self._replay_error = getattr(self, "_replay_error", None), None
        return error

    def reset_windows(self) -> None:
        """Forgets every open window (consumes no row)."""
        self.ongoing_windows.clear()

    def is_window_open(self, key: str) -> bool:
        return key in self.ongoing_windows

    def close(self) -> None:
        """Closes the log file (an optimizer built on this monitor keeps its
        GPUs)."""
        handle, self._replay_handle = getattr(self, "_replay_handle", None), None
        if handle is not None:
            _lib.lib().zeus_monitor_destroy(handle)
        log_file = getattr(self, "log_file", None)
        if log_file is not None and not log_file.closed:
            log_file.close()
