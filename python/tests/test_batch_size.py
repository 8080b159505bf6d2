"""BatchSizeOptimizer against a real `zeus serve` on loopback, across
recurrences of a job whose cost depends on the batch size.

The workload model: a real PyTorch model trains on 256 samples with one
measured window per step, so a run's energy grows with its number of steps
(each counter read of the fake GPUs is 1 J); a batch size converges after
EPOCHS_TO_CONVERGE epochs. With eta_knob = 1 (cost = energy) the cheapest
batch size is 64, which the optimizer must settle on; batch size 16 costs
more than beta_knob x the best and is stopped early."""

import collections
import json
import socket
import threading
import time
import urllib.request

import pytest

from conftest import free_port, run_python
from training import Trainer, batches, make_task
from zeus.exception import AlreadyExistsError, InvalidArgumentError, UnavailableError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
from zeus.optimizer.batch_size.exceptions import (ZeusBSOBadOperationError, ZeusBSOConfigError,
                                                  ZeusBSOOperationOrderError,
                                                  ZeusBSORuntimError, ZeusBSOTrainFailError)

EPOCHS_TO_CONVERGE = {16: 3, 32: 2, 64: 2, 128: 5}
SAMPLES = 256


def run_energy_j(batch_size, gpus=2):
    """What a converging run costs in this model (2 reads per step + 1 per epoch)."""
    return gpus * EPOCHS_TO_CONVERGE[batch_size] * (2 * SAMPLES // batch_size + 1)


def job_spec(**overrides):
    spec = dict(job_id_prefix="pytest-job", batch_sizes=[16, 32, 64, 128], default_batch_size=32,
                eta_knob=1.0, beta_knob=2.0, target_metric=0.5, max_epochs=10,
                num_pruning_rounds=1, mab_seed=7)
    spec.update(overrides)
    return JobSpec(**spec)


def one_recurrence(monitor, bso):
    """One training run as a user script would write it; returns (batch
    size, stopped early)."""
    batch_size = bso.get_batch_size()
    x, y = make_task(samples=SAMPLES)
    trainer = Trainer()
    bso.on_train_begin()
    for epoch in range(1, 11):
        for bx, by in batches(x, y, batch_size):
            monitor.begin_window("step")
            trainer.step(bx, by)
            monitor.end_window("step")
        metric = 1.0 if epoch >= EPOCHS_TO_CONVERGE[batch_size] else 0.1
        try:
            bso.on_evaluate(metric)
        except ZeusBSOTrainFailError:
            return batch_size, True
        if bso.train_end:
            return batch_size, False
    pytest.fail(f"run with batch size {batch_size} never stopped")


def test_settles_on_the_cheapest_batch_size(zeus_server):
    assert min(EPOCHS_TO_CONVERGE, key=run_energy_j) == 64
    monitor = ZeusMonitor()
    job = job_spec()
    chosen = []
    stopped_early = collections.Counter()
    for _ in range(16):
        bso = BatchSizeOptimizer(monitor, zeus_server, job)  # A new process, in real life.
        assert job.job_id and job.job_id.startswith("pytest-job")
        batch_size, early = one_recurrence(monitor, bso)
        chosen.append(batch_size)
        stopped_early[batch_size] += early
        bso.close()
    assert set(chosen) == {16, 32, 64, 128}, chosen  # Every size was tried.
    assert collections.Counter(chosen[-6:]).most_common(1)[0][0] == 64, chosen
    assert stopped_early[16] >= 1 and stopped_early[64] == 0, (chosen, stopped_early)


def test_frugal_policy_is_registered_and_settles_on_the_cheapest(zeus_server):
    monitor = ZeusMonitor()
    job = job_spec(policy="frugal")
    chosen = []
    for _ in range(10):
        bso = BatchSizeOptimizer(monitor, zeus_server, job)
        batch_size, _ = one_recurrence(monitor, bso)
        chosen.append(batch_size)
        bso.close()
    with urllib.request.urlopen(f"{zeus_server}/jobs?job_id={job.job_id}") as reply:
        assert json.load(reply)["job"]["policy"] == "frugal"
    # Frugal's one walk: 32, then 16 (cut at 1.2 x 32's cost), 64, 128; each
    # survivor once more is not needed, so 64 from then on.
    assert chosen[:4] == [32, 16, 64, 128], chosen
    assert chosen[4:] == [64] * 6, chosen


def test_unknown_policy_is_refused():
    with pytest.raises(InvalidArgumentError, match="policy 'greedy'"):
        job_spec(policy="greedy")


def test_hooks_out_of_order_raise(zeus_server):
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor, zeus_server, job_spec())
    with pytest.raises(ZeusBSOOperationOrderError, match="get_batch_size"):
        bso.on_evaluate(0.1)
    bso.get_batch_size()
    with pytest.raises(ZeusBSOOperationOrderError, match="on_train_begin"):
        bso.on_evaluate(0.1)


def test_server_down_raises_unavailable():
    monitor = ZeusMonitor()
    with pytest.raises(UnavailableError):
        BatchSizeOptimizer(monitor, f"http://127.0.0.1:{free_port()}", job_spec())
    monitor.begin_window("still works")
    assert monitor.end_window("still works").total_energy > 0


def test_server_lost_mid_run_keeps_what_was_measured(tmp_path):
    import subprocess
    import os
    import re
    proc = subprocess.Popen([os.environ["ZEUS_SERVE"], "serve", "--listen", "127.0.0.1:0",
                             "--db", f"sqlite:{tmp_path / 'db'}"], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = re.search(r"(http://\S+)", proc.stdout.readline()).group(1)
        monitor = ZeusMonitor()
        bso = BatchSizeOptimizer(monitor, url, job_spec())
        bso.get_batch_size()
        bso.on_train_begin()
        monitor.begin_window("step")
        monitor.end_window("step")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    with pytest.raises(UnavailableError):
        bso.on_evaluate(0.1)
    # The epoch's time and energy stay in the run's totals, and the run's
    # window keeps measuring for a retried report.
    assert bso.consumed_energy > 0 and bso.running_time > 0
    assert bso.cur_epoch == 0
    assert monitor.is_window_open("zeus.batch_size_optimizer")


# ---- The original's documented loop, ranks, and bad use -----------------------------------

def documented_run(monitor, bso, converge_at):
    """The loop of the original's documentation: on_evaluate, then break
    on training_finished. Returns the epochs run."""
    bso.get_batch_size()
    bso.on_train_begin()
    for epoch in range(1, 100):
        monitor.begin_window("step")
        monitor.end_window("step")
        bso.on_evaluate(1.0 if epoch >= converge_at else 0.1)
        if bso.training_finished:
            return epoch
    pytest.fail("training_finished never turned True")


def test_documented_loop_stops_on_training_finished(zeus_server):
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor, zeus_server, job_spec(), rank=0)
    assert bso.training_finished is False and bso.rank == 0
    assert bso.job.job_id.startswith("pytest-job") and bso.job.window_size == 0
    assert bso.job_spec.number_of_gpus == 2 and bso.job_spec.max_power == 1400
    assert documented_run(monitor, bso, converge_at=2) == 2
    assert bso.cur_epoch == 2 and bso.consumed_energy > 0 and bso.running_time > 0
    assert bso.train_end  # The earlier name stays.
    bso.on_evaluate(1.0)  # After the end: nothing happens.
    assert bso.cur_epoch == 2


def test_data_parallel_ranks_follow_the_originals_protocol(zeus_server):
    """Two ranks in one process: rank 0 asks for the batch size, rank 1 gets
    it (by a broadcast in real life); both report, and both see the run end
    at the same epoch while the server keeps one trial."""
    monitor = ZeusMonitor()
    with pytest.raises(ZeusBSOConfigError, match="rank 1 needs JobSpec.job_id"):
        BatchSizeOptimizer(monitor, zeus_server, job_spec(), rank=1)
    job = job_spec(job_id="pytest-job-dp")
    rank0 = BatchSizeOptimizer(monitor, zeus_server, job, rank=0)
    rank1 = BatchSizeOptimizer(monitor, zeus_server, job, rank=1)
    assert rank0.job == rank1.job
    with pytest.raises(ZeusBSOBadOperationError, match="only rank 0"):
        rank1.get_batch_size()
    with pytest.raises(ZeusBSOOperationOrderError, match="rank 1"):
        rank1.on_evaluate(0.1)
    batch_size = rank0.get_batch_size()
    assert rank0.get_batch_size() == batch_size  # Asked once per run.
    rank1.current_batch_size, rank1.trial_number = batch_size, rank0.trial_number
    for bso in (rank0, rank1):
        bso.on_train_begin()
    converge_at = EPOCHS_TO_CONVERGE[batch_size]
    for epoch in range(1, converge_at + 1):
        for bso in (rank0, rank1):
            monitor.begin_window("step")
            monitor.end_window("step")
            bso.on_evaluate(1.0 if epoch >= converge_at else 0.1)
        assert rank0.training_finished == rank1.training_finished == (epoch == converge_at)
    with urllib.request.urlopen(f"{zeus_server}/trials?job_id=pytest-job-dp") as reply:
        trials = json.load(reply)["trials"]
    assert len(trials) == 1 and trials[0]["converged"], trials


def test_a_metric_that_is_not_finite_is_a_clear_client_error(zeus_server):
    monitor = ZeusMonitor()
    bso = BatchSizeOptimizer(monitor, zeus_server, job_spec())
    bso.get_batch_size()
    bso.on_train_begin()
    for bad in (float("nan"), float("inf"), "0.5x", None):
        with pytest.raises(InvalidArgumentError, match="metric must be a"):
            bso.on_evaluate(bad)
    # Nothing was lost: the run goes on and a good metric reports it all.
    assert monitor.is_window_open("zeus.batch_size_optimizer") and bso.cur_epoch == 0
    bso.on_evaluate(0.1)
    assert bso.cur_epoch == 1 and bso.consumed_energy > 0


class SilentServer:
    """Accepts connections on loopback and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.held = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def silent_server():
    server = SilentServer()
    yield server
    server.close()


def test_a_hung_server_costs_the_time_budget_not_90_s(silent_server, monkeypatch):
    monitor = ZeusMonitor()
    start = time.monotonic()
    with pytest.raises(UnavailableError, match="did not answer POST /jobs within") as info:
        BatchSizeOptimizer(monitor, silent_server.url, job_spec(), timeout_s=0.6)
    elapsed = time.monotonic() - start
    # The budget, not 90 s; the upper bound leaves room for a busy machine.
    assert 0.5 < elapsed < 30.0, elapsed
    assert "ZEUS_BSO_TIMEOUT_S" in str(info.value)
    # The environment variable, when no keyword is given.
    monkeypatch.setenv("ZEUS_BSO_TIMEOUT_S", "0.4")
    monkeypatch.setenv("ZEUS_BSO_MAX_ATTEMPTS", "2")
    start = time.monotonic()
    with pytest.raises(UnavailableError):
        BatchSizeOptimizer(monitor, silent_server.url, job_spec())
    assert time.monotonic() - start < 30.0  # 2 x 0.4 s, not 2 x 90 s.


def test_the_default_budget_is_bounded_and_bad_settings_are_named(monkeypatch):
    from zeus.optimizer.batch_size.http import resolve_budget
    monkeypatch.delenv("ZEUS_BSO_TIMEOUT_S", raising=False)
    monkeypatch.delenv("ZEUS_BSO_MAX_ATTEMPTS", raising=False)
    assert resolve_budget() == (10.0, 3)
    assert resolve_budget(2, 1) == (2.0, 1)
    monkeypatch.setenv("ZEUS_BSO_TIMEOUT_S", "ten")
    with pytest.raises(InvalidArgumentError, match=r"\$ZEUS_BSO_TIMEOUT_S='ten'"):
        resolve_budget()
    monkeypatch.setenv("ZEUS_BSO_TIMEOUT_S", "nan")
    with pytest.raises(InvalidArgumentError, match="finite"):
        resolve_budget()
    monkeypatch.setenv("ZEUS_BSO_TIMEOUT_S", "5")
    monkeypatch.setenv("ZEUS_BSO_MAX_ATTEMPTS", "0")
    with pytest.raises(InvalidArgumentError, match="max_attempts .*ZEUS_BSO_MAX_ATTEMPTS"):
        resolve_budget()
    with pytest.raises(InvalidArgumentError, match="timeout_s .*argument"):
        resolve_budget(timeout_s=-1)


END_AT_EXIT_SCRIPT = """
import sys
from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
bso = BatchSizeOptimizer(ZeusMonitor(), sys.argv[1], JobSpec(
    job_id="pytest-exit-1", job_id_prefix="pytest-exit", batch_sizes=[8, 16],
    default_batch_size=8))
bso.get_batch_size()
bso.on_train_begin()
raise SystemExit("the training crashed")
"""


def test_a_run_that_dies_ends_its_trial_on_the_server_at_exit(zeus_server):
    result = run_python(["-c", END_AT_EXIT_SCRIPT, zeus_server])
    assert "the training crashed" in result.stderr
    with urllib.request.urlopen(f"{zeus_server}/trials?job_id=pytest-exit-1") as reply:
        text = reply.read().decode()
    assert "ended by the client" in text, text


def test_server_errors_are_also_the_originals_runtime_error(zeus_server):
    monitor = ZeusMonitor()
    BatchSizeOptimizer(monitor, zeus_server, job_spec(job_id="pytest-job-x"))
    with pytest.raises(ZeusBSORuntimError, match="different spec") as info:
        BatchSizeOptimizer(monitor, zeus_server, job_spec(job_id="pytest-job-x", max_epochs=3))
    assert isinstance(info.value, AlreadyExistsError)
    with pytest.raises(ZeusBSORuntimError) as info:
        BatchSizeOptimizer(monitor, f"http://127.0.0.1:{free_port()}", job_spec(),
                           max_attempts=1)
    assert isinstance(info.value, UnavailableError)


def test_the_server_calls_go_through_httpx(monkeypatch):
    """As the original client, the batch-size client speaks httpx: a user's
    patched or mocked httpx sees its requests (redirects followed; httpx drops
    the token when one leaves the origin: test_http_limits.py)."""
    import contextlib
    import httpx
    from zeus.optimizer.batch_size.http import BatchSizeServer
    seen = []

    @contextlib.contextmanager
    def fake_stream(method, url, **kwargs):
        seen.append((method, url, kwargs.get("headers", {}).get("Authorization"),
                     json.loads(kwargs["content"]) if kwargs.get("content") else None,
                     kwargs.get("follow_redirects")))
        yield httpx.Response(200, json={"stop_train": False, "converged": False,
                                        "message": "keep"})

    monkeypatch.setattr(httpx, "stream", fake_stream)
    server = BatchSizeServer("http://bso.example:7000", token="t")
    assert server.report({"job_id": "j"})["message"] == "keep"
    assert seen == [("POST", "http://bso.example:7000/report", "Bearer t", {"job_id": "j"}, True)]
