"""A Python OptimumSelector under torch.distributed (two processes on gloo,
ddp_worker.py with ZEUS_TEST_SELECTOR=custom): every rank's selector is
called with the same all-reduced measurements, and the ranks pin one limit
even when their selectors disagree."""

from test_distributed import run_ddp_workers


def test_a_python_selector_gets_the_same_measurements_and_the_ranks_agree():
    results = run_ddp_workers(ZEUS_TEST_SELECTOR="custom")
    # Both ranks' selectors saw the all-reduced measurements (identical) ...
    assert results[0]["seen"] == results[1]["seen"]
    assert [m["power_limit"] for m in results[0]["seen"]] == [700, 600, 500, 400, 300, 200, 100]
    assert all(r["num_gpus"] == 2 for r in results)
    # ... and although they chose differently (500 W and 300 W), every rank
    # pins the highest choice.
    assert [r["optimum_w"] for r in results] == [500, 500]
