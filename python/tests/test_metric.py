"""zeus.metric against Debian's real Prometheus Pushgateway and Prometheus,
both started on loopback free ports: the pushed values are read back with
PromQL through Prometheus's /api/v1/query. Skipped only when the
prometheus-pushgateway or prometheus binary is missing."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from zeus.exception import ZeusBaseError
from zeus.metric import (EnergyCumulativeCounter, EnergyHistogram, MonitoringProcessState,
                         PowerGauge)

PUSHGATEWAY = os.environ.get("ZEUS_PUSHGATEWAY") or shutil.which("prometheus-pushgateway") or (
    "/usr/bin/prometheus-pushgateway" if os.path.exists("/usr/bin/prometheus-pushgateway")
    else None)
PROMETHEUS = os.environ.get("ZEUS_PROMETHEUS") or shutil.which("prometheus") or (
    "/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None)

pytestmark = pytest.mark.skipif(not (PUSHGATEWAY and PROMETHEUS),
                                reason="needs prometheus-pushgateway and prometheus binaries")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def wait_ready(url, proc, log_path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            get(url)
            return
        except OSError:
            time.sleep(0.1)
    with open(log_path) as f:
        pytest.fail(f"{url} did not become ready:\n{f.read()[-3000:]}")


class Stack:
    def __init__(self, directory):
        self.procs = []
        gateway_port = free_port()
        self.pushgateway_url = f"http://127.0.0.1:{gateway_port}"
        self._start([PUSHGATEWAY, f"--web.listen-address=127.0.0.1:{gateway_port}",
                     f"--persistence.file={directory}/pushgateway.data", "--log.level=warn"],
                    f"{directory}/pushgateway.log", self.pushgateway_url + "/-/ready")
        prometheus_port = free_port()
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\n"
                    "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{gateway_port}']\n")
        self.prometheus_url = f"http://127.0.0.1:{prometheus_port}"
        self._start([PROMETHEUS, f"--config.file={config}",
                     f"--storage.tsdb.path={directory}/data",
                     f"--web.listen-address=127.0.0.1:{prometheus_port}",
                     "--storage.tsdb.retention.time=1h", "--log.level=warn"],
                    f"{directory}/prometheus.log", self.prometheus_url + "/-/ready")

    def _start(self, argv, log_path, ready_url):
        log = open(log_path, "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        wait_ready(ready_url, proc, log_path)

    def query(self, promql):
        """{frozenset(labels without __name__): value} of an instant query."""
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        body = json.loads(get(url))
        assert body["status"] == "success", body
        return {frozenset((k, v) for k, v in r["metric"].items() if k != "__name__"):
                float(r["value"][1]) for r in body["data"]["result"]}

    def wait_value(self, promql, predicate, timeout=30):
        """Polls until the query's single value satisfies predicate."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.query(promql)
            if len(last) == 1 and predicate(next(iter(last.values()))):
                return next(iter(last.values()))
            time.sleep(0.1)
        pytest.fail(f"{promql} never satisfied the check; last answer {last}")

    def close(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def stack():
    directory = tempfile.mkdtemp(prefix="zeus-prometheus-")
    s = Stack(directory)
    yield s
    s.close()
    shutil.rmtree(directory, ignore_errors=True)


def test_energy_histogram_observations_read_back_through_promql(stack):
    histogram = EnergyHistogram(cpu_indices=[], gpu_indices=[0, 1],
                                pushgateway_url=stack.pushgateway_url, job="zeus_hist",
                                gpu_bucket_range=[0.5, 1.0, 2.0, 5.0])
    measured = []
    real_end = histogram.energy_monitor.end_window

    def spy(*args, **kwargs):
        measured.append(real_end(*args, **kwargs))
        return measured[-1]

    histogram.energy_monitor.end_window = spy
    for _ in range(3):
        histogram.begin_window("step")
        time.sleep(0.01)
        histogram.end_window("step")
    histogram.begin_window("epoch")
    histogram.end_window("epoch")
    steps = measured[:3]
    for gpu in (0, 1):
        selector = f'{{job="zeus_hist",window="step",index="{gpu}"}}'
        count = stack.wait_value(f"energy_monitor_gpu_energy_joules_count{selector}",
                                 lambda v: v == 3)
        assert count == 3
        total = stack.wait_value(f"energy_monitor_gpu_energy_joules_sum{selector}",
                                 lambda v: v > 0)
        assert total == pytest.approx(sum(m.gpu_energy[gpu] for m in steps))
        for le in (0.5, 1.0, 2.0, 5.0):
            expected = sum(1 for m in steps if m.gpu_energy[gpu] <= le)
            # The Pushgateway re-exposes bucket bounds Go-style: le="1", not "1.0".
            got = stack.query(
                f'energy_monitor_gpu_energy_joules_bucket{{job="zeus_hist",window="step",'
                f'index="{gpu}",le="{le:g}"}}')
            assert list(got.values()) == [expected], (le, got)
    epoch = stack.wait_value(
        'energy_monitor_gpu_energy_joules_sum{job="zeus_hist",window="epoch",index="1"}',
        lambda v: v > 0)
    assert epoch == pytest.approx(measured[3].gpu_energy[1])
    # Per window, summed over GPUs, as the original's docs query it.
    by_window = stack.query('sum(energy_monitor_gpu_energy_joules_count{job="zeus_hist"}) '
                            'by (window)')
    assert by_window == {frozenset({("window", "step")}): 6.0,
                         frozenset({("window", "epoch")}): 2.0}


def test_energy_cumulative_counter_grows_while_the_window_is_open(stack):
    counter = EnergyCumulativeCounter(cpu_indices=[], gpu_indices=[0], update_period=0.3,
                                      pushgateway_url=stack.pushgateway_url, job="zeus_counter")
    counter.begin_window("train")
    state = counter.window_state["train"]
    assert isinstance(state, MonitoringProcessState) and state.proc.is_alive()
    query = 'energy_monitor_gpu_energy_joules_total{job="zeus_counter",window="train",index="0"}'
    first = stack.wait_value(query, lambda v: v > 0)
    second = stack.wait_value(query, lambda v: v > first)
    counter.end_window("train")
    assert not state.proc.is_alive() and state.proc.exitcode == 0
    assert "train" not in counter.window_state
    # The helper's final push (its last partial period) is on the Pushgateway
    # once end_window returns; Prometheus shows exactly it, and nothing after.
    pushed = [float(line.rsplit(" ", 1)[1]) for line in get(stack.pushgateway_url + "/metrics")
              .splitlines() if line.startswith("energy_monitor_gpu_energy_joules_total{")
              and 'job="zeus_counter"' in line and 'window="train"' in line]
    assert len(pushed) == 1 and pushed[0] >= second
    stack.wait_value(query, lambda v: v == pushed[0])
    time.sleep(1.0)
    assert list(stack.query(query).values()) == [pushed[0]]
    with pytest.raises(ValueError, match="'train' is not open"):
        counter.end_window("train")


def test_power_gauge_reads_back_the_gpu_power(stack):
    gauge = PowerGauge(gpu_indices=[0, 1], update_period=0.3,
                       pushgateway_url=stack.pushgateway_url, job="zeus_power")
    gauge.begin_window("serve")
    with pytest.raises(ValueError, match="already open"):
        gauge.begin_window("serve")
    try:
        for gpu in (0, 1):
            # The fake libnvml's instant power is 150 W.
            watts = stack.wait_value(
                f'power_monitor_gpu_power_watts{{job="zeus_power",window="serve",index="{gpu}"}}',
                lambda v: v > 0)
            assert watts == pytest.approx(150.0)
    finally:
        gauge.end_window("serve")


def test_windows_of_one_job_keep_their_own_series(stack):
    gauge = PowerGauge(gpu_indices=[0], update_period=0.2,
                       pushgateway_url=stack.pushgateway_url, job="zeus_two")
    gauge.begin_window("a")
    gauge.begin_window("b")
    gauge.end_window("a")
    gauge.end_window("b")
    for window in ("a", "b"):
        stack.wait_value(f'power_monitor_gpu_power_watts{{job="zeus_two",window="{window}"}}',
                         lambda v: v == pytest.approx(150.0))


def test_bad_use_is_reported_clearly(stack):
    with pytest.raises(ValueError, match="gpu_bucket_range is empty"):
        EnergyHistogram([], [0], stack.pushgateway_url, "j", gpu_bucket_range=[])
    with pytest.raises(ValueError, match="update_period must be > 0"):
        PowerGauge([0], 0, stack.pushgateway_url, "j")
    with pytest.raises(ValueError, match="not open"):
        EnergyCumulativeCounter([], [0], 1, stack.pushgateway_url, "j").end_window("nope")
    dead = f"http://127.0.0.1:{free_port()}"
    histogram = EnergyHistogram([], [0], dead, "zeus_dead")
    histogram.begin_window("w")
    with pytest.raises(ZeusBaseError, match=f"Pushgateway at {dead} failed"):
        histogram.end_window("w")
    # The observation stayed in the registry for the next push.
    sample = histogram.registry.get_sample_value(
        "energy_monitor_gpu_energy_joules_count", {"window": "w", "index": "0"})
    assert sample == 1.0


def test_a_helper_that_cannot_measure_fails_begin_window(stack):
    # The fake libnvml has GPUs 0 and 1: the helper's ZeusMonitor refuses 7.
    counter = EnergyCumulativeCounter(cpu_indices=[], gpu_indices=[7], update_period=0.2,
                                      pushgateway_url=stack.pushgateway_url, job="zeus_bad")
    with pytest.raises(ZeusBaseError, match="window 'w' exited \\(code 1\\) before it began"):
        counter.begin_window("w")
    assert "w" not in counter.window_state
