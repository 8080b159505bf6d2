"""A Python OptimumSelector under torch.distributed (two processes on gloo,
ddp_worker.py with ZEUS_TEST_SELECTOR=custom): every rank's selector is
called with the same all-reduced measurements, and the ranks pin one limit
even when their selectors disagree."""

import json
import os
import subprocess
import sys

from conftest import free_port
from test_distributed import MODELS

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_python_selector_gets_the_same_measurements_and_the_ranks_agree():
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), FAKE_NVML_ENERGY_STEP_MJ_BY_LIMIT=MODELS[rank],
                   ZEUS_TEST_SELECTOR="custom")
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_worker.py")],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    # Both ranks' selectors saw the all-reduced measurements (identical) ...
    assert results[0]["seen"] == results[1]["seen"]
    assert [m["power_limit"] for m in results[0]["seen"]] == [700, 600, 500, 400, 300, 200, 100]
    assert all(r["num_gpus"] == 2 for r in results)
    # ... and although they chose differently (500 W and 300 W), every rank
    # pins the highest choice.
    assert [r["optimum_w"] for r in results] == [500, 500]
