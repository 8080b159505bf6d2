"""The energy-time cost metric and energy from a power log (the original's
`zeus.utils.metric`).

Power log format (what the original's power monitor wrote): a CSV file whose
header names a `Time` column (a date-time such as `2024-05-01
12:00:00.123456`, ISO 8601 with `T` also accepted, or Unix seconds) and a
`Power` column (mW); other columns are ignored. As in the original, the last
line is dropped (the monitor may have been killed while writing it).
`start`/`end` are seconds from the first sample; `energy` also accepts
negative ones, counted back from the last sample. Energy is the trapezoid
integral of power over time, in J; `avg_power` is that energy over the
covered time, in W. Fewer than two samples in the range raise ValueError.
"""

from __future__ import annotations

import csv
import datetime as _dt
import re
from pathlib import Path
from typing import List, Optional, Tuple


def zeus_cost(energy: float, time: float, eta_knob: float, max_power: int | float) -> float:
    """eta_knob * energy + (1 - eta_knob) * max_power * time.

    energy in J, time in s, max_power in W (the GPU's maximum power limit);
    eta_knob in [0, 1] is the caller's to check (as in the original).
    """
    return eta_knob * energy + (1 - eta_knob) * max_power * time


_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(Z|[+-]\d{2}:?\d{2})?$")


def _parse_time(text: str, where: str) -> float:
    """Seconds (Unix) of one `Time` cell; naive date-times are taken as UTC."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    m = _DATETIME.match(text)
    if not m:
        raise ValueError(f"{where}: Time {text!r} is neither a date-time nor Unix seconds")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = float("0." + m.group(7)) if m.group(7) else 0.0
    tz = _dt.timezone.utc
    if m.group(8) and m.group(8) != "Z":
        sign = -1 if m.group(8)[0] == "-" else 1
        digits = m.group(8)[1:].replace(":", "")
        tz = _dt.timezone(sign * _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    stamp = _dt.datetime(year, month, day, hour, minute, second, tzinfo=tz)
    return stamp.timestamp() + fraction


def _read_log(logfile: Path | str) -> List[Tuple[float, float]]:
    """(Unix seconds, W) of every sample but the last line, in file order."""
    with open(logfile, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{logfile}: empty power log (expected a Time,Power header)")
    header = [h.strip() for h in rows[0]]
    if "Time" not in header or "Power" not in header:
        raise ValueError(f"{logfile}: the header {rows[0]} lacks a Time or Power column")
    t_col, p_col = header.index("Time"), header.index("Power")
    body = [r for r in rows[1:] if any(cell.strip() for cell in r)][:-1]
    samples = []
    for line, row in enumerate(body, start=2):
        where = f"{logfile}:{line}"
        if len(row) <= max(t_col, p_col):
            raise ValueError(f"{where}: expected {len(header)} columns, got {len(row)}")
        try:
            power_w = float(row[p_col]) / 1000.0
        except ValueError:
            raise ValueError(f"{where}: Power {row[p_col]!r} is not a number (mW)") from None
        samples.append((_parse_time(row[t_col], where), power_w))
    return samples


def _integrate(samples: List[Tuple[float, float]], logfile) -> Tuple[float, float]:
    """(J, s covered) by the trapezoid rule; ValueError with < 2 samples."""
    if len(samples) < 2:
        raise ValueError(f"{logfile}: at least 2 power samples are needed in the window, "
                         f"got {len(samples)}")
    joules = 0.0
    for (t0, p0), (t1, p1) in zip(samples, samples[1:]):
        joules += (t1 - t0) * (p0 + p1) / 2.0
    times = [t for t, _ in samples]
    return joules, max(times) - min(times)


def _window(samples, start: Optional[float], end: Optional[float], wrap: bool):
    if not samples:
        return samples
    first, last = samples[0][0], samples[-1][0]
    if start is not None:
        origin = last if (wrap and start < 0) else first
        samples = [s for s in samples if s[0] >= origin + start]
    if end is not None:
        origin = last if (wrap and end < 0) else first
        samples = [s for s in samples if s[0] <= origin + end]
    return samples


def energy(logfile: Path | str, start: float | None = None, end: float | None = None) -> float:
    """Energy in J of the power log between `start` and `end` (see module doc)."""
    joules, _ = _integrate(_window(_read_log(logfile), start, end, wrap=True), logfile)
    return joules


def avg_power(logfile: Path | str, start: float | None = None, end: float | None = None) -> float:
    """Average power in W of the power log between `start` and `end` (seconds
    from the first sample, as in the original: no negative offsets)."""
    joules, seconds = _integrate(_window(_read_log(logfile), start, end, wrap=False), logfile)
    if seconds <= 0:
        raise ValueError(f"{logfile}: the window covers no time")
    return joules / seconds
