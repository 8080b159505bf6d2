#!/usr/bin/env python3
"""Drives GlobalFrequencyOptimizer from a real PyTorch training loop, in dry
run (issue 42).

A bf16 MLP trains on random data on cuda:0; a GlobalFrequencyOptimizer over a
ZeusMonitor of GPU 0 profiles its grid of SM clocks with real measurements,
but ZEUS_DRY_RUN=1 (refused otherwise) makes every lock a log line: the GPU
keeps running at its own clocks, which this script reads through NVML after
every epoch (a real lock would cap them). So what is measured is the walk,
the grid the optimizer would profile, the supported clocks it read and its
per-step overhead, not the energy a clock saves.

Writes to --out: frequency_profile.json (saved by the optimizer),
frequency_summary.json; prints a log. Exit status 0 when the grid was walked,
the optimum pinned and reloaded from the profile, and NVML saw the GPU's power
limit unchanged and its SM clock above every clock the optimizer "locked"
below the top of the grid.
"""

import argparse
import json
import logging
import os
import sys
import time

import torch

from zeus.monitor import ZeusMonitor
from zeus.optimizer.frequency import GlobalFrequencyOptimizer
from zeus.optimizer.power_limit import ZeusCost

try:
    import pynvml
except ImportError:  # nvidia-ml-py provides pynvml.
    pynvml = None


def nvml_read(index=0):
    """(power limit mW, SM clock MHz, supported graphics clocks at the current
    memory clock) of GPU `index`, or None without pynvml."""
    if pynvml is None:
        return None
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        mem = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        try:
            supported = sorted(pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, mem), reverse=True)
        except pynvml.NVMLError:
            supported = None
        return (pynvml.nvmlDeviceGetPowerManagementLimit(h),
                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), supported)
    finally:
        pynvml.nvmlShutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=16384)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--epoch-steps", type=int, default=400)
    parser.add_argument("--max-seconds", type=float, default=240)
    parser.add_argument("--min-measure-time-s", type=float, default=2.0)
    args = parser.parse_args()
    # The core's messages (the dry-run lines the check counts) reach Python's
    # logging under "zeus"; print them.
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("refusing to run without ZEUS_DRY_RUN=1 (this check must not change the GPU)")
    os.makedirs(args.out, exist_ok=True)
    profile_path = os.path.join(args.out, "frequency_profile.json")
    if os.path.exists(profile_path):
        os.remove(profile_path)

    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    d, w = 4096, args.width
    model = torch.nn.Sequential(
        torch.nn.Linear(d, w), torch.nn.GELU(), torch.nn.Linear(w, w), torch.nn.GELU(),
        torch.nn.Linear(w, d)).to(dev, dtype=torch.bfloat16)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, d, device=dev, dtype=torch.bfloat16)
    y = torch.randn(args.batch, d, device=dev, dtype=torch.bfloat16)

    def step():
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        sgd.step()
        sgd.zero_grad(set_to_none=True)

    for _ in range(20):  # cuBLAS initialisation, not measured.
        step()
    torch.cuda.synchronize()
    t0 = time.monotonic()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    step_ms = (time.monotonic() - t0) / 20 * 1000
    print(f"GPU: {torch.cuda.get_device_name(0)}; step {step_ms:.1f} ms", flush=True)

    before = nvml_read()
    monitor = ZeusMonitor(gpu_indices=[0], sync_execution_with="torch")

    def optimizer():
        return GlobalFrequencyOptimizer(monitor, ZeusCost(eta_knob=0.5, world_size=1),
                                        wait_steps=5, warmup_steps=5, profile_steps=20,
                                        profile_path=profile_path,
                                        min_measure_time_s=args.min_measure_time_s)

    seen = []  # (clock the optimizer "locked", NVML's SM clock at epoch end)
    call_s = []  # Wall time of every on_step_begin.
    start = time.monotonic()
    epochs = steps = 0
    fo = optimizer()
    grid = fo.clocks
    print("grid (MHz):", grid, flush=True)
    with fo:
        deadline = start + args.max_seconds
        while fo.phase != "done" and time.monotonic() < deadline:
            for _ in range(args.epoch_steps):
                t = time.perf_counter()
                fo.on_step_begin()
                call_s.append(time.perf_counter() - t)
                step()
                steps += 1
            locked = fo.current_clock
            reading = nvml_read()
            torch.cuda.synchronize()
            fo.on_epoch_end()
            epochs += 1
            seen.append((locked, None if reading is None else reading[1]))
            print(f"epoch {epochs}: {len(fo.profile()['measurements'])} clocks measured, "
                  f"'locked' {locked} MHz, NVML SM clock {seen[-1][1]} MHz, phase {fo.phase}, "
                  f"{time.monotonic() - start:.1f} s", flush=True)
        profiling_s = time.monotonic() - start
        profile = fo.profile()
        pinned = fo.optimal_clock
    after = nvml_read()
    with optimizer() as again:
        reloaded_phase, reloaded = again.phase, again.optimal_clock

    call_s.sort()
    mean_us = 1e6 * sum(call_s) / max(1, len(call_s))
    measured = [m["sm_clock_mhz"] for m in profile["measurements"]]
    # In dry run the SM clock must not follow the "locks": when the optimizer
    # says a clock below the top of the grid is locked, the GPU still runs
    # above it (a real lock caps the clock at it).
    # The clock the GPU runs at on its own (read while the top of the grid,
    # no cap at all, was "locked"): only a "lock" below it could show a cap.
    free = [nvml for locked, nvml in seen if locked >= grid[0] and nvml is not None]
    free_mhz = min(free) if free else None
    not_capped = all(nvml is None or free_mhz is None or locked >= free_mhz or nvml > locked
                     for locked, nvml in seen)
    limit_unchanged = before is None or after is None or before[0] == after[0]
    summary = {
        "gpu": torch.cuda.get_device_name(0),
        "step_ms": step_ms,
        "supported_clocks_nvml_mhz": None if before is None else before[2],
        "grid_mhz": grid,
        "clocks_measured_mhz": measured,
        "optimum_mhz": pinned,
        "reloaded_phase": reloaded_phase,
        "reloaded_optimum_mhz": reloaded,
        "epochs": epochs,
        "steps": steps,
        "profiling_wall_s": profiling_s,
        "on_step_begin_mean_us": mean_us,
        "on_step_begin_median_us": 1e6 * call_s[len(call_s) // 2] if call_s else None,
        "on_step_begin_p99_us": 1e6 * call_s[int(len(call_s) * 0.99)] if call_s else None,
        "overhead_percent_of_step": mean_us / 1000 / step_ms * 100,
        "locked_vs_nvml_sm_clock_mhz": seen,
        "sm_clock_never_capped": not_capped,
        "power_limit_unchanged": limit_unchanged,
    }
    for m in profile["measurements"]:
        print(f"{m['sm_clock_mhz']:5d} MHz: {m['energy_j']:9.1f} J {m['time_s']:7.3f} s "
              f"{m['steps']:4d} steps (dry run: the GPU ran at its own clocks)")
    ok = (sorted(measured, reverse=True) == grid and pinned in grid and reloaded_phase == "done"
          and reloaded == pinned and not_capped and limit_unchanged)
    summary["pass"] = ok
    with open(os.path.join(args.out, "frequency_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    print("RESULT:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
