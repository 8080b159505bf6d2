"""Carbon emission of measurement windows: energy x grid carbon intensity,
hour by hour.

A CarbonEmissionMonitor measures each window's energy with a ZeusMonitor,
split at the boundaries of its provider's update period (ElectricityMaps: UTC
hours); each bucket's energy is multiplied by that bucket's carbon intensity
(gCO2eq/kWh), so a window spanning hours of different intensity is charged
for each hour at its own rate. Emissions are in grams of CO2-equivalent.

ElectrictyMapsClient (the original's spelling) reads the ElectricityMaps v3
API over HTTPS with the standard library. Its API key comes from the
`api_key` argument or the ELECTRICITYMAPS_API_KEY environment variable (sent
as the `auth-token` header), never from the source; the service's base URL
from `base_url` or ZEUS_ELECTRICITYMAPS_URL (default
https://api.electricitymap.org/v3), so tests can point it at a local fake.

When an intensity cannot be had (no network, an HTTP error, a zone without
data), end_window raises ZeusCarbonIntensityHTTPError or
ZeusCarbonIntensityNotFoundError, and the window's energy is not lost: the
exception's `measurement` attribute holds the CarbonEmissionMeasurement with
every energy filled in and NaN as the emission of each device whose buckets
lack an intensity. (Any other exception a user's provider raises is re-raised
with the same `measurement` attribute.) The window is closed either way.
"""

import abc
import logging
import math
import os
import threading
import time as _time
import urllib.parse
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Dict, List, Literal, Optional, Tuple

from zeus.exception import ZeusBaseError
from zeus.monitor._bucketed import (BucketedMonitor, bucket_totals, checked_rate, http_get_json,
                                    is_rate)
from zeus.monitor._bucketed import JOULES_PER_KWH, Op  # noqa: F401 (this module's names)

from zeus.utils.multiprocessing import warn_if_global_in_subprocess

logger = logging.getLogger(__name__)

# Joules in one kWh: intensities and prices are per kWh.

DEFAULT_ELECTRICITYMAPS_URL = "https://api.electricitymap.org/v3"


class ZeusCarbonIntensityHTTPError(ZeusBaseError):
    """The carbon intensity service could not be reached or refused the
    request. From CarbonEmissionMonitor.end_window, `measurement` holds what
    the window measured (emissions NaN where the intensity is missing)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.measurement = None


class ZeusCarbonIntensityNotFoundError(ZeusBaseError):
    """The service answered without an intensity for the place or hour.
    From CarbonEmissionMonitor.end_window, `measurement` is set as for
    ZeusCarbonIntensityHTTPError."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.measurement = None


class CarbonIntensityProvider(abc.ABC):
    """A source of grid carbon intensity, gCO2eq/kWh."""

    @abc.abstractmethod
    def get_current_carbon_intensity(self) -> float:
        """The intensity now."""

    @abc.abstractmethod
    def get_recent_carbon_intensity(self) -> Dict[datetime, float]:
        """Intensities of recent periods, keyed by each period's start (a
        timezone-aware datetime; a naive one is taken as UTC)."""

    @property
    @abc.abstractmethod
    def update_period(self) -> timedelta:
        """Length of one period of constant intensity."""

    @property
    @abc.abstractmethod
    def history_length(self) -> int:
        """How many periods get_recent_carbon_intensity covers."""


def _parse_datetime(text: str) -> datetime:
    # ElectricityMaps: "2024-12-18T22:00:00.000Z".
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _validate_location(location, who):
    try:
        lat, lon = (float(v) for v in location)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: location must be (latitude, longitude), got {location!r}")
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        raise ValueError(f"{who}: location {location!r} is not a latitude in [-90, 90] and a "
                         "longitude in [-180, 180]")
    return lat, lon


class ElectrictyMapsClient(CarbonIntensityProvider):
    """Carbon intensity of the grid at a place, from ElectricityMaps (v3 API:
    /carbon-intensity/latest and /carbon-intensity/history, hourly data).

    Args:
        location: (latitude, longitude) of the machine.
        estimate: Accept ElectricityMaps' estimated values (sent as
            disableEstimations=false).
        emission_factor_type: "direct" (combustion only) or "lifecycle".
        api_key: ElectricityMaps token; default $ELECTRICITYMAPS_API_KEY.
        base_url: API root; default $ZEUS_ELECTRICITYMAPS_URL or
            https://api.electricitymap.org/v3.
        timeout_s: Per-request timeout.

    Every call is one HTTP request; failures raise
    ZeusCarbonIntensityHTTPError (unreachable, HTTP error) or
    ZeusCarbonIntensityNotFoundError (no intensity in the answer).
    """

    def __init__(self, location: Tuple[float, float], estimate: bool = False,
                 emission_factor_type: Literal["direct", "lifecycle"] = "direct", *,
                 api_key: Optional[str] = None, base_url: Optional[str] = None,
                 timeout_s: float = 10.0) -> None:
        self.lat, self.long = _validate_location(location, "ElectrictyMapsClient")
        if emission_factor_type not in ("direct", "lifecycle"):
            raise ValueError('ElectrictyMapsClient: emission_factor_type must be "direct" or '
                             f'"lifecycle", got {emission_factor_type!r}')
        self.location = location
        self.estimate = estimate
        self.emission_factor_type = emission_factor_type
        self._api_key = api_key if api_key is not None else os.environ.get(
            "ELECTRICITYMAPS_API_KEY")
        self._base_url = (base_url or os.environ.get("ZEUS_ELECTRICITYMAPS_URL")
                          or DEFAULT_ELECTRICITYMAPS_URL).rstrip("/")
        self._timeout_s = timeout_s

    def _get(self, path: str):
        query = urllib.parse.urlencode({
            "lat": self.lat,
            "lon": self.long,
            "disableEstimations": "false" if self.estimate else "true",
            "emissionFactorType": self.emission_factor_type,
        })
        headers = {"auth-token": self._api_key} if self._api_key else {}
        try:
            return http_get_json(f"{self._base_url}{path}?{query}", headers, self._timeout_s,
                                 ZeusCarbonIntensityHTTPError, "ElectricityMaps")
        except ZeusCarbonIntensityHTTPError as e:
            if not self._api_key and " 401" in e.message:
                raise ZeusCarbonIntensityHTTPError(
                    e.message + " (no API key: set ELECTRICITYMAPS_API_KEY or pass api_key=)"
                ) from e
            raise

    def get_current_carbon_intensity(self) -> float:
        """The latest intensity at the location, gCO2eq/kWh."""
        data = self._get("/carbon-intensity/latest")
        value = data.get("carbonIntensity") if isinstance(data, dict) else None
        if value is None:
            raise ZeusCarbonIntensityNotFoundError(
                f"ElectricityMaps: no current carbon intensity at ({self.lat}, {self.long}) "
                f"(zone {data.get('zone') if isinstance(data, dict) else None!r}; estimate="
                f"{self.estimate}): {str(data)[:200]}")
        return checked_rate(value, f"ElectricityMaps: carbon intensity at ({self.lat}, "
                            f"{self.long})", ZeusCarbonIntensityNotFoundError)

    def get_recent_carbon_intensity(self) -> Dict[datetime, float]:
        """Intensities of the last 24 hours keyed by each hour's start (UTC);
        hours the service has no value for are left out."""
        data = self._get("/carbon-intensity/history")
        history = data.get("history") if isinstance(data, dict) else None
        if not isinstance(history, list):
            raise ZeusCarbonIntensityNotFoundError(
                f"ElectricityMaps: no carbon intensity history at ({self.lat}, {self.long}): "
                f"{str(data)[:200]}")
        recent = {}
        for entry in history:
            try:
                value = entry.get("carbonIntensity")
                if value is None:
                    continue
                when = _parse_datetime(entry["datetime"])
            except (AttributeError, KeyError, TypeError, ValueError):
                logger.debug("ElectricityMaps: skipping history entry %r", entry)
                continue
            if is_rate(value):
                recent[when] = float(value)
            else:
                logger.warning("ElectricityMaps: skipping the carbon intensity of %s: expected a "
                               "finite non-negative number, got %r", when.isoformat(), value)
        return recent

    @property
    def update_period(self) -> timedelta:
        return timedelta(hours=1)

    @property
    def history_length(self) -> int:
        return 24


def _period_buckets(period: timedelta):
    period_s = period.total_seconds()
    if not period_s > 0:
        raise ValueError(f"carbon intensity provider: update_period must be positive, got {period}")

    def bucket_of(t):
        # Rounded to the ms so that rates keyed by datetimes match buckets.
        start = round(math.floor(t / period_s) * period_s, 3)
        return start, round(start + period_s, 3)

    return bucket_of


def _utc(start_s: float) -> datetime:
    return datetime.fromtimestamp(start_s, timezone.utc)


def _normalize(recent: Dict[datetime, float]) -> Dict[float, float]:
    """Bucket start (Unix s) -> intensity of a provider's recent history;
    entries that are not a datetime and a usable intensity (finite,
    non-negative) are left out, with a warning."""
    if not isinstance(recent, dict):
        raise ZeusCarbonIntensityNotFoundError(
            "carbon intensity provider: get_recent_carbon_intensity must return a dict of "
            f"datetime -> gCO2eq/kWh, got {type(recent).__name__}")
    out = {}
    for when, value in recent.items():
        if not isinstance(when, datetime) or not is_rate(value):
            logger.warning("carbon intensity provider: skipping recent entry %r: %r (expected a "
                           "datetime and a finite non-negative number)", when, value)
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        out[round(when.timestamp(), 3)] = float(value)
    return out


@dataclass
class CarbonEmissionMeasurement:
    """Time, energy and carbon emission of one window.

    Attributes:
        time: Duration of the window, s.
        gpu_energy: GPU index -> J.
        gpu_carbon_emission: GPU index -> gCO2eq.
        cpu_energy, cpu_carbon_emission: per CPU socket (None without CPUs).
        dram_energy, dram_carbon_emission: per CPU socket (None without CPUs).
    """

    time: float
    gpu_energy: Dict[int, float]
    gpu_carbon_emission: Dict[int, float]
    cpu_energy: Optional[Dict[int, float]] = None
    cpu_carbon_emission: Optional[Dict[int, float]] = None
    dram_energy: Optional[Dict[int, float]] = None
    dram_carbon_emission: Optional[Dict[int, float]] = None


class CarbonEmissionMonitor(BucketedMonitor):
    """Measures the carbon emission of named windows.

    Args:
        carbon_intensity_provider: Where intensities come from (e.g.
            ElectrictyMapsClient); its update_period sets the buckets.
        gpu_indices, cpu_indices: As ZeusMonitor's.
        sync_execution_with: As ZeusMonitor's.

    Windows may nest and overlap under different keys. Intensities are
    fetched when a window ends (the current bucket's from
    get_current_carbon_intensity, earlier ones from
    get_recent_carbon_intensity) and, while windows are open, after every
    bucket boundary, so windows longer than the provider's history keep
    their early hours' rates. Fetched rates are cached per bucket.
    Thread-safety: windows may be opened and closed from any thread.
    """

    def __init__(self, carbon_intensity_provider: CarbonIntensityProvider,
                 gpu_indices: Optional[List[int]] = None,
                 cpu_indices: Optional[List[int]] = None,
                 sync_execution_with: Literal["torch", "jax", "cupy"] = "torch") -> None:
        warn_if_global_in_subprocess(self)
        self.carbon_intensity_provider = carbon_intensity_provider
        super().__init__("CarbonEmissionMonitor",
                         _period_buckets(carbon_intensity_provider.update_period), gpu_indices,
                         cpu_indices, sync_execution_with)
        # Through a weak reference: the bucket thread must not keep the
        # monitor alive (its __del__ stops the thread).
        this = weakref.ref(self)
        self._windows.on_rollover = lambda starts: (this() and this()._prefetch(starts))
        self._rates: Dict[float, float] = {}  # Bucket start (Unix s) -> gCO2eq/kWh.
        self._rates_lock = threading.Lock()

    def end_window(self, key: str, sync_execution: bool = True) -> CarbonEmissionMeasurement:
        """Closes window `key` and returns its time, energy and emission.
        Raises ValueError when `key` is not open; see the module doc for the
        errors of a missing intensity (the energy travels with them)."""
        buckets = self._end_buckets(key, sync_execution)
        error = None
        try:
            self._fill_rates(buckets)
        except Exception as e:  # A user's provider may raise anything: keep the energy.
            error = e
        with self._rates_lock:
            rates = dict(self._rates)
        measurement = CarbonEmissionMeasurement(*bucket_totals(buckets, rates.get))
        missing = [_utc(b.start_s).isoformat() for b in buckets if b.start_s not in rates]
        self._raise_keeping_energy(
            error, measurement, (ZeusCarbonIntensityHTTPError, ZeusCarbonIntensityNotFoundError),
            lambda e: f"CarbonEmissionMonitor: window '{key}' ended, but the carbon intensity of "
                      f"{', '.join(missing)} is unknown ({e.message}); its energy is in this "
                      "error's `measurement` (emissions NaN)")
        return measurement

    def _store(self, recent: Dict[datetime, float]) -> None:
        with self._rates_lock:
            self._rates.update(_normalize(recent))

    def _fill_rates(self, buckets) -> None:
        with self._rates_lock:
            missing = sorted({b.start_s for b in buckets if b.start_s not in self._rates})
        if not missing:
            return
        current_start = _period_buckets(self.carbon_intensity_provider.update_period)(
            _time.time())[0]
        if any(start < current_start for start in missing):
            self._store(self.carbon_intensity_provider.get_recent_carbon_intensity())
        with self._rates_lock:
            still = [s for s in missing if s not in self._rates]
        for start in still:
            if start >= current_start:
                value = checked_rate(
                    self.carbon_intensity_provider.get_current_carbon_intensity(),
                    "carbon intensity provider: current carbon intensity",
                    ZeusCarbonIntensityNotFoundError)
                with self._rates_lock:
                    self._rates[start] = value
        with self._rates_lock:
            gone = [s for s in still if s not in self._rates]
        if gone:
            raise ZeusCarbonIntensityNotFoundError(
                "the provider's recent history has no intensity for "
                + ", ".join(_utc(s).isoformat() for s in gone))

    def _prefetch(self, finished_starts) -> None:
        with self._rates_lock:
            if all(s in self._rates for s in finished_starts):
                return
        try:
            self._store(self.carbon_intensity_provider.get_recent_carbon_intensity())
        except (ZeusCarbonIntensityHTTPError, ZeusCarbonIntensityNotFoundError) as e:
            logger.warning("CarbonEmissionMonitor: prefetching carbon intensity failed (retried "
                           "when the window ends): %s", e.message)
