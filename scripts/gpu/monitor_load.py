#!/usr/bin/env python3
"""Keeps GPU 0 busy with ~1.5 ms bf16 matmul steps (synchronised each step,
as a per-step energy window would) until killed or --seconds pass; writes the
measured step time (p50, mean, and p50 per 5 s segment) to
--out/monitor_load.json every 5 s."""
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
    times, segments = [], []
    start = seg_start = time.monotonic()
    seg_times = []
    while time.monotonic() - start < args.seconds:
        t = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
        seg_times.append(times[-1])
        if time.monotonic() - seg_start > 5.0:
            # Per 5 s segment, so the step time before the benchmark starts
            # (its first 10 s) can be compared with the step time during it.
            segments.append({"t_s": round(seg_start - start, 1),
                             "step_ms_p50": 1e3 * statistics.median(seg_times)})
            seg_start, seg_times = time.monotonic(), []
            with open(os.path.join(args.out, "monitor_load.json"), "w") as f:
                json.dump({"n": args.n, "steps": len(times),
                           "step_ms_p50": 1e3 * statistics.median(times),
                           "step_ms_mean": 1e3 * statistics.fmean(times),
                           "segments": segments}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
