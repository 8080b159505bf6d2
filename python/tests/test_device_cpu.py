"""zeus.device's CPUs: RAPL zones under a fake powercap tree (RAPL_DIR
monkeypatched), their counters and wraparound, the root-only case, and EMI
(Windows only)."""

import os
import textwrap

import pytest

from conftest import run_python

import zeus.device
from zeus.device.cpu import common as cpu_common
from zeus.device.cpu import emi, rapl
from zeus.device.exception import ZeusBaseCPUError


def make_zone(path, name, energy_uj, max_range_uj=262143328850):
    path.mkdir(parents=True)
    (path / "name").write_text(name + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{max_range_uj}\n")


@pytest.fixture
def fake_rapl(tmp_path, monkeypatch):
    """Two sockets; socket 0 with a DRAM zone. RAPL_DIR points there."""
    root = tmp_path / "intel-rapl"
    make_zone(root / "intel-rapl:0", "package-0", 5_000_000)
    make_zone(root / "intel-rapl:0" / "intel-rapl:0:0", "dram", 1_000_000)
    make_zone(root / "intel-rapl:1", "package-1", 7_000_000)
    make_zone(root / "intel-rapl:2", "psys", 1)  # Not a package: skipped.
    monkeypatch.setattr(rapl, "RAPL_DIR", str(root))
    monkeypatch.setattr(rapl, "CONTAINER_RAPL_DIR", str(tmp_path / "none"))
    monkeypatch.delenv("ZEUSD_SOCK_PATH", raising=False)
    return root


def test_zeus_monitor_reads_the_cpus_get_cpus_reads(fake_rapl):
    """ZeusMonitor measures the RAPL sockets of the directory get_cpus()
    reads (RAPL_DIR, else the container mount), so both see the same."""
    from zeus.monitor import ZeusMonitor
    monitor = ZeusMonitor(gpu_indices=[0])
    try:
        assert monitor.cpu_indices == [0, 1]
        monitor.begin_window("w")
        m = monitor.end_window("w")
        assert set(m.cpu_energy) == {0, 1} and set(m.dram_energy) == {0, 1}
    finally:
        monitor.close()


def test_root_only_rapl_is_the_originals_runtime_error():
    """Counters readable by root only (Linux 5.10 and newer), read by an
    unprivileged process: get_cpus() raises ZeusCPUNoPermissionError;
    ZeusMonitor with cpu_indices raises the original's RuntimeError, and
    without them measures no CPU."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the child as an unprivileged user")
    import pathlib
    import shutil
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="zeus-rapl-"))  # pytest's tmp_path is 0700.
    root = base / "intel-rapl"
    make_zone(root / "intel-rapl:0", "package-0", 5_000_000)
    for path in (base, root, root / "intel-rapl:0"):
        path.chmod(0o755)
    for name in ("name", "max_energy_range_uj"):
        (root / "intel-rapl:0" / name).chmod(0o444)
    (root / "intel-rapl:0" / "energy_uj").chmod(0o400)
    try:
        result = run_python(["-c", textwrap.dedent(f"""
            import os
            os.setgid(65534)
            os.setuid(65534)
            try:
                from zeus.device.cpu import rapl
                from zeus.device.cpu.common import ZeusCPUNoPermissionError
                from zeus.monitor import ZeusMonitor
            except (ImportError, PermissionError) as e:  # The package is root's only.
                print("unreachable", e)
                raise SystemExit(0)
            rapl.RAPL_DIR = {str(root)!r}
            try:
                rapl.RAPLCPUs()
            except ZeusCPUNoPermissionError as e:
                print("get_cpus:", type(e).__name__)
            try:
                ZeusMonitor(gpu_indices=[0], cpu_indices=[0])
            except RuntimeError as e:
                print("explicit:", e)
            print("default:", ZeusMonitor(gpu_indices=[0]).cpu_indices)
        """)], env=dict(os.environ))
    finally:
        shutil.rmtree(base)
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("unreachable"):
        pytest.skip(f"the package is not readable by an unprivileged user: {result.stdout}")
    lines = result.stdout.splitlines()
    assert lines[0] == "get_cpus: ZeusRAPLPermissionError", result.stdout + result.stderr
    assert lines[1] == ("explicit: Root privilege is required to read RAPL metrics. See "
                        "https://ml.energy/zeus/getting_started/#system-privileges for more "
                        "information or disable CPU measurement by passing cpu_indices=[] to "
                        "ZeusMonitor"), result.stdout
    assert lines[2] == "default: []", result.stdout


def test_rapl_wraparound_tracker_counts_each_wrap_of_its_file(tmp_path):
    """As the original's: a poller counts every read of the file lower than
    the one before; a path that does not exist is a ValueError."""
    import time
    from zeus.device.cpu.rapl import RaplWraparoundTracker

    def wraps_become(tracker, n):
        deadline = time.monotonic() + 60  # A bound for a broken poller, not a speed target.
        while tracker.get_num_wraparounds() != n and time.monotonic() < deadline:
            time.sleep(0.01)
        return tracker.get_num_wraparounds() == n

    with pytest.raises(ValueError, match="is not a valid file path"):
        RaplWraparoundTracker(str(tmp_path / "missing"), 1000.0)
    counter = tmp_path / "energy_uj"
    counter.write_text("900\n")
    tracker = RaplWraparoundTracker(str(counter), 1000.0)
    try:
        assert tracker.get_num_wraparounds() == 0
        counter.write_text("50\n")
        assert wraps_become(tracker, 1)
        counter.write_text("10\n")
        assert wraps_become(tracker, 2)
        assert tracker.wraparound_counter.value == 2 and tracker.process.is_alive()
    finally:
        tracker._stop()
    assert tracker.process is None
    # A RAPLFile reads its counter plus the wraps its tracker counted.
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("1000\n")
    (zone / "energy_uj").write_text("900\n")
    zone_file = rapl.RAPLFile(str(zone))
    try:
        assert zone_file.name == "package-0" and zone_file.last_energy == 900.0
        assert zone_file.read() == 0.9
        (zone / "energy_uj").write_text("50\n")
        assert wraps_become(zone_file.wraparound_tracker, 1)
        assert zone_file.read() == 1.05
    finally:
        zone_file.wraparound_tracker._stop()


def test_rapl_cpus_read_the_counters_in_mj(fake_rapl):
    assert rapl.rapl_is_available()
    cpus = rapl.RAPLCPUs()
    assert len(cpus) == 2 and [c.cpu_index for c in cpus.cpus] == [0, 1]
    assert all(isinstance(c, rapl.RAPLCPU) for c in cpus.cpus)
    assert cpus.supports_get_dram_energy_consumption(0) is True
    assert cpus.supports_get_dram_energy_consumption(1) is False
    start = cpus.get_total_energy_consumption(0)
    assert isinstance(start, cpu_common.CpuDramMeasurement)
    # The counters' own values (as the original reads them), in mJ.
    assert start == cpu_common.CpuDramMeasurement(cpu_mj=5000.0, dram_mj=1000.0)
    (fake_rapl / "intel-rapl:0" / "energy_uj").write_text("5250000\n")
    (fake_rapl / "intel-rapl:0" / "intel-rapl:0:0" / "energy_uj").write_text("1100000\n")
    delta = cpus.get_total_energy_consumption(0) - start
    assert delta == cpu_common.CpuDramMeasurement(cpu_mj=250.0, dram_mj=100.0)
    assert cpus.get_total_energy_consumption(1).dram_mj is None
    with pytest.warns(DeprecationWarning):
        assert cpus.supportsGetDramEnergyConsumption(1) is False
    with pytest.raises(cpu_common.ZeusCPUNotFoundError, match="no CPU with index 2"):
        cpus.get_total_energy_consumption(2)


def test_get_cpus_uses_rapl_and_without_it_raises_init_error(fake_rapl, tmp_path, monkeypatch):
    import zeus.device.cpu as cpu
    monkeypatch.setattr(cpu, "_cpus", None)
    cpus = zeus.device.get_cpus()
    assert isinstance(cpus, rapl.RAPLCPUs) and cpu.get_cpus() is cpus
    monkeypatch.setattr(cpu, "_cpus", None)
    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "no-rapl"))
    assert not rapl.rapl_is_available()
    with pytest.raises(cpu_common.ZeusCPUInitError, match="No supported CPU energy monitoring"):
        zeus.device.get_cpus()
    monkeypatch.setattr(cpu, "_cpus", None)


def test_rapl_without_a_package_zone_is_not_supported(tmp_path, monkeypatch):
    root = tmp_path / "intel-rapl"
    make_zone(root / "intel-rapl:0", "psys", 1)
    monkeypatch.setattr(rapl, "RAPL_DIR", str(root))
    with pytest.raises(rapl.ZeusRAPLNotSupportedError, match="no package zone"):
        rapl.RAPLCPUs()


def test_malformed_rapl_counter_is_a_clear_error(fake_rapl):
    (fake_rapl / "intel-rapl:1" / "energy_uj").write_text("lots\n")
    with pytest.raises(rapl.ZeusRAPLFileInitError, match="intel-rapl:1/energy_uj"):
        rapl.RAPLCPUs()


def test_emi_is_unavailable_on_linux():
    assert emi.emi_is_available() is False
    with pytest.raises(emi.ZeusEMINotSupportedError, match="EMI"):
        emi.EMICPUs()
    assert issubclass(emi.ZeusEMINotSupportedError, ZeusBaseCPUError)


def test_rapl_counter_wraparound_is_corrected_by_the_core(tmp_path, monkeypatch):
    root = tmp_path / "intel-rapl"
    make_zone(root / "intel-rapl:0", "package-0", 9_900_000, max_range_uj=10_000_000)
    monkeypatch.setattr(rapl, "RAPL_DIR", str(root))
    monkeypatch.delenv("ZEUSD_SOCK_PATH", raising=False)
    cpus = rapl.RAPLCPUs()
    start = cpus.get_total_energy_consumption(0)
    (root / "intel-rapl:0" / "energy_uj").write_text("100000\n")  # Wrapped past 10 J.
    assert (cpus.get_total_energy_consumption(0) - start).cpu_mj == 200.0


def test_single_cpus_can_be_made_directly(fake_rapl):
    cpu = rapl.RAPLCPU(1, str(fake_rapl))
    start = cpu.get_total_energy_consumption()
    (fake_rapl / "intel-rapl:1" / "energy_uj").write_text("8000000\n")
    delta = cpu.get_total_energy_consumption() - start
    assert delta == cpu_common.CpuDramMeasurement(cpu_mj=1000.0)
    with pytest.raises(cpu_common.ZeusCPUNotFoundError, match="socket 4"):
        rapl.RAPLCPU(4, str(fake_rapl))
