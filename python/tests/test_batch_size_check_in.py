"""Check-ins during an epoch (BatchSizeOptimizer.on_step_end, POST
/report/progress) against a real `zeus serve` on loopback, a stand-in for the
original server (no such route) and a server that went away.

The energy model (conftest's fake libnvml): each counter read advances both
GPUs' counters by 1 J. A measured step is 2 reads; the run's window adds 1
read when it ends, and each check-in restarts it (1 read more per GPU). So an
epoch of n steps with k check-ins measures exactly GPUS x (2n + 1 + k) J:
anything lost or counted twice shows."""

import http.server
import json
import logging
import os
import re
import subprocess
import urllib.request

import pytest

from conftest import free_port, serve_in_background
from test_batch_size import job_spec
from zeus.exception import InvalidArgumentError, NotFoundError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer
from zeus.optimizer.batch_size.exceptions import ZeusBSOTrainFailError
from zeus.optimizer.batch_size.http import BatchSizeServer, NoSuchRouteError

GPUS = 2
WINDOW = "zeus.batch_size_optimizer"
EVERY_STEP_S = 1e-9  # check_in_s: every on_step_end checks in.
CLIENT_LOG = "zeus.optimizer.batch_size.client"


def epoch_energy_j(steps, check_ins):
    return GPUS * (2 * steps + 1 + check_ins)


def step(monitor):
    monitor.begin_window("step")
    monitor.end_window("step")


def trials_of(url, job_id):
    with urllib.request.urlopen(f"{url}/trials?job_id={job_id}") as reply:
        return json.load(reply)["trials"]


@pytest.fixture
def count_check_ins(monkeypatch):
    """Counts BatchSizeServer.check_in calls (they still reach the server)."""
    calls = []
    real = BatchSizeServer.check_in

    def counted(self, body):
        calls.append(dict(body))
        return real(self, body)

    monkeypatch.setattr(BatchSizeServer, "check_in", counted)
    return calls


def test_a_run_past_its_bound_stops_mid_epoch(zeus_server):
    monitor = ZeusMonitor()
    job = job_spec(batch_sizes=[8, 32], default_batch_size=32, eta_knob=1.0, beta_knob=2.0)
    # The first run converges after one epoch of 4 steps: the lowest cost.
    first = BatchSizeOptimizer(monitor, zeus_server, job, check_in_s=EVERY_STEP_S)
    first.get_batch_size()
    first.on_train_begin()
    for _ in range(4):
        step(monitor)
        first.on_step_end()
    first.on_evaluate(1.0)
    assert first.training_finished
    min_cost = first.consumed_energy
    assert min_cost == epoch_energy_j(4, 4)
    # The second runs an epoch of 50 steps, which would cost far past 2 x that.
    second = BatchSizeOptimizer(monitor, zeus_server, job, check_in_s=EVERY_STEP_S)
    second.get_batch_size()
    second.on_train_begin()
    steps = 0
    # The original client's words around the server's reason.
    with pytest.raises(ZeusBSOTrainFailError,
                       match="(?s)^Train failed: .*exceeded the cost upper bound.* This batch size will "
                             "not be selected again. Please re-launch the training$"):
        for steps in range(1, 51):
            step(monitor)
            second.on_step_end()
    assert steps < 50 and second.training_finished and second.cur_epoch == 0
    assert not monitor.is_window_open(WINDOW)
    second.on_step_end()  # After the stop: nothing happens.
    second.on_evaluate(0.1)
    assert second.cur_epoch == 0
    trial = next(t for t in trials_of(zeus_server, job.job_id)
                 if t["trial_number"] == second.trial_number)
    assert trial["converged"] is False and trial["status"] != "dispatched", trial
    # Stopped at the first check-in past the bound, not at the epoch's end.
    assert 2 * min_cost < trial["cost"] <= 2 * min_cost + 3 * GPUS, trial
    assert trial["cost"] == trial["energy"] == second.consumed_energy
    assert trial["cost"] < epoch_energy_j(50, 0)


def test_check_ins_keep_the_runs_totals(zeus_server, count_check_ins):
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor, zeus_server, job_spec(), check_in_s=EVERY_STEP_S)
    bso.get_batch_size()
    bso.on_train_begin()
    windows = []  # What the run's window measured, window by window.
    real_end = monitor.end_window

    def end_window(key, *args, **kwargs):
        measurement = real_end(key, *args, **kwargs)
        if key == WINDOW:
            windows.append(measurement)
        return measurement

    monitor.end_window = end_window
    for _ in range(6):
        step(monitor)
        bso.on_step_end()
    assert len(count_check_ins) == 6 and not bso.training_finished
    # Cumulative, growing, and what the monitor measured so far.
    assert [c["energy"] for c in count_check_ins] == [epoch_energy_j(n, n) - GPUS
                                                      for n in range(1, 7)]
    assert count_check_ins[-1]["time"] == bso.running_time
    bso.on_evaluate(0.1)
    assert bso.consumed_energy == sum(w.total_energy for w in windows) == epoch_energy_j(6, 6)
    assert bso.running_time == pytest.approx(sum(w.time for w in windows))
    trial = trials_of(bso.server_url, bso.job.job_id)[0]
    assert trial["energy"] == bso.consumed_energy and trial["current_epoch"] == 1
    assert trial["time"] == pytest.approx(bso.running_time)
    # The next epoch goes on from there.
    step(monitor)
    bso.on_step_end()
    assert count_check_ins[-1]["energy"] == epoch_energy_j(6, 6) + 3 * GPUS


def test_zero_default_and_bad_settings(zeus_server, count_check_ins, monkeypatch):
    monitor = ZeusMonitor()
    monkeypatch.delenv("ZEUS_BSO_CHECK_IN_S", raising=False)
    off = BatchSizeOptimizer(monitor, zeus_server, job_spec(), check_in_s=0)
    default = BatchSizeOptimizer(monitor, zeus_server, job_spec(job_id="pytest-job-d"))
    monkeypatch.setenv("ZEUS_BSO_CHECK_IN_S", "0")
    env_off = BatchSizeOptimizer(monitor, zeus_server, job_spec(job_id="pytest-job-e"))
    for bso in (off, default, env_off):
        bso.on_step_end()  # Before get_batch_size and on_train_begin: nothing.
        bso.get_batch_size()
        bso.on_step_end()
        bso.on_train_begin()
        for _ in range(5):
            step(monitor)
            bso.on_step_end()
        bso.on_evaluate(0.1)
        monitor.end_window(WINDOW, cancel=True)
    assert count_check_ins == []  # 0 is never; the default, 10 s, is not due yet.
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(InvalidArgumentError, match="check_in_s must be a finite number"):
            BatchSizeOptimizer(monitor, zeus_server, job_spec(), check_in_s=bad)
    for bad in ("soon", "-2", "inf"):
        monkeypatch.setenv("ZEUS_BSO_CHECK_IN_S", bad)
        with pytest.raises(InvalidArgumentError, match=rf"\$ZEUS_BSO_CHECK_IN_S='{bad}'"):
            BatchSizeOptimizer(monitor, zeus_server, job_spec())
    monkeypatch.setenv("ZEUS_BSO_CHECK_IN_S", "0.25")
    assert BatchSizeOptimizer(monitor, zeus_server, job_spec())._check_in_s == 0.25


def test_only_rank_0_outside_a_process_group_checks_in(zeus_server, count_check_ins,
                                                       monkeypatch, caplog):
    import torch.distributed as dist
    monitor = ZeusMonitor()
    job = job_spec(job_id="pytest-job-dp")
    monkeypatch.setenv("ZEUS_BSO_CHECK_IN_S", str(EVERY_STEP_S))
    rank0 = BatchSizeOptimizer(monitor, zeus_server, job)
    rank1 = BatchSizeOptimizer(monitor, zeus_server, job, rank=1)
    rank1.current_batch_size, rank1.trial_number = rank0.get_batch_size(), rank0.trial_number
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    for bso in (rank0, rank1):
        bso.on_train_begin()
    with caplog.at_level(logging.INFO, logger=CLIENT_LOG):
        for _ in range(3):
            step(monitor)
            rank0.on_step_end()
            rank1.on_step_end()
    assert count_check_ins == []
    assert sum("torch.distributed group" in r.message for r in caplog.records) == 1
    # Asked for explicitly: rank 0 checks in (and must broadcast a stop itself).
    asked = BatchSizeOptimizer(monitor, zeus_server, job_spec(), check_in_s=EVERY_STEP_S)
    asked.get_batch_size()
    asked.on_train_begin()
    step(monitor)
    asked.on_step_end()
    assert len(count_check_ins) == 1 and count_check_ins[0]["job_id"] == asked.job.job_id


def test_unknown_trial_is_not_a_missing_route(zeus_server):
    server = BatchSizeServer(zeus_server)
    with pytest.raises(NotFoundError, match="not found") as info:
        server.check_in(dict(job_id="pytest-none", batch_size=8, trial_number=1, time=1.0,
                             energy=1.0))
    assert not isinstance(info.value, NoSuchRouteError)
    with pytest.raises(NoSuchRouteError, match="no such route"):
        server._once("POST", "/report/nothere", {})
    # Through the client: the server's error is raised, and check-ins stay on.
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor, zeus_server, job_spec(), check_in_s=EVERY_STEP_S)
    bso.get_batch_size()
    bso.on_train_begin()
    bso.trial_number += 100
    with pytest.raises(NotFoundError):
        bso.on_step_end()
    bso.trial_number -= 100
    before = bso.consumed_energy
    bso.on_step_end()
    assert bso.consumed_energy > before and not bso.training_finished


class OriginalServer:
    """The original Zeus server's routes, minimally, on loopback: any other
    path answers FastAPI's 404. Counts requests by path."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                hits.append(self.path.split("?")[0])
                if self.path.startswith("/jobs/batch_size?"):
                    job_id = self.path.split("job_id=")[1]
                    return self._answer(200, dict(job_id=job_id, batch_size=32, trial_number=1))
                self._answer(404, {"detail": "Not Found"})

            def do_POST(self):
                hits.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/jobs":
                    return self._answer(201, dict(body, job_id=body["job_id"] or "pytest-job-o"))
                if self.path == "/report":
                    return self._answer(200, dict(stop_train=False, converged=False, message=""))
                self._answer(404, {"detail": "Not Found"})

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.close = serve_in_background(self.httpd)


def test_the_original_server_turns_check_ins_off_with_a_warning(caplog):
    server = OriginalServer()
    try:
        monitor = ZeusMonitor()
        bso = BatchSizeOptimizer(monitor, server.url, job_spec(), check_in_s=EVERY_STEP_S)
        bso.get_batch_size()
        bso.on_train_begin()
        with caplog.at_level(logging.WARNING, logger=CLIENT_LOG):
            for _ in range(5):
                step(monitor)
                bso.on_step_end()
        bso.on_evaluate(0.1)
    finally:
        server.close()
    assert server.hits.count("/report/progress") == 1
    warnings = [r for r in caplog.records if r.name == CLIENT_LOG and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "no check-in route" in warnings[0].message
    assert bso.cur_epoch == 1 and not bso.training_finished
    assert bso.consumed_energy == epoch_energy_j(5, 1)


def start_serve(db, port):
    proc = subprocess.Popen([os.environ["ZEUS_SERVE"], "serve", "--listen", f"127.0.0.1:{port}",
                             "--db", f"sqlite:{db}"], stdout=subprocess.PIPE, text=True)
    url = re.search(r"(http://\S+)", proc.stdout.readline()).group(1)
    return proc, url


def stop_serve(proc):
    proc.terminate()
    proc.wait(timeout=10)


def test_a_server_down_during_a_check_in_costs_nothing_measured(tmp_path, caplog):
    port = free_port()
    proc, url = start_serve(tmp_path / "db", port)
    try:
        monitor = ZeusMonitor()
        bso = BatchSizeOptimizer(monitor, url, job_spec(), check_in_s=EVERY_STEP_S,
                                 timeout_s=0.5, max_attempts=1)
        bso.get_batch_size()
        bso.on_train_begin()
        step(monitor)
        bso.on_step_end()
    finally:
        stop_serve(proc)
    # Only the check-ins with the server down count (on a busy machine the
    # one above may have timed out too: that is logged the same way).
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=CLIENT_LOG):
        for _ in range(2):
            step(monitor)
            bso.on_step_end()  # Warns, and training goes on.
    assert sum("check-in failed" in r.message for r in caplog.records) == 2
    assert monitor.is_window_open(WINDOW) and not bso.training_finished
    assert bso.consumed_energy == epoch_energy_j(3, 3) - GPUS
    # Back (same port, same database): the epoch report carries every joule.
    proc, _ = start_serve(tmp_path / "db", port)
    try:
        step(monitor)
        bso.on_step_end()
        bso.on_evaluate(0.1)
        trial = trials_of(url, bso.job.job_id)[0]
        bso.end_trial()
    finally:
        stop_serve(proc)
    assert bso.consumed_energy == trial["energy"] == epoch_energy_j(4, 4)
