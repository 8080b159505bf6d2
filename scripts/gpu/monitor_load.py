#!/usr/bin/env python3
"""Keeps GPU 0 busy with ~1.5 ms bf16 matmul steps (synchronised each step,
as a per-step energy window would) until killed or --seconds pass; writes the
measured step time (p50, mean) to --out/monitor_load.json every 5 s."""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    a = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    times = []
    start = last_write = time.monotonic()
    while time.monotonic() - start < args.seconds:
        t = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
        if time.monotonic() - last_write > 5.0:
            last_write = time.monotonic()
            with open(os.path.join(args.out, "monitor_load.json"), "w") as f:
                json.dump({"n": args.n, "steps": len(times),
                           "step_ms_p50": 1e3 * statistics.median(times),
                           "step_ms_mean": 1e3 * statistics.fmean(times)}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
