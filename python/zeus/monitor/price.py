"""Electricity cost of measurement windows: energy x the utility's price,
hour by hour.

An EnergyCostMonitor measures each window's energy with a ZeusMonitor, split
at local-time hour boundaries; each hour's energy is charged at the price the
rate plan sets for that month, day type (weekday or weekend) and hour. Costs
are in the rate plan's currency (US dollars for OpenEI's US utilities).

OpenEIClient reads a rate plan from OpenEI's Utility Rate Database
(`GET /utility_rates?version=latest&detail=full&lat=&lon=&radius=&sector=`)
with the standard library. Its API key comes from the `api_key` argument or
the OPENEI_API_KEY environment variable, never from the source; the base URL
from `base_url` or ZEUS_OPENEI_URL (default https://api.openei.org). Rates
change about once a year, so a monitor fetches the plan once and keeps it.

The price of an hour is the first tier's `rate` plus its `adj` (if any) of
the rate-structure period that the weekday or weekend schedule (12 months x
24 hours of period indices) gives for that hour, in $/kWh.

When the plan cannot be had (no network, an HTTP error, no such plan),
end_window raises ZeusElectricityPriceHTTPError or
ZeusElectricityPriceNotFoundError and the energy is not lost: the exception's
`measurement` attribute holds the EnergyCostMeasurement with every energy
filled in and NaN as each cost. (Any other exception a user's provider raises
is re-raised with the same `measurement` attribute.) The window is closed
either way.
"""

import abc
import calendar
import logging
import math
import os
import threading
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Dict, List, Literal, Optional, Tuple

from zeus.exception import ZeusBaseError
from zeus.monitor._bucketed import BucketedMonitor, bucket_totals, checked_rate, http_get_json
from zeus.monitor._bucketed import Op  # noqa: F401 (this module's name)
from zeus.monitor.carbon import _validate_location, warn_if_global_in_subprocess

logger = logging.getLogger(__name__)

DEFAULT_OPENEI_URL = "https://api.openei.org"
SECTORS = ("Residential", "Commercial", "Industrial", "Lighting")


def get_time_info() -> Tuple[str, str, int]:
    """(month name, "Weekday" or "Weekend", hour 0-23) of the local time now."""
    return _time_info(datetime.now())


def _time_info(when: datetime) -> Tuple[str, str, int]:
    day_type = "Weekend" if when.weekday() >= 5 else "Weekday"
    return calendar.month_name[when.month], day_type, when.hour


class ZeusElectricityPriceHTTPError(ZeusBaseError):
    """The price service could not be reached or refused the request. From
    EnergyCostMonitor.end_window, `measurement` holds what the window
    measured (costs NaN)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.measurement = None


class ZeusElectricityPriceNotFoundError(ZeusBaseError):
    """The service has no such rate plan, or the plan lacks a price. From
    EnergyCostMonitor.end_window, `measurement` is set as for
    ZeusElectricityPriceHTTPError."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.measurement = None


class ElectricityPriceProvider(abc.ABC):
    """A source of electricity prices."""

    @abc.abstractmethod
    def get_current_electricity_prices(self) -> Dict[str, list]:
        """The rate plan: {"energy_rate_structure": [[tier, ...] per period],
        "energy_weekday_schedule": 12 x 24 period indices,
        "energy_weekend_schedule": 12 x 24 period indices}; a tier is a dict
        with "rate" ($/kWh) and optionally "adj"."""


class OpenEIClient(ElectricityPriceProvider):
    """One rate plan of the utility serving a place, from OpenEI.

    Args:
        location: (latitude, longitude).
        label: The plan: its URDB `label` (the plan's id) or its `name`.
        sector: "Residential", "Commercial", "Industrial" or "Lighting".
        radius: Search radius around the location, miles (0-200).
        api_key: OpenEI key; default $OPENEI_API_KEY.
        base_url: API root; default $ZEUS_OPENEI_URL or https://api.openei.org.
        timeout_s: Request timeout.
    """

    def __init__(self, location: Tuple[float, float], label: str,
                 sector: Literal["Residential", "Commercial", "Industrial",
                                 "Lighting"] = "Residential",
                 radius: int = 0, *, api_key: Optional[str] = None,
                 base_url: Optional[str] = None, timeout_s: float = 10.0) -> None:
        self.lat, self.long = _validate_location(location, "OpenEIClient")
        if sector not in SECTORS:
            raise ValueError(f"OpenEIClient: sector must be one of {', '.join(SECTORS)}, "
                             f"got {sector!r}")
        if not 0 <= radius <= 200:
            raise ValueError(f"OpenEIClient: radius must be 0 to 200 miles, got {radius!r}")
        if not label:
            raise ValueError("OpenEIClient: label must name a rate plan")
        self.location = location
        self.label = label
        self.sector = sector
        self.radius = radius
        self._api_key = api_key if api_key is not None else os.environ.get("OPENEI_API_KEY")
        self._base_url = (base_url or os.environ.get("ZEUS_OPENEI_URL")
                          or DEFAULT_OPENEI_URL).rstrip("/")
        self._timeout_s = timeout_s

    def search_json(self, data, key_name, target_value, return_value):
        """Depth-first search of decoded JSON for a dict whose `key_name` is
        `target_value`; returns that dict's `return_value` (None when no dict
        matches or it lacks the key)."""
        if isinstance(data, dict):
            if data.get(key_name) == target_value:
                return data.get(return_value)
            children = data.values()
        elif isinstance(data, list):
            children = data
        else:
            return None
        for child in children:
            found = self.search_json(child, key_name, target_value, return_value)
            if found is not None:
                return found
        return None

    def get_current_electricity_prices(self) -> Dict[str, list]:
        """Fetches the plan (one HTTP request). Raises
        ZeusElectricityPriceHTTPError (no key, unreachable, HTTP error) or
        ZeusElectricityPriceNotFoundError (no such plan or no energy rates)."""
        if not self._api_key:
            raise ZeusElectricityPriceHTTPError(
                "OpenEI: no API key: set OPENEI_API_KEY or pass api_key= to OpenEIClient")
        query = urllib.parse.urlencode({
            "version": "latest", "format": "json", "detail": "full", "api_key": self._api_key,
            "lat": self.lat, "lon": self.long, "radius": self.radius, "sector": self.sector,
        })
        data = http_get_json(f"{self._base_url}/utility_rates?{query}", {}, self._timeout_s,
                             ZeusElectricityPriceHTTPError, "OpenEI", redact=self._api_key)
        if isinstance(data, dict) and "error" in data:
            raise ZeusElectricityPriceHTTPError(f"OpenEI: the service answered an error: "
                                                f"{str(data['error'])[:300]}")
        prices = {}
        for key, field in (("energy_rate_structure", "energyratestructure"),
                           ("energy_weekday_schedule", "energyweekdayschedule"),
                           ("energy_weekend_schedule", "energyweekendschedule")):
            value = self.search_json(data, "label", self.label, field)
            if value is None:
                value = self.search_json(data, "name", self.label, field)
            prices[key] = value
        if prices["energy_rate_structure"] is None:
            names = [item.get("name") for item in (data.get("items") or [])
                     if isinstance(item, dict)] if isinstance(data, dict) else []
            raise ZeusElectricityPriceNotFoundError(
                f"OpenEI: no {self.sector} rate plan labelled or named {self.label!r} with energy "
                f"rates within {self.radius} miles of ({self.lat}, {self.long}); plans there: "
                f"{names[:10]}")
        if prices["energy_weekday_schedule"] is None or prices["energy_weekend_schedule"] is None:
            raise ZeusElectricityPriceNotFoundError(
                f"OpenEI: rate plan {self.label!r} has energy rates but no weekday/weekend "
                "schedule")
        return prices


def price_at(prices: Dict[str, list], when: datetime) -> float:
    """The price ($/kWh) of the hour holding local time `when` under a plan
    from get_current_electricity_prices. Raises
    ZeusElectricityPriceNotFoundError when the plan has no price there."""
    weekend = when.weekday() >= 5
    month, day_type, hour = _time_info(when)
    where = f"electricity price: the rate plan has no price for {month} {day_type} hour {hour}"
    try:
        schedule = prices["energy_weekend_schedule" if weekend else "energy_weekday_schedule"]
        period = schedule[when.month - 1][when.hour]
        structure = prices["energy_rate_structure"]
        # A period is an index into the structure, never counted from its
        # end (a negative Python index) nor a bool or float.
        if isinstance(period, bool) or not isinstance(period, int) or \
                not 0 <= period < len(structure):
            raise ZeusElectricityPriceNotFoundError(
                f"{where}: schedule period {period!r} is not an index of the "
                f"{len(structure)} periods of the rate structure")
        tier = structure[period][0]
        rate = checked_rate(tier.get("rate", 0.0), f"{where}: period {period} rate",
                            ZeusElectricityPriceNotFoundError)
        adj = tier.get("adj", 0.0)
        adj = 0.0 if adj is None else adj
        if isinstance(adj, bool) or not isinstance(adj, (int, float)) or not math.isfinite(adj):
            raise ZeusElectricityPriceNotFoundError(
                f"{where}: period {period} adj: expected a finite number, got {adj!r}")
        return checked_rate(rate + adj, f"{where}: period {period} rate + adj",
                            ZeusElectricityPriceNotFoundError)
    except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise ZeusElectricityPriceNotFoundError(f"{where}: {e!r}") from e


def _local_hours(t: float):
    start = datetime.fromtimestamp(t).replace(minute=0, second=0, microsecond=0).timestamp()
    return start, start + 3600.0


@dataclass
class EnergyCostMeasurement:
    """Time, energy and cost of one window.

    Attributes:
        time: Duration of the window, s.
        gpu_energy: GPU index -> J.
        gpu_energy_cost: GPU index -> cost in the plan's currency.
        cpu_energy, cpu_energy_cost: per CPU socket (None without CPUs).
        dram_energy, dram_energy_cost: per CPU socket (None without CPUs).
    """

    time: float
    gpu_energy: Dict[int, float]
    gpu_energy_cost: Dict[int, float]
    cpu_energy: Optional[Dict[int, float]] = None
    cpu_energy_cost: Optional[Dict[int, float]] = None
    dram_energy: Optional[Dict[int, float]] = None
    dram_energy_cost: Optional[Dict[int, float]] = None


class EnergyCostMonitor(BucketedMonitor):
    """Measures the electricity cost of named windows.

    Args:
        electricity_price_provider: Where the rate plan comes from (e.g.
            OpenEIClient); fetched once, when the first window ends (retried
            at the next end_window after a failure).
        gpu_indices, cpu_indices: As ZeusMonitor's.
        sync_execution_with: As ZeusMonitor's.

    Thread-safety: windows may be opened and closed from any thread.
    """

    def __init__(self, electricity_price_provider: ElectricityPriceProvider,
                 gpu_indices: Optional[List[int]] = None,
                 cpu_indices: Optional[List[int]] = None,
                 sync_execution_with: Literal["torch", "jax", "cupy"] = "torch") -> None:
        warn_if_global_in_subprocess(self)
        self.electricity_price_provider = electricity_price_provider
        super().__init__("EnergyCostMonitor", _local_hours, gpu_indices, cpu_indices,
                         sync_execution_with)
        self._prices: Optional[Dict[str, list]] = None
        self._prices_lock = threading.Lock()
        # The fetch of the plan in progress: callers that come meanwhile wait
        # for its outcome instead of fetching after it (waits never add up).
        self._fetch: Optional[_Fetch] = None

    def end_window(self, key: str, sync_execution: bool = True) -> EnergyCostMeasurement:
        """Closes window `key` and returns its time, energy and cost. Raises
        ValueError when `key` is not open; see the module doc for the errors
        of a missing price (the energy travels with them)."""
        buckets = self._end_buckets(key, sync_execution)
        error = None
        rates: Dict[float, float] = {}
        try:
            prices = self._current_prices()
            for bucket in buckets:
                rates[bucket.start_s] = price_at(prices, datetime.fromtimestamp(bucket.start_s))
        except Exception as e:  # A user's provider may raise anything: keep the energy.
            error = e
        measurement = EnergyCostMeasurement(*bucket_totals(buckets, rates.get))
        self._raise_keeping_energy(
            error, measurement, (ZeusElectricityPriceHTTPError, ZeusElectricityPriceNotFoundError),
            lambda e: f"EnergyCostMonitor: window '{key}' ended, but its electricity price is "
                      f"unknown ({e.message}); its energy is in this error's `measurement` "
                      "(costs NaN)")
        return measurement

    def _current_prices(self) -> Dict[str, list]:
        """The plan: kept once fetched; else fetched by this call, or by the
        call already fetching it, whose outcome (plan or error) this one
        takes."""
        with self._prices_lock:
            if self._prices is not None:
                return self._prices
            fetch = self._fetch
            mine = fetch is None
            if mine:
                fetch = self._fetch = _Fetch()
            else:
                fetch.waiters += 1
        if not mine:
            fetch.done.wait()
            if fetch.error is not None:
                raise fetch.error
            return fetch.prices
        try:
            fetch.prices = self.electricity_price_provider.get_current_electricity_prices()
        except Exception as e:
            fetch.error = e
            raise
        finally:
            with self._prices_lock:
                if fetch.error is None:
                    self._prices = fetch.prices
                self._fetch = None
            fetch.done.set()
        return fetch.prices


class _Fetch:
    """One fetch of a rate plan and the callers waiting for it."""

    def __init__(self):
        self.done = threading.Event()
        self.prices: Optional[Dict[str, list]] = None
        self.error: Optional[BaseException] = None
        self.waiters = 0
