#!/usr/bin/env python3
"""Runs `zeus monitor --json -- python3 monitor_train.py` and reads the NVML
energy counter of the same GPUs independently (pynvml) right before and after;
prints both energies and their relative difference (target: within 1%)."""
import argparse
import json
import os
import subprocess
import sys
import time

import pynvml


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zeus", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=50.0)
    args = parser.parse_args()
    pynvml.nvmlInit()
    # GPU 0 only: the training loop uses cuda:0 and CUDA_VISIBLE_DEVICES is
    # left to the caller (zeus maps it the same way).
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    handle = (pynvml.nvmlDeviceGetHandleByUUID(visible) if visible.startswith("GPU-")
              else pynvml.nvmlDeviceGetHandleByIndex(int(visible)))
    report_path = os.path.join(args.out, "monitor_report.json")
    train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "monitor_train.py")
    cmd = [args.zeus, "monitor", "--gpus", "0", "--json", "--output", report_path,
           "--", sys.executable, train, "--seconds", str(args.seconds)]
    # Idle power, to estimate what the bracketing reads add outside zeus's
    # window (zeus start-up and NVML init before Begin, exit after End).
    idle_w = sum(pynvml.nvmlDeviceGetPowerUsage(handle) for _ in range(5)) / 5 / 1e3
    before_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    t0 = time.monotonic()
    rc = subprocess.run(cmd).returncode
    t1 = time.monotonic()
    after_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    nvml_j = (after_mj - before_mj) / 1e3
    result = {"zeus_rc": rc, "command": cmd, "nvml_energy_j": nvml_j,
              "nvml_span_s": t1 - t0}
    try:
        with open(report_path) as f:
            report = json.load(f)
        zeus_j = report["gpus"][0]["energy_j"]
        outside_s = max(0.0, (t1 - t0) - report["time_s"])
        adjusted_j = nvml_j - idle_w * outside_s
        result.update({"zeus_energy_j": zeus_j, "zeus_time_s": report["time_s"],
                       "zeus_exit_code": report["exit_code"],
                       "relative_difference": (zeus_j - nvml_j) / nvml_j,
                       "within_1_percent": abs(zeus_j - nvml_j) <= 0.01 * nvml_j,
                       "idle_power_w": idle_w, "time_outside_zeus_window_s": outside_s,
                       "nvml_energy_minus_idle_outside_window_j": adjusted_j,
                       "relative_difference_adjusted": (zeus_j - adjusted_j) / adjusted_j})
    except (OSError, KeyError, IndexError, ValueError) as e:
        result["error"] = f"cannot read zeus report: {e}"
    with open(os.path.join(args.out, "monitor_check.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
    pynvml.nvmlShutdown()
    return 0 if rc == 0 and result.get("within_1_percent") else 1


if __name__ == "__main__":
    sys.exit(main())
