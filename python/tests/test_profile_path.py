"""An unwritable profile_path is refused when GlobalPowerLimitOptimizer is
created, naming the path, before any power limit changes (issue 23, item 8:
it used to surface only when the whole profiling had run, from a training
hook). The fake libnvml of conftest stands in for the GPUs."""

import os

import pytest

from zeus.device import get_gpus
from zeus.exception import IoError, NotFoundError, PermissionDeniedError
from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import Energy, GlobalPowerLimitOptimizer

FAST = dict(wait_steps=2, warmup_steps=2, profile_steps=3, pl_step=100, min_measure_time_s=0.0)


def limits_mw():
    gpus = get_gpus()
    return [gpus.getPowerManagementLimit(i) for i in (0, 1)]


def test_a_missing_directory_is_refused_at_creation_naming_the_path(tmp_path):
    path = tmp_path / "no-such-dir" / "profile.json"
    before = limits_mw()
    with pytest.raises(NotFoundError) as raised:
        GlobalPowerLimitOptimizer(ZeusMonitor(), Energy(), profile_path=str(path), **FAST)
    message = str(raised.value)
    assert f"profile_path '{path}'" in message
    assert f"directory '{tmp_path / 'no-such-dir'}' does not exist" in message
    assert limits_mw() == before  # Refused before any limit was set.


def test_a_directory_where_nothing_can_be_created_is_refused_at_creation():
    # Nothing can be created in /proc, whoever runs the test.
    with pytest.raises(IoError, match="profile_path '/proc/profile.json': cannot create a file in "
                                      "directory '/proc'"):
        GlobalPowerLimitOptimizer(ZeusMonitor(), Energy(), profile_path="/proc/profile.json",
                                  **FAST)


@pytest.mark.skipif(os.geteuid() == 0, reason="root creates files in read-only directories")
def test_a_read_only_directory_is_refused_at_creation(tmp_path):
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    with pytest.raises(PermissionDeniedError, match="Permission denied"):
        GlobalPowerLimitOptimizer(ZeusMonitor(), Energy(),
                                  profile_path=str(read_only / "profile.json"), **FAST)


def test_a_writable_directory_is_accepted_and_left_as_it_was(tmp_path):
    with GlobalPowerLimitOptimizer(ZeusMonitor(), Energy(),
                                   profile_path=str(tmp_path / "profile.json"), **FAST) as plo:
        assert plo.phase == "waiting"
    assert list(tmp_path.iterdir()) == []  # The write check left no file behind.
