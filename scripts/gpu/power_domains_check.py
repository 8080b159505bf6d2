#!/usr/bin/env python3
"""Accuracy of PowerMonitor on a real GPU (issue 25): each power domain's
integral and get_energy() against direct reads of the GPU's energy counter.

Loads on cuda:0 (bf16 torch matmuls on a background thread):
  steady     back-to-back matmuls
  burst200   100 ms of matmuls, 100 ms idle, repeated
  burst50    25 ms of matmuls, 25 ms idle, repeated
For each load and window length (2 s and 10 s, --repeats each), the truth is
the difference of two direct counter reads, each taken right when the counter
moves (the script polls it until it changes, so a read is timed to a few ms
although NVML updates the counter only every ~100 ms). Compared with it, for
the same [start, end]:
  get_energy           PowerMonitor.get_energy(start, end): from the counter
                       samples the monitor takes beside its power samples
  <domain> integral    PowerMonitor.get_energy(start, end, power_domain=...)
                       (memory_average is shown as its share of the counter)
PowerMonitor polls every --update-period s (default 0.005, as in the issue's
measurement). Prints a table (error in %: mean and max |error| over the
repeats) and writes power_domains_check.json to --out.

Read-only (sets ZEUS_DRY_RUN=1; a monitor changes nothing anyway). Run with
plain `python3 power_domains_check.py` where the zeus wheel is installed, or
with ZEUS_C_LIBRARY naming a built libzeus_c.so (the package is then taken
from this repository's python/ directory).
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import threading
import time

os.environ.setdefault("ZEUS_DRY_RUN", "1")
if os.environ.get("ZEUS_C_LIBRARY"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))

import torch  # noqa: E402

from zeus import _lib  # noqa: E402
from zeus.monitor import PowerMonitor  # noqa: E402
from zeus.monitor.power import PowerDomain  # noqa: E402

LOADS = {"steady": None, "burst200": 0.2, "burst50": 0.05}


class Load:
    """bf16 matmuls on cuda:0 from a thread: always (period None), or during
    the first half of every `period` seconds."""

    def __init__(self, period):
        self.period = period
        self.stop = threading.Event()
        n = 4096
        self.a = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)
        self.b = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        start = time.perf_counter()
        while not self.stop.is_set():
            if self.period is not None:
                phase = (time.perf_counter() - start) % self.period
                if phase >= self.period / 2:
                    time.sleep(self.period - phase)
                    continue
            for _ in range(4):
                torch.mm(self.a, self.b)
            torch.cuda.synchronize()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        torch.cuda.synchronize()


class Counter:
    """Direct reads of GPU 0's energy counter (NVML, through libzeus_c)."""

    def __init__(self):
        self.lib = _lib.lib()
        self.handle = ctypes.c_void_p()
        _lib.call(self.lib.zeus_gpus_open, ctypes.byref(self.handle))

    def read_mj(self):
        value = ctypes.c_uint64(0)
        _lib.call(self.lib.zeus_gpus_energy_mj, self.handle, 0, ctypes.byref(value))
        return value.value

    def at_next_move(self, timeout_s=1.0):
        """(Unix time, J) right when the counter moves: the middle of the
        last read that saw the old value and the first that saw the new."""
        before_t, before = time.time(), self.read_mj()
        deadline = before_t + timeout_s
        while time.time() < deadline:
            now_t, now = time.time(), self.read_mj()
            if now != before:
                return (before_t + now_t) / 2, now / 1e3
            before_t = now_t
        raise RuntimeError("the energy counter did not move within 1 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", type=float, nargs="+", default=[2.0, 10.0])
    parser.add_argument("--update-period", type=float, default=0.005)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("power_domains_check.py: no CUDA GPU")
    counter = Counter()
    monitor = PowerMonitor(gpu_indices=[0], update_period=args.update_period)
    domains = [d.value for d in monitor.measurement_domains]
    print(f"GPU 0: {torch.cuda.get_device_name(0)}; domains {domains}; "
          f"polling every {args.update_period} s", flush=True)
    rows = []
    for load_name, period in LOADS.items():
        with Load(period):
            time.sleep(1.5)  # Past the 1 s average's ramp.
            for window_s in args.windows:
                for _ in range(args.repeats):
                    start, start_j = counter.at_next_move()
                    time.sleep(max(0.0, window_s - 0.05))
                    end, end_j = counter.at_next_move()
                    time.sleep(0.3)  # Let the monitor's counter samples pass `end`.
                    truth = end_j - start_j
                    row = {"load": load_name, "window_s": end - start, "counter_j": truth,
                           "get_energy_j": monitor.get_energy(start, end)[0]}
                    for domain in domains:
                        row[f"{domain}_j"] = monitor.get_energy(start, end,
                                                                power_domain=domain)[0]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    monitor.stop()

    def err(row, key):
        return 100.0 * (row[key] - row["counter_j"]) / row["counter_j"]

    columns = ["get_energy_j"] + [f"{d}_j" for d in domains if d != "memory_average"]
    header = f"{'load':<9} {'window':>7} " + " ".join(
        f"{c[:-2] + ' err %':>26}" for c in columns)
    if "memory_average" in domains:
        header += f" {'memory share %':>15}"
    print("\n" + header)
    summary = []
    for load_name in LOADS:
        for window_s in args.windows:
            group = [r for r in rows if r["load"] == load_name
                     and abs(r["window_s"] - window_s) < 0.5]
            if not group:
                continue
            line = f"{load_name:<9} {window_s:>6.0f}s "
            entry = {"load": load_name, "window_s": window_s, "repeats": len(group)}
            for c in columns:
                errors = [err(r, c) for r in group]
                mean, worst = statistics.mean(errors), max(errors, key=abs)
                entry[c[:-2]] = {"mean_error_percent": mean, "max_abs_error_percent": abs(worst)}
                line += f" {f'{mean:+.2f} (max {abs(worst):.2f})':>26}"
            if "memory_average" in domains:
                share = statistics.mean(100.0 * r["memory_average_j"] / r["counter_j"]
                                        for r in group)
                entry["memory_share_percent"] = share
                line += f" {share:>15.1f}"
            summary.append(entry)
            print(line)
    targets = {2.0: 3.0, 10.0: 1.0}
    ok = all(e["get_energy"]["max_abs_error_percent"] <= targets.get(e["window_s"], 3.0)
             for e in summary)
    print(f"\nget_energy within target (<= 3 % at 2 s, <= 1 % at 10 s): {ok}")
    with open(os.path.join(args.out, "power_domains_check.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "update_period_s": args.update_period,
                   "domains": domains, "rows": rows, "summary": summary,
                   "get_energy_within_target": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
