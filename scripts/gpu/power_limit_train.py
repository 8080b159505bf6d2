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

import argparse
import json
import os
import sys
import time

import torch

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
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=16384)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--epoch-steps", type=int, default=400)
    parser.add_argument("--max-seconds", type=float, default=180)
    parser.add_argument("--min-measure-time-s", type=float, default=2.0)
    args = parser.parse_args()
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("refusing to run without ZEUS_DRY_RUN=1 (this check must not change the GPU)")
    os.makedirs(args.out, exist_ok=True)
    profile_path = os.path.join(args.out, "power_limit_profile.json")
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

    start = time.monotonic()
    epochs = 0
    steps = 0
    plo = optimizer()
    with plo:
        deadline = start + args.max_seconds
        while plo.phase != "done" and time.monotonic() < deadline:
            for _ in range(args.epoch_steps):
                plo.on_step_begin()
                step()
                steps += 1
            torch.cuda.synchronize()
            plo.on_epoch_end()
            epochs += 1
            limits_seen.append(nvml_limits_mw())
            print(f"epoch {epochs}: {len(plo.profile()['measurements'])} limits measured, "
                  f"phase {plo.phase}, {time.monotonic() - start:.1f} s", flush=True)
        profiling_s = time.monotonic() - start
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
        "epochs": epochs,
        "epoch_steps": args.epoch_steps,
        "steps": steps,
        "profiling_wall_s": profiling_s,
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
    summary["pass"] = ok
    with open(os.path.join(args.out, "power_limit_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    print("RESULT:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
