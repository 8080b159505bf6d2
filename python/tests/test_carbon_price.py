"""CarbonEmissionMonitor/ElectrictyMapsClient and EnergyCostMonitor/
OpenEIClient against local fakes of ElectricityMaps and OpenEI on loopback
(answers of the shape the real services give), on the fake libnvml."""

import json
import math
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import serve_in_background
from zeus.monitor.carbon import (CarbonEmissionMeasurement, CarbonEmissionMonitor,
                                 CarbonIntensityProvider, ElectrictyMapsClient,
                                 ZeusCarbonIntensityHTTPError, ZeusCarbonIntensityNotFoundError)
from zeus.monitor.price import (ElectricityPriceProvider, EnergyCostMeasurement, EnergyCostMonitor,
                                OpenEIClient,
                                ZeusElectricityPriceHTTPError, ZeusElectricityPriceNotFoundError,
                                get_time_info, price_at)

J_PER_KWH = 3.6e6


class FakeService:
    """An HTTP server on 127.0.0.1 answering GET path -> (status, JSON)."""

    def __init__(self):
        self.routes = {}
        self.requests = []  # (path, query dict, headers dict)
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parsed = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(parsed.query))
                service.requests.append((parsed.path, query,
                                         {k.lower(): v for k, v in self.headers.items()}))
                status, body = service.routes.get(parsed.path, (404, {"error": "no route"}))
                if callable(body):
                    body = body(query)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.close = serve_in_background(self.server)


@pytest.fixture
def service():
    s = FakeService()
    yield s
    s.close()


def closed_port_url():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def hour_start(dt):
    return dt.replace(minute=0, second=0, microsecond=0)


def em_entry(when, value, zone="US-MIDA-PJM"):
    # The shape of ElectricityMaps v3 /carbon-intensity/latest and of each
    # /history entry.
    return {"zone": zone, "carbonIntensity": value,
            "datetime": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "updatedAt": "2026-11-25T14:41:00.000Z", "createdAt": "2026-11-22T14:43:00.000Z",
            "emissionFactorType": "lifecycle", "isEstimated": True,
            "estimationMethod": "TIME_SLICER_AVERAGE"}


def electricitymaps(service, latest=412.0, history=None):
    now = hour_start(datetime.now(timezone.utc))
    service.routes["/v3/carbon-intensity/latest"] = (200, em_entry(now, latest))
    if history is None:
        history = {now - timedelta(hours=h): 300.0 + h for h in range(1, 24)}
    entries = [em_entry(w, v) for w, v in sorted(history.items())]
    service.routes["/v3/carbon-intensity/history"] = (
        200, {"zone": "US-MIDA-PJM", "history": entries})
    return now


def test_electricitymaps_client_reads_latest_and_history(service):
    this_hour = hour_start(datetime.now(timezone.utc))
    now = electricitymaps(service, latest=412.0,
                          history={this_hour - timedelta(hours=1): 390.0,
                                   this_hour - timedelta(hours=2): None})
    client = ElectrictyMapsClient((42.28, -83.74), estimate=True, emission_factor_type="lifecycle",
                                  api_key="test-key", base_url=service.url + "/v3")
    assert client.get_current_carbon_intensity() == 412.0
    path, query, headers = service.requests[-1]
    assert path == "/v3/carbon-intensity/latest"
    assert query == {"lat": "42.28", "lon": "-83.74", "disableEstimations": "false",
                     "emissionFactorType": "lifecycle"}
    assert headers.get("auth-token") == "test-key"
    recent = client.get_recent_carbon_intensity()
    assert recent == {now - timedelta(hours=1): 390.0}  # The null hour is left out.
    assert all(k.tzinfo is not None for k in recent)
    assert client.update_period == timedelta(hours=1) and client.history_length == 24


def test_electricitymaps_client_errors_are_clear(service, monkeypatch):
    monkeypatch.delenv("ELECTRICITYMAPS_API_KEY", raising=False)
    service.routes["/v3/carbon-intensity/latest"] = (401, {"message": "auth-token is missing"})
    client = ElectrictyMapsClient((42.28, -83.74), base_url=service.url + "/v3")
    with pytest.raises(ZeusCarbonIntensityHTTPError, match="HTTP 401.*auth-token is missing.*"
                       "ELECTRICITYMAPS_API_KEY"):
        client.get_current_carbon_intensity()
    service.routes["/v3/carbon-intensity/latest"] = (200, {"zone": "XX", "carbonIntensity": None})
    with pytest.raises(ZeusCarbonIntensityNotFoundError, match="no current carbon intensity"):
        client.get_current_carbon_intensity()
    offline = ElectrictyMapsClient((42.28, -83.74), base_url=closed_port_url())
    with pytest.raises(ZeusCarbonIntensityHTTPError, match="no network or service unreachable"):
        offline.get_recent_carbon_intensity()
    with pytest.raises(ValueError, match="emission_factor_type"):
        ElectrictyMapsClient((0, 0), emission_factor_type="indirect")
    with pytest.raises(ValueError, match="latitude"):
        ElectrictyMapsClient((95.0, 0.0))


def test_electricitymaps_url_and_key_from_environment(service, monkeypatch):
    electricitymaps(service, latest=100.0)
    monkeypatch.setenv("ZEUS_ELECTRICITYMAPS_URL", service.url + "/v3")
    monkeypatch.setenv("ELECTRICITYMAPS_API_KEY", "env-key")
    assert ElectrictyMapsClient((1.0, 2.0)).get_current_carbon_intensity() == 100.0
    assert service.requests[-1][2].get("auth-token") == "env-key"


def test_carbon_monitor_charges_the_current_hour(service):
    electricitymaps(service, latest=412.0)
    client = ElectrictyMapsClient((42.28, -83.74), api_key="k", base_url=service.url + "/v3")
    monitor = CarbonEmissionMonitor(client, gpu_indices=[0, 1])
    try:
        monitor.begin_window("step")
        assert monitor.current_keys == {"step"}
        # The original's process and queues exist, as None (a thread here).
        assert (monitor.context, monitor.command_q, monitor.finished_q) == (None, None, None)
        time.sleep(0.05)
        result = monitor.end_window("step")
    finally:
        monitor.close()
    assert isinstance(result, CarbonEmissionMeasurement)
    assert set(result.gpu_energy) == {0, 1} and result.time > 0.04
    for i in (0, 1):
        assert result.gpu_energy[i] > 0
        assert result.gpu_carbon_emission[i] == pytest.approx(
            result.gpu_energy[i] / J_PER_KWH * 412.0)
    with pytest.raises(ValueError, match="'step' is not open"):
        monitor.end_window("step")


def record_buckets(monitor):
    """Makes `monitor` keep the buckets of every window it ends; returns the
    list (one entry per end_window, in order) they go to."""
    seen = []
    real_end = monitor._windows.end
    monitor._windows.end = lambda key, sync: seen.append(real_end(key, sync)) or seen[-1]
    return seen


def gpu0_charge(buckets, rate_of):
    """GPU 0's energy in `buckets` charged at rate_of(bucket start) per kWh."""
    return sum(b.measurement.gpu_energy[0] / J_PER_KWH * rate_of(b.start_s) for b in buckets)


def failed_window_measurement(monitor, error_cls, match):
    """Opens and ends window "w" on `monitor` (closed afterwards), expecting
    end_window to raise `error_cls` matching `match`; returns the error's
    measurement."""
    try:
        monitor.begin_window("w")
        with pytest.raises(error_cls, match=match) as info:
            monitor.end_window("w")
    finally:
        monitor.close()
    return info.value.measurement


class SteppedProvider(CarbonIntensityProvider):
    """Intensity changing every `period_s` (a short "hour"), known exactly."""

    def __init__(self, period_s, history_periods=23):
        self.period_s = period_s
        self.history_periods = history_periods
        self.calls = []

    def rate(self, start_s):
        return 100.0 + (round(start_s / self.period_s) % 7) * 50.0

    def get_current_carbon_intensity(self):
        self.calls.append("current")
        start = math.floor(time.time() / self.period_s) * self.period_s
        return self.rate(start)

    def get_recent_carbon_intensity(self):
        self.calls.append("recent")
        now = math.floor(time.time() / self.period_s) * self.period_s
        return {datetime.fromtimestamp(now - k * self.period_s, timezone.utc):
                self.rate(now - k * self.period_s) for k in range(1, self.history_periods + 1)}

    @property
    def update_period(self):
        return timedelta(seconds=self.period_s)

    @property
    def history_length(self):
        return 24


def test_carbon_monitor_splits_windows_at_period_boundaries():
    provider = SteppedProvider(0.25)
    monitor = CarbonEmissionMonitor(provider, gpu_indices=[0])
    seen = record_buckets(monitor)
    try:
        monitor.begin_window("long")
        monitor.begin_window("short")
        time.sleep(0.1)
        short = monitor.end_window("short")
        time.sleep(0.9)
        long = monitor.end_window("long")
    finally:
        monitor.close()
    short_buckets, long_buckets = seen
    assert len(long_buckets) >= 3
    # Buckets start on period boundaries, in order (one delayed past a whole
    # period by a loaded machine would skip a start, never repeat one).
    starts = [b.start_s for b in long_buckets]
    steps = [(b - a) / 0.25 for a, b in zip(starts, starts[1:])]
    assert all(step >= 0.999 and abs(step - round(step)) < 1e-3 for step in steps), steps
    assert sum(b.measurement.gpu_energy[0] for b in long_buckets) == pytest.approx(
        long.gpu_energy[0])
    assert long.gpu_carbon_emission[0] == pytest.approx(gpu0_charge(long_buckets, provider.rate))
    # Distinct rates per bucket: no single rate explains the total.
    rates = {provider.rate(s) for s in starts}
    assert len(rates) >= 3
    assert "recent" in provider.calls  # Past buckets come from the history.
    assert short.gpu_carbon_emission[0] == pytest.approx(gpu0_charge(short_buckets, provider.rate))


def test_carbon_monitor_keeps_rates_of_hours_older_than_the_history():
    # The provider remembers three periods back only; the monitor fetches after
    # every boundary, so a window of many periods is still charged exactly.
    provider = SteppedProvider(0.2, history_periods=3)
    monitor = CarbonEmissionMonitor(provider, gpu_indices=[0])
    seen = record_buckets(monitor)
    try:
        monitor.begin_window("long")
        time.sleep(1.7)
        result = monitor.end_window("long")
    finally:
        monitor.close()
    buckets = seen[0]
    assert buckets[-1].start_s - buckets[0].start_s > 3 * 0.2  # Beyond the history.
    assert result.gpu_carbon_emission[0] == pytest.approx(gpu0_charge(buckets, provider.rate))
    assert provider.calls.count("recent") >= 2


def test_carbon_monitor_offline_keeps_the_energy():
    client = ElectrictyMapsClient((42.28, -83.74), api_key="k", base_url=closed_port_url())
    monitor = CarbonEmissionMonitor(client, gpu_indices=[0])
    try:
        monitor.begin_window("w")
        with pytest.raises(ZeusCarbonIntensityHTTPError, match="window 'w' ended.*unknown") as info:
            monitor.end_window("w")
        # The window is closed; its energy came back with the error.
        assert monitor.current_keys == set()
        measurement = info.value.measurement
        assert isinstance(measurement, CarbonEmissionMeasurement)
        assert measurement.gpu_energy[0] > 0
        assert math.isnan(measurement.gpu_carbon_emission[0])
        with pytest.raises(ValueError, match="already open"):
            monitor.begin_window("again")
            monitor.begin_window("again")
    finally:
        monitor.close()


def urdb_item(label, name, weekday_period_by_hour, weekend_period=0):
    # The shape of an OpenEI utility_rates (version latest, detail=full) item.
    return {
        "label": label, "uri": f"https://apps.openei.org/IURDB/rate/view/{label}",
        "name": name, "utility": "DTE Electric Company", "eiaid": 5109,
        "sector": "Residential", "startdate": 1672531200, "approved": True,
        "energyratestructure": [[{"max": 17, "unit": "kWh", "rate": 0.12}],
                                [{"unit": "kWh", "rate": 0.20, "adj": 0.01}]],
        "energyweekdayschedule": [[weekday_period_by_hour(h) for h in range(24)]
                                  for _ in range(12)],
        "energyweekendschedule": [[weekend_period] * 24 for _ in range(12)],
        "fixedchargefirstmeter": 9.0, "fixedchargeunits": "$/month",
    }


def openei(service, label="64b0b2e8f1c2", name="Residential Time of Day"):
    items = [urdb_item("5cb0aaaa", "Residential Standard", lambda h: 0),
             urdb_item(label, name, lambda h: 1 if 11 <= h < 19 else 0)]
    service.routes["/utility_rates"] = (200, {"items": items})
    return items[1]


def test_openei_client_finds_the_plan_by_label_or_name(service):
    item = openei(service)
    client = OpenEIClient((42.28, -83.74), "64b0b2e8f1c2", sector="Residential", radius=5,
                          api_key="secret-key", base_url=service.url)
    prices = client.get_current_electricity_prices()
    assert prices == {"energy_rate_structure": item["energyratestructure"],
                      "energy_weekday_schedule": item["energyweekdayschedule"],
                      "energy_weekend_schedule": item["energyweekendschedule"]}
    path, query, _ = service.requests[-1]
    assert path == "/utility_rates"
    assert query["api_key"] == "secret-key" and query["detail"] == "full"
    assert query["sector"] == "Residential" and query["radius"] == "5"
    by_name = OpenEIClient((42.28, -83.74), "Residential Time of Day", api_key="k",
                           base_url=service.url).get_current_electricity_prices()
    assert by_name == prices
    # Weekday peak 11-19 h: 0.20 + 0.01 adj; off-peak and weekends 0.12.
    assert price_at(prices, datetime(2026, 11, 25, 12)) == pytest.approx(0.21)  # Wednesday.
    assert price_at(prices, datetime(2026, 11, 25, 3)) == pytest.approx(0.12)
    assert price_at(prices, datetime(2026, 11, 28, 12)) == pytest.approx(0.12)  # Saturday.
    month, day_type, hour = get_time_info()
    now = datetime.now()
    assert (month, hour) == (now.strftime("%B"), now.hour) or hour != now.hour
    assert day_type in ("Weekday", "Weekend")


def test_openei_client_errors_are_clear(service, monkeypatch):
    monkeypatch.delenv("OPENEI_API_KEY", raising=False)
    openei(service)
    with pytest.raises(ZeusElectricityPriceHTTPError, match="OPENEI_API_KEY"):
        OpenEIClient((42.28, -83.74), "x", base_url=service.url).get_current_electricity_prices()
    with pytest.raises(ZeusElectricityPriceNotFoundError,
                       match="'no-such-plan'.*Residential Standard"):
        OpenEIClient((42.28, -83.74), "no-such-plan", api_key="k",
                     base_url=service.url).get_current_electricity_prices()
    service.routes["/utility_rates"] = (403, {"error": {
        "code": "API_KEY_INVALID", "message": "An invalid api_key was supplied."}})
    with pytest.raises(ZeusElectricityPriceHTTPError, match="HTTP 403.*invalid api_key") as info:
        OpenEIClient((42.28, -83.74), "x", api_key="hunter2",
                     base_url=service.url).get_current_electricity_prices()
    assert "hunter2" not in str(info.value)  # The key is not echoed.
    with pytest.raises(ValueError, match="sector"):
        OpenEIClient((0, 0), "x", sector="Domestic")


def test_energy_cost_monitor_charges_the_hour_price(service):
    openei(service)
    client = OpenEIClient((42.28, -83.74), "64b0b2e8f1c2", api_key="k", base_url=service.url)
    monitor = EnergyCostMonitor(client, gpu_indices=[0, 1])
    try:
        monitor.begin_window("epoch")
        time.sleep(0.05)
        begun = datetime.now()
        result = monitor.end_window("epoch")
        monitor.begin_window("epoch")
        second = monitor.end_window("epoch")
    finally:
        monitor.close()
    assert isinstance(result, EnergyCostMeasurement)
    prices = client.get_current_electricity_prices()
    price = price_at(prices, begun)
    for i in (0, 1):
        assert result.gpu_energy[i] > 0
        assert result.gpu_energy_cost[i] == pytest.approx(result.gpu_energy[i] / J_PER_KWH * price)
    assert second.gpu_energy_cost[0] > 0
    # The plan is fetched once per monitor (rates change yearly), here by the
    # first end_window (the test's own call above makes the second request).
    assert len([r for r in service.requests if r[0] == "/utility_rates"]) == 2


def test_energy_cost_monitor_offline_keeps_the_energy():
    client = OpenEIClient((42.28, -83.74), "x", api_key="k", base_url=closed_port_url())
    measurement = failed_window_measurement(EnergyCostMonitor(client, gpu_indices=[0]),
                                            ZeusElectricityPriceHTTPError, "no network")
    assert isinstance(measurement, EnergyCostMeasurement)
    assert measurement.gpu_energy[0] > 0 and math.isnan(measurement.gpu_energy_cost[0])


def test_an_unclosed_monitor_is_collected_and_its_thread_ends():
    import gc
    import weakref
    monitor = CarbonEmissionMonitor(SteppedProvider(0.2), gpu_indices=[0])
    monitor.begin_window("w")
    monitor.end_window("w")
    thread = monitor._windows._thread
    ref = weakref.ref(monitor)
    del monitor
    gc.collect()
    assert ref() is None
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_any_provider_failure_keeps_the_energy():
    class Broken(SteppedProvider):
        def get_current_carbon_intensity(self):
            raise RuntimeError("sensor unplugged")

    measurement = failed_window_measurement(
        CarbonEmissionMonitor(Broken(3600.0), gpu_indices=[0]), RuntimeError, "sensor unplugged")
    assert measurement.gpu_energy[0] > 0
    assert math.isnan(measurement.gpu_carbon_emission[0])


GARBAGE_RATES = [float("nan"), -500, float("inf"), True, "412"]


def test_garbage_carbon_intensities_are_not_found_errors(service):
    client = ElectrictyMapsClient((42.28, -83.74), api_key="k", base_url=service.url + "/v3")
    for value in GARBAGE_RATES:
        electricitymaps(service, latest=value)
        with pytest.raises(ZeusCarbonIntensityNotFoundError,
                           match="expected a finite non-negative number, got"):
            client.get_current_carbon_intensity()
    this_hour = hour_start(datetime.now(timezone.utc))
    history = {this_hour - timedelta(hours=h + 1): v for h, v in enumerate(GARBAGE_RATES)}
    history[this_hour - timedelta(hours=9)] = 250.0
    electricitymaps(service, history=history)
    assert client.get_recent_carbon_intensity() == {this_hour - timedelta(hours=9): 250.0}


@pytest.mark.parametrize("value", GARBAGE_RATES)
def test_a_provider_answering_garbage_keeps_the_energy(value):
    class Garbage(SteppedProvider):
        def get_current_carbon_intensity(self):
            return value

    measurement = failed_window_measurement(
        CarbonEmissionMonitor(Garbage(3600.0), gpu_indices=[0]), ZeusCarbonIntensityNotFoundError,
        "current carbon intensity: expected a finite non-negative number")
    assert measurement.gpu_energy[0] > 0
    assert math.isnan(measurement.gpu_carbon_emission[0])


def garbage_plan(rate=0.12, adj=0.0, period=0):
    return {"energy_rate_structure": [[{"rate": rate, "adj": adj}], [{"rate": 0.3}]],
            "energy_weekday_schedule": [[period] * 24 for _ in range(12)],
            "energy_weekend_schedule": [[period] * 24 for _ in range(12)]}


def test_garbage_prices_and_periods_are_not_found_errors():
    when = datetime(2026, 11, 25, 12)
    assert price_at(garbage_plan(), when) == pytest.approx(0.12)
    for plan, match in [(garbage_plan(period=-1), "period -1 is not an index of the 2 periods"),
                        (garbage_plan(period=2), "period 2 is not an index"),
                        (garbage_plan(period=True), "period True is not an index"),
                        (garbage_plan(period=1.0), "period 1.0 is not an index"),
                        (garbage_plan(adj=float("nan")), "adj: expected a finite number"),
                        (garbage_plan(adj=-1.0), "rate \\+ adj: expected a finite non-negative")]:
        with pytest.raises(ZeusElectricityPriceNotFoundError, match=match):
            price_at(plan, when)
    for value in GARBAGE_RATES:
        with pytest.raises(ZeusElectricityPriceNotFoundError,
                           match="period 0 rate: expected a finite non-negative number"):
            price_at(garbage_plan(rate=value), when)


def test_an_openei_plan_with_garbage_rates_keeps_the_energy(service):
    item = openei(service)
    item["energyratestructure"][0][0]["rate"] = float("nan")
    item["energyratestructure"][1][0]["rate"] = float("nan")
    client = OpenEIClient((42.28, -83.74), "64b0b2e8f1c2", api_key="k", base_url=service.url)
    measurement = failed_window_measurement(EnergyCostMonitor(client, gpu_indices=[0]),
                                            ZeusElectricityPriceNotFoundError,
                                            "expected a finite non-negative number, got nan")
    assert measurement.gpu_energy[0] > 0 and math.isnan(measurement.gpu_energy_cost[0])


def test_concurrent_end_windows_share_one_slow_failing_price_fetch():
    calls = []

    class Slow(ElectricityPriceProvider):
        def get_current_electricity_prices(self):
            calls.append(1)
            # Until the four other end_window calls wait for this fetch (a
            # bound only for a broken monitor).
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                fetch = getattr(monitor, "_fetch", None)
                if fetch is not None and fetch.waiters == 4:
                    break
                time.sleep(0.01)
            raise ZeusElectricityPriceHTTPError("OpenEI: hung")

    monitor = EnergyCostMonitor(Slow(), gpu_indices=[0])
    errors = []

    def window(key):
        monitor.begin_window(key)
        try:
            monitor.end_window(key)
        except ZeusElectricityPriceHTTPError as e:
            errors.append(e)

    threads = [threading.Thread(target=window, args=(f"w{i}",)) for i in range(5)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        monitor.close()
    assert len(calls) == 1  # One fetch; the others took its outcome, not their own turn.
    assert len(errors) == 5
    assert all(e.measurement.gpu_energy[0] > 0 and "hung" in e.message for e in errors)
