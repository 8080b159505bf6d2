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
import urllib.request

import pytest

from conftest import free_port
from training import Trainer, batches, make_task
from zeus.exception import InvalidArgumentError, UnavailableError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
from zeus.optimizer.batch_size.exceptions import (ZeusBSOOperationOrderError,
                                                  ZeusBSOTrainFailError)

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
