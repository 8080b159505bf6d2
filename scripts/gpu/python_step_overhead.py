#!/usr/bin/env python3
"""Cost of ZeusMonitor windows in real training steps, from Python (issue 9).

Workloads on cuda:0: a bf16 matmul step calibrated to ~1.5 ms, and ResNet-18
(torchvision, synthetic 224x224 data, bf16 autocast, SGD) at batch 256 and 64.
For each: the p50 step time (time between consecutive step starts) with
  none       no windows, no synchronisation (the loop runs ahead of the GPU
             until the CUDA queue fills, as plain training does)
  sync       no windows, torch.cuda.synchronize() after every step (what a
             per-step loss.item() costs)
  exact      a ZeusMonitor window around every step, exact mode
  low        the same in low-overhead mode
Windows synchronise (sync_execution=True, the default), so `exact`/`low` are
compared with `sync`. Also the p50 cost of begin_window+end_window from
Python with no GPU work in between, with and without synchronisation.

Writes step_overhead.json to --out and prints a table. Read-only: needs
ZEUS_DRY_RUN=1 in the environment (monitors set nothing anyway).
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

from zeus.monitor import ZeusMonitor


def p50(values):
    return statistics.median(values)


def run_steps(step, n, monitor=None, sync=False, begin_sync=True):
    """p50 of the intervals between consecutive step starts, in ms."""
    starts = []
    for _ in range(n):
        starts.append(time.perf_counter())
        if monitor is not None:
            monitor.begin_window("step", sync_execution=begin_sync)
        step()
        if monitor is not None:
            monitor.end_window("step")
        elif sync:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    starts.append(time.perf_counter())
    intervals = [b - a for a, b in zip(starts, starts[1:])]
    return p50(intervals[n // 10:]) * 1e3  # Drop the first 10% (queue filling).


def measure_workload(name, step, n, monitors):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    row = {"workload": name, "steps": n}
    row["none_ms"] = run_steps(step, n)
    row["sync_ms"] = run_steps(step, n, sync=True)
    row["exact_ms"] = run_steps(step, n, monitor=monitors["exact"])
    row["low_ms"] = run_steps(step, n, monitor=monitors["low"])
    # The previous step's end already synchronised: a loop that knows it can
    # open the next window without a second synchronisation.
    row["low_endsync_ms"] = run_steps(step, n, monitor=monitors["low"], begin_sync=False)
    for mode in ("exact", "low", "low_endsync"):
        row[f"{mode}_overhead_vs_sync_pct"] = 100 * (row[f"{mode}_ms"] / row["sync_ms"] - 1)
        row[f"{mode}_overhead_vs_none_pct"] = 100 * (row[f"{mode}_ms"] / row["none_ms"] - 1)
    return row


def matmul_step(target_ms):
    n = 8192
    for _ in range(3):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(50):
            a @ b
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) / 50 * 1e3
        n = max(256, int(round(n * (target_ms / ms) ** (1 / 3) / 256)) * 256)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

    def step():
        torch.matmul(a, b, out=out)

    return step, n


def resnet_step(batch_size):
    import torchvision
    model = torchvision.models.resnet18(num_classes=1000).cuda().to(
        memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch_size, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch_size,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def begin_end_cost(monitor, n, sync_execution):
    costs = []
    for _ in range(n):
        t = time.perf_counter()
        monitor.begin_window("bench", sync_execution=sync_execution)
        monitor.end_window("bench", sync_execution=sync_execution)
        costs.append(time.perf_counter() - t)
    return p50(costs[n // 10:]) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=2000, help="matmul steps per variant")
    parser.add_argument("--resnet-steps", type=int, default=200)
    parser.add_argument("--skip-resnet", action="store_true")
    parser.add_argument("--begin-end-calls", type=int, default=5000)
    args = parser.parse_args()
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("python_step_overhead.py: run with ZEUS_DRY_RUN=1")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.cuda.init()
    monitors = {"exact": ZeusMonitor(gpu_indices=[0]),
                "low": ZeusMonitor(gpu_indices=[0], mode="low_overhead")}
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "python": sys.version.split()[0], "rows": []}

    step, n = matmul_step(1.5)
    result["matmul_n"] = n
    result["rows"].append(measure_workload(f"bf16 matmul {n}x{n}", step, args.steps, monitors))
    try:
        for batch in () if args.skip_resnet else (256, 64):
            result["rows"].append(measure_workload(f"resnet18 batch {batch}", resnet_step(batch),
                                                   args.resnet_steps, monitors))
    except ImportError as e:
        result["resnet_skipped"] = f"torchvision not importable: {e}"

    result["begin_end_us"] = {
        f"{mode}_{'sync' if sync else 'nosync'}": begin_end_cost(
            monitors[mode], args.begin_end_calls if mode == "low" else args.begin_end_calls // 10,
            sync)
        for mode in ("exact", "low") for sync in (False, True)
    }
    with open(os.path.join(args.out, "step_overhead.json"), "w") as f:
        json.dump(result, f, indent=2)

    print(f"{result['device']}, torch {result['torch']}, Python {result['python']}")
    print(f"{'workload':28} {'none':>8} {'sync':>8} {'exact':>8} {'low':>8} {'low-1':>8} "
          f"{'exact/sync':>11} {'low/sync':>9} {'low-1/sync':>11}  (p50 step, ms; low-1: "
          f"begin_window without its own sync)")
    for r in result["rows"]:
        print(f"{r['workload']:28} {r['none_ms']:8.3f} {r['sync_ms']:8.3f} {r['exact_ms']:8.3f} "
              f"{r['low_ms']:8.3f} {r['low_endsync_ms']:8.3f} "
              f"{r['exact_overhead_vs_sync_pct']:+10.1f}% {r['low_overhead_vs_sync_pct']:+8.1f}% "
              f"{r['low_endsync_overhead_vs_sync_pct']:+10.1f}%")
    if "resnet_skipped" in result:
        print(result["resnet_skipped"])
    print("begin_window+end_window p50 (us):",
          ", ".join(f"{k} {v:.1f}" for k, v in result["begin_end_us"].items()))


if __name__ == "__main__":
    main()
