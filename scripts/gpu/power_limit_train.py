#!/usr/bin/env python3
"""Drives the power-limit optimizer from a real PyTorch training loop (issue 4).

A bf16 MLP trains on random data on cuda:0; the `zeus` package (a
GlobalPowerLimitOptimizer over a ZeusMonitor of GPU 0) profiles every power
limit of the GPU with real measurements. It refuses to run unless ZEUS_DRY_RUN=1, so no limit is ever
set; it checks that with NVML after every epoch. Epochs are short on purpose
(--epoch-steps), so some measurements are cut by an epoch end and restarted.

Writes to --out: power_limit_profile.json (saved by the optimizer itself),
power_limit_summary.json, and prints a log. Exit status 0 when every limit
was measured and the GPU's limit never changed.
"""

import os
import sys

import torch

from knob_train import (bf16_training_step, finish, fresh_profile_path, parse_args,
                        step_overhead, train_until_done)
from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost

try:
    import pynvml
except ImportError:  # nvidia-ml-py provides pynvml.
    pynvml = None


def nvml_limits_mw():
    if pynvml is None:
        return None
    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        return [pynvml.nvmlDeviceGetPowerManagementLimit(pynvml.nvmlDeviceGetHandleByIndex(i))
                for i in range(count)]
    finally:
        pynvml.nvmlShutdown()


def nvml_constraints_w(index=0):
    """(min, max) power limit of GPU `index` in W, or None without pynvml."""
    if pynvml is None:
        return None
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        lo, hi = pynvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)
        return lo / 1000, hi / 1000
    finally:
        pynvml.nvmlShutdown()


def main():
    args = parse_args(max_seconds=180)
    profile_path = fresh_profile_path(args.out, "power_limit_profile.json")
    step, step_ms = bf16_training_step(args.batch, args.width)

    limits_before = nvml_limits_mw()
    limits_seen = []
    options = dict(gpu_indices=[0], wait_steps=5, warmup_steps=5, measure_steps=20,
                   min_measure_time_s=args.min_measure_time_s, power_limit_step_w=25,
                   selector="cost", eta=0.5, profile_path=profile_path, restore_on_signal=True)
    # The monitor synchronises torch at every measurement boundary.
    monitor = ZeusMonitor(gpu_indices=options["gpu_indices"], sync_execution_with="torch")

    def optimizer():
        return GlobalPowerLimitOptimizer(
            monitor, ZeusCost(eta_knob=options["eta"], world_size=1),
            wait_steps=options["wait_steps"], warmup_steps=options["warmup_steps"],
            profile_steps=options["measure_steps"], pl_step=options["power_limit_step_w"],
            profile_path=profile_path, min_measure_time_s=options["min_measure_time_s"],
            restore_on_signal=options["restore_on_signal"])

    def optimum_w(plo):
        """The pinned limit in W (exact, as the profile has it) once done, else None."""
        return plo.state.optimal_power_limit / 1000 if plo.phase == "done" else None

    def after_epoch_end(epoch, _, elapsed_s):
        limits_seen.append(nvml_limits_mw())
        print(f"epoch {epoch}: {len(plo.profile()['measurements'])} limits measured, "
              f"phase {plo.phase}, {elapsed_s:.1f} s", flush=True)

    plo = optimizer()
    with plo:
        run = train_until_done(plo, step, args, lambda: None, after_epoch_end)
        profile = plo.profile()
        pinned_w = optimum_w(plo)
    limits_after = nvml_limits_mw()

    # The saved profile pins the optimum at creation: no profiling.
    with optimizer() as again:
        reloaded_phase = again.phase
        reloaded_optimum_w = optimum_w(again)

    measured_w = [m["power_limit_mw"] / 1000 for m in profile["measurements"]]
    unchanged = limits_before is None or all(s == limits_before for s in limits_seen + [limits_after])
    summary = {
        "gpu": torch.cuda.get_device_name(0),
        "step_ms_before_profiling": step_ms,
        "epochs": run["epochs"],
        "epoch_steps": args.epoch_steps,
        "steps": run["steps"],
        "profiling_wall_s": run["profiling_wall_s"],
        **step_overhead(run["call_s"], step_ms),
        "limits_measured_w": measured_w,
        "optimum_w": pinned_w,
        "reloaded_phase": reloaded_phase,
        "reloaded_optimum_w": reloaded_optimum_w,
        "nvml_limits_before_mw": limits_before,
        "nvml_limits_after_mw": limits_after,
        "nvml_limit_never_changed": unchanged,
        "options": options,
        "profile_saved": os.path.exists(profile_path),
    }
    for m in profile["measurements"]:
        print(f"{m['power_limit_mw'] / 1000:6.0f} W: {m['energy_j']:9.1f} J {m['time_s']:7.3f} s "
              f"{m['steps']:4d} steps  {m['energy_j'] / m['steps']:7.2f} J/step "
              f"{1000 * m['time_s'] / m['steps']:7.2f} ms/step")
    # H100 SXM: 700 W down to 200 W in 25 W steps, 21 limits.
    lo_w, hi_w = nvml_constraints_w() or (200, 700)
    expected = []
    limit_w = hi_w
    while limit_w > lo_w:
        expected.append(limit_w)
        limit_w -= 25
    expected.append(lo_w)
    summary["limits_expected_w"] = expected
    ok = (sorted(measured_w, reverse=True) == expected and unchanged
          and reloaded_phase == "done" and reloaded_optimum_w == pinned_w)
    return finish(args.out, "power_limit_summary.json", summary, ok)


if __name__ == "__main__":
    sys.exit(main())
