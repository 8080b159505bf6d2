"""The zeus package reads `zeus daemon`'s live power: ZeusdClient's one-shot
/gpu/get_power and /cpu/get_power, and PowerStreamingClient's Server-Sent
Event streams from two daemons at once (one on a Unix socket, one on TCP),
with and without bearer tokens. The daemons run over the fake libnvml, or the
fake libamd_smi in the ctest zeus_python_pytest_amd (150 W per GPU either way) and a fake powercap tree whose package counter a thread advances at
10 W (DRAM 2 W)."""

import os
import subprocess
import threading
import time

import pytest

from conftest import free_port, start_zeus_daemon
from zeus.monitor.power_streaming import PowerStreamingClient
from zeus.utils.zeusd import ZeusdClient, ZeusdConfig, require_capabilities, \
    ZeusdCapabilityError

PACKAGE_W = 10.0
DRAM_W = 2.0


@pytest.fixture
def powercap(tmp_path):
    """A powercap tree with one package and its DRAM zone whose energy grows
    at PACKAGE_W and DRAM_W while the test runs."""
    root = tmp_path / "powercap"
    package = root / "intel-rapl:0"
    dram = package / "intel-rapl:0:1"
    dram.mkdir(parents=True)
    for zone, name in ((package, "package-0"), (dram, "dram")):
        (zone / "name").write_text(name + "\n")
        (zone / "max_energy_range_uj").write_text("1000000000000\n")
        (zone / "energy_uj").write_text("0\n")
    stop = threading.Event()

    def meter():
        start = time.monotonic()
        while not stop.is_set():
            elapsed_us = (time.monotonic() - start) * 1e6
            for zone, watts in ((package, PACKAGE_W), (dram, DRAM_W)):
                tmp = zone / "energy_uj.tmp"
                tmp.write_text(f"{int(elapsed_us * watts)}\n")
                os.replace(tmp, zone / "energy_uj")
            time.sleep(0.002)

    thread = threading.Thread(target=meter, daemon=True)
    thread.start()
    yield root
    stop.set()
    thread.join()


def _about(value, expected):
    """Within 50 % of `expected`."""
    return 0.5 * expected < value < 1.5 * expected


@pytest.fixture
def start_daemon(tmp_path, powercap):
    """Starts `zeus daemon`s (each in its own directory); returns a function
    (name, extra args) -> socket path. Stops them all at the end."""
    procs = []

    def start(name, *args):
        d = tmp_path / name
        d.mkdir()
        proc, sock, _, _ = start_zeus_daemon(d, powercap, *args)
        procs.append(proc)
        return sock

    yield start
    for proc in procs:
        proc.terminate()
    for proc in procs:
        assert proc.wait(timeout=10) == 0


def issue_token(key_path, *args):
    return subprocess.run(
        [os.environ["ZEUS_SERVE"], "daemon", "token", "issue", "--signing-key-path",
         str(key_path), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_zeusd_client_reads_gpu_and_cpu_power(start_daemon):
    sock = start_daemon("a")
    client = ZeusdClient(ZeusdConfig.uds(sock))
    assert not client.auth_required
    assert client.cpu_ids == [0] and client.dram_available == [True]
    gpu = client.get_gpu_power()
    assert set(gpu.power_mw) == set(client.gpu_ids) and len(gpu.power_mw) == 2
    assert all(mw == 150_000 for mw in gpu.power_mw.values()), gpu
    assert abs(gpu.timestamp_ms / 1000 - time.time()) < 5
    only_one = client.get_gpu_power([1])
    assert list(only_one.power_mw) == [1]
    # Power from two RAPL reads one poll (100 ms) apart: about 10 W and 2 W.
    # The meter thread lags on a busy machine, so one poll may see less or
    # more energy than its 100 ms: read until one sees about the rate.
    deadline = time.time() + 60
    while True:
        cpu = client.get_cpu_power([0])
        assert list(cpu.power_mw) == [0]
        if _about(cpu.power_mw[0].cpu_mw, PACKAGE_W * 1000) and \
                _about(cpu.power_mw[0].dram_mw, DRAM_W * 1000):
            break
        assert time.time() < deadline, f"no poll near {PACKAGE_W} W and {DRAM_W} W in 60 s: {cpu}"


def test_power_streaming_client_reads_two_daemons_streams(start_daemon):
    port = free_port()
    sock = start_daemon("uds")
    start_daemon("tcp", "--tcp", f"127.0.0.1:{port}")
    client = PowerStreamingClient([ZeusdConfig.uds(sock, gpu_indices=[0, 1], cpu_indices=[0]),
                                   ZeusdConfig.tcp("127.0.0.1", port, gpu_indices=[1], cpu_indices=[])],
                                  reconnect_delay_s=0.1)
    try:
        # Until both streams have been read, and a CPU poll saw about the
        # rate (see test_zeusd_client_reads_gpu_and_cpu_power).
        deadline = time.time() + 60
        snapshots = 0
        readings = {}
        for readings in client:
            snapshots += 1
            uds, tcp = readings.get(sock), readings.get(f"127.0.0.1:{port}")
            if uds and tcp and uds.gpu_power_w and uds.cpu_power_w and tcp.gpu_power_w \
                    and snapshots >= 20 and _about(uds.cpu_power_w[0].cpu_w, PACKAGE_W) \
                    and _about(uds.cpu_power_w[0].dram_w, DRAM_W):
                break
            assert time.time() < deadline, f"streams incomplete after 60 s: {readings}"
        uds, tcp = readings[sock], readings[f"127.0.0.1:{port}"]
        assert uds.gpu_power_w == {0: 150.0, 1: 150.0}
        assert tcp.gpu_power_w == {1: 150.0}
        assert tcp.cpu_power_w == {}
        cpu = uds.cpu_power_w[0]
        assert 0.5 * PACKAGE_W < cpu.cpu_w < 1.5 * PACKAGE_W, cpu
        assert 0.5 * DRAM_W < cpu.dram_w < 1.5 * DRAM_W, cpu
        assert abs(uds.timestamp_s - time.time()) < 5
    finally:
        client.stop()


def test_tokens_scope_what_the_clients_read(start_daemon, tmp_path):
    key = tmp_path / "signing.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    sock = start_daemon("auth", "--signing-key-path", str(key), "--enable", "gpu-read,cpu-read")
    gpu_reader = issue_token(key, "--sub", "alice", "--scopes", "gpu-read", "--expires-in", "600")

    # No token: discovery works, reads are refused, and the client says why.
    anonymous = ZeusdClient(ZeusdConfig.uds(sock))
    assert anonymous.auth_required and anonymous.auth_error
    with pytest.raises(Exception, match="^Failed to get_gpu_power: .*authentication required"):
        anonymous.get_gpu_power()

    client = ZeusdClient(ZeusdConfig.uds(sock, token=gpu_reader))
    assert client.auth_error is None
    assert client.granted_scopes == frozenset({"gpu-read"})
    assert client.can_read_gpu and not client.can_read_cpu and not client.can_control_gpu
    assert client.get_gpu_power().power_mw == {0: 150_000, 1: 150_000}
    with pytest.raises(Exception, match="^Failed to get_cpu_power: .*lacks required scope"):
        client.get_cpu_power()
    with pytest.raises(ZeusdCapabilityError, match="gpu-control' is not enabled"):
        require_capabilities(client, control_gpu=True)

    # The stream client sends the token; the CPU probe's 403 leaves GPU only.
    streams = PowerStreamingClient([ZeusdConfig.uds(sock, token=gpu_reader)],
                                   reconnect_delay_s=0.1)
    try:
        deadline = time.time() + 15
        for readings in streams:
            if readings.get(sock) and readings[sock].gpu_power_w:
                break
            assert time.time() < deadline
        assert readings[sock].gpu_power_w == {0: 150.0, 1: 150.0}
        assert readings[sock].cpu_power_w == {}
    finally:
        streams.stop()


def test_zeusd_rapl_cpu_reads_through_the_client_it_is_given(start_daemon, monkeypatch):
    """ZeusdRAPLCPU(index, client) reads the daemon's RAPL counters through
    `client`, without ZEUSD_SOCK_PATH."""
    from zeus.device.cpu.common import ZeusCPUNotFoundError
    from zeus.device.cpu.rapl import ZeusdRAPLCPU
    monkeypatch.delenv("ZEUSD_SOCK_PATH", raising=False)
    sock = start_daemon("rapl")
    client = ZeusdClient(ZeusdConfig.uds(sock))
    cpu = ZeusdRAPLCPU(0, client)
    assert cpu.supports_get_dram_energy_consumption()
    first = cpu.get_total_energy_consumption()
    deadline = time.time() + 10
    while cpu.get_total_energy_consumption().cpu_mj <= first.cpu_mj:
        assert time.time() < deadline
        time.sleep(0.01)
    later = cpu.get_total_energy_consumption()
    assert later.dram_mj is not None and later.dram_mj >= first.dram_mj
    with pytest.raises(ZeusCPUNotFoundError, match="serves no CPU 5"):
        ZeusdRAPLCPU(5, client)


def test_tcp_changes_need_a_gpu_control_token(start_daemon, tmp_path):
    """With --tcp-changes and tokens, a change over TCP is accepted from a
    token with the gpu-control scope only (as the original zeusd's TCP mode)."""
    key = tmp_path / "signing.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    port = free_port()
    start_daemon("tcp-auth", "--signing-key-path", str(key), "--enable", "gpu-read,gpu-control",
                 "--tcp", f"127.0.0.1:{port}", "--tcp-changes")
    reader = issue_token(key, "--sub", "bob", "--scopes", "gpu-read", "--expires-in", "600")
    controller = issue_token(key, "--sub", "carol", "--scopes", "gpu-read,gpu-control",
                             "--expires-in", "600")
    refused = ZeusdClient(ZeusdConfig.tcp("127.0.0.1", port, token=reader))
    with pytest.raises(Exception, match="^Failed to set_power_limit: .*lacks required scope "
                                        "'gpu-control'"):
        refused.set_power_limit([0], 300_000)
    client = ZeusdClient(ZeusdConfig.tcp("127.0.0.1", port, token=controller))
    assert client.can_control_gpu
    client.set_power_limit([0], 300_000)
    assert client.get_power_limit([0]) == {0: 300_000}


def test_zeusd_client_every_read_and_setter_against_zeus_daemon(start_daemon):
    """Every read and setter of ZeusdClient, as users call them, answered by
    `zeus daemon` over its Unix socket: what a setter changes, the matching
    read reports. On the fake AMD GPUs persistence mode and the reset of one
    clock domain are refused (AMD SMI offers neither) with the daemon's
    words."""
    from zeus.device.exception import ZeusdError
    amd = bool(os.environ.get("ZEUS_AMDSMI_LIBRARY")) and \
        not os.path.exists(os.environ.get("ZEUS_NVML_LIBRARY", ""))
    client = ZeusdClient(ZeusdConfig.uds(start_daemon("every")))
    assert abs(client.get_time() - time.time()) < 5
    first = client.get_gpu_energy([0, 1])
    assert set(first) == {0, 1}
    assert client.get_gpu_energy([0])[0] >= first[0]
    assert client.get_power_limit_constraints() == {0: (100_000, 700_000),
                                                    1: (100_000, 700_000)}
    assert client.get_power_limit() == {0: 700_000, 1: 700_000}
    client.set_power_limit([0], 300_000)
    assert client.get_power_limit([0]) == {0: 300_000}
    client.set_power_limit([0], 700_000, block=False)
    deadline = time.monotonic() + 10
    while client.get_power_limit([0])[0] != 700_000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.get_power_limit([0]) == {0: 700_000}
    energy = client.get_cpu_energy([0])
    assert energy[0].cpu_energy_uj is not None and energy[0].dram_energy_uj is not None
    assert client.get_cpu_energy([0], dram=False)[0].dram_energy_uj is None
    knobs = [lambda: client.set_persistence_mode([1], True),
             lambda: client.set_gpu_locked_clocks([1], 1000, 1400),
             lambda: client.reset_gpu_locked_clocks([1]),
             lambda: client.set_mem_locked_clocks([1], 1593, 1593),
             lambda: client.reset_mem_locked_clocks([1]),
             lambda: client.reset_locked_clocks([1])]
    if amd:
        # No persistence mode, and AMD SMI resets no single clock domain
        # (zeusd answers 400 there too); locks and the reset of every domain
        # (a lock to the whole range of levels) go through.
        for knob in (knobs[0], knobs[2], knobs[4]):
            with pytest.raises(ZeusdError, match="^Failed to "):
                knob()
        client.set_gpu_locked_clocks([1], 500, 1300)
        client.set_mem_locked_clocks([1], 900, 900)
        client.reset_locked_clocks([1])
        return
    knobs[0]()
    assert client.get_persistence_mode([1]) == {1: True}
    for knob in knobs[1:]:
        knob()
    client.set_persistence_mode([1], False)
    assert client.get_persistence_mode() == {0: False, 1: False}
