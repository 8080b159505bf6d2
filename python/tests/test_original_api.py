"""original_api_script.py, written against the original Zeus API only, runs
unchanged."""

import os

from conftest import HERE, run_python


def test_original_api_script_runs_unchanged():
    env = dict(os.environ, ZEUS_DRY_RUN="1")
    result = run_python([os.path.join(HERE, "original_api_script.py")], env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "GPUs: 2"
    assert sum(line.startswith("Epoch ") for line in lines) == 3
    assert lines[-1].startswith("Training: ")
