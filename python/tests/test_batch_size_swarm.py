"""The `swarm` batch-size policy through the Python client and `zeus serve`:
while the walk's step is in flight, a concurrent submission is sent to a size
the walk may try next instead of the best size known (what `frugal` does)."""

import json
import urllib.request

import pytest

from test_batch_size import job_spec, one_recurrence
from zeus.exception import InvalidArgumentError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer


def concurrent_pair(zeus_server, policy):
    """The default's run, then two submissions at once: their batch sizes."""
    monitor = ZeusMonitor()
    job = job_spec(policy=policy)
    first = BatchSizeOptimizer(monitor, zeus_server, job)
    assert one_recurrence(monitor, first) == (32, False)
    first.close()
    step = BatchSizeOptimizer(monitor, zeus_server, job)
    other = BatchSizeOptimizer(monitor, zeus_server, job)
    sizes = (step.get_batch_size(), other.get_batch_size())
    with urllib.request.urlopen(f"{zeus_server}/jobs?job_id={job.job_id}") as reply:
        stored = json.load(reply)["job"]["policy"]
    step.close()
    other.close()
    return sizes, stored


def test_swarm_sends_a_concurrent_submission_to_the_walks_next_size(zeus_server):
    # The walk's step is 16 (down from the default, 32); the concurrent one
    # speculates on 64, the up direction's first size.
    assert concurrent_pair(zeus_server, "swarm") == ((16, 64), "swarm")


def test_frugal_sends_it_to_the_best_size_known(zeus_server):
    assert concurrent_pair(zeus_server, "frugal") == ((16, 32), "frugal")


def first_wave_pair(zeus_server, policy):
    """Two submissions at once before any run has reported: their batch sizes."""
    monitor = ZeusMonitor()
    job = job_spec(policy=policy)
    step = BatchSizeOptimizer(monitor, zeus_server, job)
    other = BatchSizeOptimizer(monitor, zeus_server, job)
    sizes = (step.get_batch_size(), other.get_batch_size())
    step.close()
    other.close()
    return sizes


def test_swarm_speculates_in_the_first_wave(zeus_server):
    # Nothing has reported yet: the default's step is 32 and the concurrent
    # submission speculates on the walk's first size down, 16.
    assert first_wave_pair(zeus_server, "swarm") == (32, 16)


def test_frugal_sends_the_first_wave_to_the_default(zeus_server):
    assert first_wave_pair(zeus_server, "frugal") == (32, 32)


def test_a_third_try_gets_a_run_that_may_finish(zeus_server, monkeypatch):
    """$ZEUS_BSO_ATTEMPT (or Slurm's requeue count) says which try of its
    submission a run is: from the third on, the server sends it to the best
    size known instead of a probe, even while the walk's step is out."""
    monitor = ZeusMonitor()
    job = job_spec(policy="swarm")
    step = BatchSizeOptimizer(monitor, zeus_server, job)
    assert step.get_batch_size() == 32  # The default's step.
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    third = BatchSizeOptimizer(monitor, zeus_server, job)
    assert third.get_batch_size() == 32  # Not the speculative 16.
    monkeypatch.setenv("ZEUS_BSO_ATTEMPT", "1")
    first = BatchSizeOptimizer(monitor, zeus_server, job)
    assert first.get_batch_size() != 32  # A first try speculates.
    monkeypatch.setenv("ZEUS_BSO_ATTEMPT", "0")
    with pytest.raises(InvalidArgumentError, match="ZEUS_BSO_ATTEMPT"):
        BatchSizeOptimizer(monitor, zeus_server, job).get_batch_size()
    for optimizer in (step, third, first):
        optimizer.close()
