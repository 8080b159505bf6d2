"""torch.distributed with two processes on gloo: each rank drives its own
fake GPU, whose energy model differs per rank, yet both pin the same limit:
the one cheapest for the two GPUs together (300 W), not either rank's own
cheapest (400 W for rank 0, 200 W for rank 1)."""

import json
import os
import subprocess
import sys

from conftest import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = [
    "600:800,500:600,400:300,300:500,200:900,100:1200",  # Alone: 400 W.
    "600:800,500:600,400:900,300:200,200:100,100:1200",  # Alone: 200 W.
]


def run_ddp_workers(**extra_env):
    """Runs ddp_worker.py as ranks 0 and 1 of a gloo group (rank r with the
    fake energy model MODELS[r] and `extra_env`); returns each rank's last
    stdout line as JSON, asserting that both exit 0."""
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), FAKE_NVML_ENERGY_STEP_MJ_BY_LIMIT=MODELS[rank],
                   **extra_env)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_worker.py")],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_both_ranks_pin_the_limit_cheapest_for_all_gpus():
    results = run_ddp_workers()
    for r in results:
        assert r["phase"] == "done"
        assert r["limits_w"] == [700, 600, 500, 400, 300, 200, 100]
        assert r["num_gpus"] == 2  # Energy summed over both ranks' GPUs.
    assert [r["optimum_w"] for r in results] == [300, 300]


def test_both_ranks_lock_the_same_clock():
    # Time per clock differs per rank (wall-clock noise) until the stretches
    # are all-reduced: then both ranks see one profile and lock one clock.
    results = run_ddp_workers(ZEUS_TEST_KNOB="frequency")
    for r in results:
        assert r["phase"] == "done"
        assert r["clocks_mhz"] == [1980, 1680, 1380, 1080]
        assert r["num_gpus"] == 2
    assert results[0]["times_s"] == results[1]["times_s"]
    assert results[0]["optimum_mhz"] == results[1]["optimum_mhz"]
