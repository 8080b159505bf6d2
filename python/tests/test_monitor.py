"""ZeusMonitor and PowerMonitor over the fake GPUs, around a real PyTorch
training loop. In exact mode every window boundary reads each GPU's counter
once, and each read advances the fake counter by 1 J (at the default 700 W
limit): a window's energy per GPU is therefore the number of boundaries
inside it (its own end included), which the tests count."""

import csv
import threading
import time

import pytest

from training import Trainer, batches, make_task
from zeus.exception import AlreadyExistsError, InvalidArgumentError, NotFoundError
from zeus.monitor import Measurement, PowerMonitor, ZeusMonitor


def test_windows_around_steps_and_epochs_of_a_training_loop(tmp_path):
    log = tmp_path / "windows.csv"
    monitor = ZeusMonitor(log_file=str(log))
    assert monitor.gpu_indices == [0, 1]
    x, y = make_task()
    trainer = Trainer()
    steps_per_epoch = len(x) // 64
    epochs = []
    for epoch in range(3):
        monitor.begin_window("epoch")
        for bx, by in batches(x, y, 64):
            monitor.begin_window("step")
            trainer.step(bx, by)
            step = monitor.end_window("step")
            assert isinstance(step, Measurement)
            assert step.time > 0
            assert step.gpu_energy == {0: pytest.approx(1.0), 1: pytest.approx(1.0)}
            assert step.total_energy == pytest.approx(2.0)
        epochs.append(monitor.end_window("epoch"))
    for m in epochs:
        # The nested step windows' 2 boundaries per step, plus the epoch's end.
        assert m.gpu_energy[0] == pytest.approx(2 * steps_per_epoch + 1)
        assert m.time > 0
    assert trainer.accuracy(x, y) > 0.7  # It did train.
    rows = list(csv.reader(open(log)))
    assert rows[0][:3] == ["start_time", "window_name", "elapsed_time"]
    assert len(rows) == 1 + 3 * steps_per_epoch + 3
    monitor.close()


def test_log_columns_are_named_by_gpu_index_and_replay_reads_them(tmp_path):
    """The original names the log's columns by GPU index (gpu1_energy for
    gpu_indices=[1]); ReplayZeusMonitor reads the indices back."""
    from zeus.utils.testing import ReplayZeusMonitor
    log = tmp_path / "one.csv"
    monitor = ZeusMonitor(gpu_indices=[1], log_file=str(log))
    monitor.begin_window("w")
    recorded = monitor.end_window("w")
    monitor.close()
    rows = list(csv.reader(open(log)))
    assert rows[0] == ["start_time", "window_name", "elapsed_time", "gpu1_energy"]
    assert float(rows[1][3]) == pytest.approx(recorded.gpu_energy[1])
    replay = ReplayZeusMonitor(log_file=log)
    assert replay.gpu_indices == [1]
    replay.begin_window("w")
    assert replay.end_window("w").gpu_energy == {1: pytest.approx(recorded.gpu_energy[1])}


def test_a_zero_energy_window_warns_as_the_original():
    import subprocess
    import sys
    import textwrap
    import os
    script = textwrap.dedent("""
        import warnings
        from zeus.monitor import ZeusMonitor
        monitor = ZeusMonitor(gpu_indices=[0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monitor.begin_window("short")
            m = monitor.end_window("short")
        print(m.gpu_energy[0], [(w.category.__name__, str(w.message)) for w in caught])
        quiet = ZeusMonitor(gpu_indices=[0], approx_instant_energy=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            quiet.begin_window("short")
            quiet.end_window("short")
        print(len(caught))
    """)
    # The fake's counter does not move at the 700 W limit: every window is 0 J.
    env = dict(os.environ, FAKE_NVML_ENERGY_STEP_MJ_BY_LIMIT="700:0",
               FAKE_AMDSMI_ENERGY_STEP_MJ_BY_LIMIT="700:0")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("[")]
    assert lines[0].startswith("0.0 [('UserWarning', \"The energy consumption of one or more "
                               "GPUs was measured as zero. This means that"), lines
    assert "Consider turning on the `approx_instant_energy` option in `ZeusMonitor`" in lines[0]
    assert lines[1] == "0"


def test_window_boundaries_synchronise_unless_asked_not_to(monkeypatch):
    import zeus.monitor.energy as energy
    calls = []
    monkeypatch.setattr(energy, "_sync_execution",
                        lambda gpus, sync_with: calls.append((list(gpus), sync_with)))
    monitor = ZeusMonitor(gpu_indices=[1])
    monitor.begin_window("synced")
    monitor.end_window("synced")
    assert calls == [([1], "torch"), ([1], "torch")]
    monitor.begin_window("unsynced", sync_execution=False)
    monitor.end_window("unsynced", sync_execution=False)
    assert len(calls) == 2
    monitor.close()


def test_overlapping_windows_are_independent():
    monitor = ZeusMonitor(gpu_indices=[1])
    monitor.begin_window("a")
    monitor.begin_window("b")
    a = monitor.end_window("a")  # Reads: b's begin, a's end.
    monitor.begin_window("c")
    b = monitor.end_window("b")  # Reads: a's end, c's begin, b's end.
    c = monitor.end_window("c")
    assert list(a.gpu_energy) == [1]
    assert (a.gpu_energy[1], b.gpu_energy[1], c.gpu_energy[1]) == (2.0, 3.0, 2.0)
    assert a.time >= 0 and b.time >= a.time - 1e-3


def test_cancel_and_errors_keep_other_windows():
    monitor = ZeusMonitor()
    monitor.begin_window("kept")
    monitor.begin_window("dropped")
    cancelled = monitor.end_window("dropped", cancel=True)
    assert cancelled.total_energy == 0
    with pytest.raises(NotFoundError, match="dropped"):
        monitor.end_window("dropped")
    with pytest.raises(KeyError):  # NotFoundError is a KeyError too.
        monitor.end_window("never opened")
    # The original's class (ValueError) and words.
    with pytest.raises(ValueError, match="^Measurement window 'never opened' does not exist$"):
        monitor.end_window("never opened")
    with pytest.raises(ValueError, match="^Measurement window 'never' does not exist$"):
        monitor.end_window("never", cancel=True)
    with pytest.raises(AlreadyExistsError, match="^Measurement window 'kept' already exists$"):
        monitor.begin_window("kept")
    kept = monitor.end_window("kept")  # Still measures, errors and all.
    assert kept.gpu_energy[0] > 0 and kept.time > 0


def test_int_arguments_out_of_their_c_type_are_refused_not_wrapped():
    import ctypes

    from zeus import _lib
    lib = _lib.lib()
    handle = ctypes.c_void_p()
    _lib.call(lib.zeus_gpus_open, ctypes.byref(handle))
    try:
        value = ctypes.c_uint32(0)
        _lib.call(lib.zeus_gpus_power_mw, handle, 0, ctypes.byref(value))
        for position in (2**32, 2**31, -2**31 - 1):
            with pytest.raises(InvalidArgumentError,
                               match=f"zeus_gpus_power_mw: argument 2 is {position}, out of "
                                     "range for c_int"):
                _lib.call(lib.zeus_gpus_power_mw, handle, position, ctypes.byref(value))
    finally:
        lib.zeus_gpus_destroy(handle)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(InvalidArgumentError, match="gpu_indices: no GPU 7"):
        ZeusMonitor(gpu_indices=[7])
    with pytest.raises(InvalidArgumentError, match="mode"):
        ZeusMonitor(mode="fast")
    # Never narrowed to 32 bits at the C boundary (2**32 is not GPU 0).
    for index in (2**32, 2**32 + 1, -1, 2**63):
        with pytest.raises(InvalidArgumentError, match="gpu_indices: index .* is out of range"):
            ZeusMonitor(gpu_indices=[index])
        with pytest.raises(InvalidArgumentError, match="gpu_indices: index .* is out of range"):
            PowerMonitor(gpu_indices=[index])
    with pytest.raises(InvalidArgumentError, match="cpu_indices: index .* is out of range"):
        ZeusMonitor(cpu_indices=[2**32])
    with pytest.raises(ValueError, match="sync_execution_with"):
        ZeusMonitor(sync_execution_with="tensorflow")


def test_low_overhead_mode_measures_windows_from_many_threads():
    monitor = ZeusMonitor(mode="low_overhead", counter_poll_period_s=0.005)
    results = []

    def work(name):
        for _ in range(20):
            monitor.begin_window(name)
            time.sleep(0.001)
            results.append(monitor.end_window(name))

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 60
    for m in results:
        assert m.time >= 0.001  # Each window spans its thread's 1 ms sleep.
        assert all(e >= 0 for e in m.gpu_energy.values())


def test_monitor_without_gpus_measures_time():
    monitor = ZeusMonitor(gpu_indices=[], cpu_indices=[])
    monitor.begin_window("t")
    m = monitor.end_window("t")
    assert m.gpu_energy == {} and m.time >= 0 and m.cpu_energy is None


def test_power_monitor_timeline_and_energy():
    monitor = PowerMonitor(update_period=0.02, power_domains=["device_instant"])
    start = time.time()
    time.sleep(0.3)
    end = time.time()
    timeline = monitor.get_power_timeline("device_instant", gpu_index=0)
    assert timeline[0], "no samples"
    assert all(p == 150.0 for _, p in timeline[0])
    energy = monitor.get_energy(start, end, power_domain="device_instant")
    # 150 W held over the span: 150 W x (end - start) s.
    assert energy[0] == pytest.approx(150.0 * (end - start), rel=1e-3)
    assert monitor.get_power() == {0: 150.0, 1: 150.0}
    monitor.stop()
