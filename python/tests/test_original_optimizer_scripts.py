"""original_selector_script.py, written against the original Zeus API only
(a custom OptimumSelector, the state classes, the batch-size loop), runs
unchanged against this package and `zeus serve`."""

import os

from conftest import HERE, ENERGY_STEP_MJ_BY_LIMIT, run_python


def test_original_selector_script_runs_unchanged(zeus_server):
    result = run_python([os.path.join(HERE, "original_selector_script.py"), zeus_server])
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "Power limits (W): [700, 600, 500, 400, 300, 200, 100]" in lines
    # The selector's rule over the fake's energy model (400 W is the
    # cheapest; nothing lower is within 10 % of it).
    least = min(ENERGY_STEP_MJ_BY_LIMIT.values())
    expected = min(w for w, mj in ENERGY_STEP_MJ_BY_LIMIT.items() if mj <= 1.1 * least)
    assert f"Optimal power limit (W): {expected}" in lines
    assert "Measured (W): [700, 600, 500, 400, 300, 200, 100]" in lines
    assert "Epochs: 2 finished: True" in lines
    assert "Recurrence: True True" in lines
