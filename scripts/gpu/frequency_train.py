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

import logging
import sys

import torch

from knob_train import (bf16_training_step, finish, fresh_profile_path, parse_args,
                        step_overhead, train_until_done)
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
    args = parse_args(max_seconds=240)
    # The core's messages (the dry-run lines the check counts) reach Python's
    # logging under "zeus"; print them.
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    profile_path = fresh_profile_path(args.out, "frequency_profile.json")
    step, step_ms = bf16_training_step(args.batch, args.width)

    before = nvml_read()
    monitor = ZeusMonitor(gpu_indices=[0], sync_execution_with="torch")

    def optimizer():
        return GlobalFrequencyOptimizer(monitor, ZeusCost(eta_knob=0.5, world_size=1),
                                        wait_steps=5, warmup_steps=5, profile_steps=20,
                                        profile_path=profile_path,
                                        min_measure_time_s=args.min_measure_time_s)

    seen = []  # (clock the optimizer "locked", NVML's SM clock at epoch end)

    def before_epoch_end():
        return fo.current_clock, nvml_read()

    def after_epoch_end(epoch, context, elapsed_s):
        locked, reading = context
        seen.append((locked, None if reading is None else reading[1]))
        print(f"epoch {epoch}: {len(fo.profile()['measurements'])} clocks measured, "
              f"'locked' {locked} MHz, NVML SM clock {seen[-1][1]} MHz, phase {fo.phase}, "
              f"{elapsed_s:.1f} s", flush=True)

    fo = optimizer()
    grid = fo.clocks
    print("grid (MHz):", grid, flush=True)
    with fo:
        run = train_until_done(fo, step, args, before_epoch_end, after_epoch_end)
        profile = fo.profile()
        pinned = fo.optimal_clock
    after = nvml_read()
    with optimizer() as again:
        reloaded_phase, reloaded = again.phase, again.optimal_clock

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
        "epochs": run["epochs"],
        "steps": run["steps"],
        "profiling_wall_s": run["profiling_wall_s"],
        **step_overhead(run["call_s"], step_ms),
        "locked_vs_nvml_sm_clock_mhz": seen,
        "sm_clock_never_capped": not_capped,
        "power_limit_unchanged": limit_unchanged,
    }
    for m in profile["measurements"]:
        print(f"{m['sm_clock_mhz']:5d} MHz: {m['energy_j']:9.1f} J {m['time_s']:7.3f} s "
              f"{m['steps']:4d} steps (dry run: the GPU ran at its own clocks)")
    ok = (sorted(measured, reverse=True) == grid and pinned in grid and reloaded_phase == "done"
          and reloaded == pinned and not_capped and limit_unchanged)
    return finish(args.out, "frequency_summary.json", summary, ok)


if __name__ == "__main__":
    sys.exit(main())
