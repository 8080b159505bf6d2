#!/usr/bin/env python3
"""What PowerMonitor's background polling costs a training step (issue 25),
on cuda:0 of a real GPU.

The step is a bf16 matmul chain of about --step-ms milliseconds followed by
torch.cuda.synchronize() (as a per-step loss.item() does). The p50 and p99
step times are measured
  none          without a PowerMonitor
  poll100ms     with PowerMonitor(update_period=0.1), every domain the GPU has,
                its energy counters sampled every 10 ms beside them
  poll5ms       the same at update_period=0.005 (the issue's accuracy runs)
interleaved in rounds so that clock and thermal drift hit every condition
alike. Also the p50 cost of get_energy() (counter-based) and of one domain's
integral over the last second, from Python. Prints a table and writes
power_monitor_step_overhead.json to --out.

Read-only (sets ZEUS_DRY_RUN=1). Run with plain python3 where the zeus wheel
is installed, or with ZEUS_C_LIBRARY naming a built libzeus_c.so (the
package is then taken from this repository's python/ directory).
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("ZEUS_DRY_RUN", "1")
if os.environ.get("ZEUS_C_LIBRARY"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))

import torch  # noqa: E402

from zeus.monitor import PowerMonitor  # noqa: E402


def make_step(target_ms):
    n = 4096
    a = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)

    def run(k):
        for _ in range(k):
            torch.mm(a, b)
        torch.cuda.synchronize()

    run(20)
    start = time.perf_counter()
    run(50)
    per_mm_ms = (time.perf_counter() - start) * 1e3 / 50
    k = max(1, round(target_ms / per_mm_ms))
    return lambda: run(k)


def step_times_ms(step, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--steps", type=int, default=300, help="steps per condition and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("power_monitor_step_overhead.py: no CUDA GPU")
    step = make_step(args.step_ms)
    conditions = {"none": None, "poll100ms": 0.1, "poll5ms": 0.005}
    times = {name: [] for name in conditions}
    query = {"get_energy_us": [], "domain_integral_us": []}
    domains = []
    for _ in range(args.rounds):
        for name, period in conditions.items():
            monitor = None if period is None else PowerMonitor(gpu_indices=[0],
                                                               update_period=period)
            if monitor is not None:
                domains = [d.value for d in monitor.measurement_domains]
                time.sleep(0.2)
            step_times_ms(step, 20)  # Warm up with the monitor running.
            times[name] += step_times_ms(step, args.steps)
            if monitor is not None:
                for _ in range(50):
                    now = time.time()
                    start = time.perf_counter()
                    monitor.get_energy(now - 1.0, now)
                    middle = time.perf_counter()
                    monitor.get_energy(now - 1.0, now, power_domain=domains[0])
                    end = time.perf_counter()
                    query["get_energy_us"].append((middle - start) * 1e6)
                    query["domain_integral_us"].append((end - middle) * 1e6)
                monitor.stop()
    base = statistics.median(times["none"])
    rows = []
    print(f"GPU 0: {torch.cuda.get_device_name(0)}; domains {domains}; step ~{args.step_ms} ms")
    print(f"{'condition':<10} {'p50 ms':>8} {'p99 ms':>8} {'p50 overhead':>13}")
    for name, values in times.items():
        p50 = statistics.median(values)
        row = {"condition": name, "p50_ms": p50, "p99_ms": pct(values, 0.99),
               "p50_overhead_percent": 100.0 * (p50 - base) / base, "steps": len(values)}
        rows.append(row)
        print(f"{name:<10} {p50:>8.3f} {row['p99_ms']:>8.3f} "
              f"{row['p50_overhead_percent']:>+12.2f}%")
    queries = {k: statistics.median(v) for k, v in query.items() if v}
    print("p50 query cost from Python (us):", {k: round(v, 1) for k, v in queries.items()})
    with open(os.path.join(args.out, "power_monitor_step_overhead.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "domains": domains, "rows": rows,
                   "query_p50_us": queries}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
