"""The training harness power_limit_train.py and frequency_train.py share: a
bf16 MLP on random data on cuda:0, driven by one just-in-time knob
optimizer (GlobalPowerLimitOptimizer or GlobalFrequencyOptimizer) in dry run
only. A script gives the knob's own parts (how to build its optimizer, what
to read from NVML around an epoch end, what counts as a pass); this module
runs the loop, times every on_step_begin, reloads the saved profile and
writes the summary.
"""

import argparse
import json
import os
import sys
import time

import torch


def parse_args(max_seconds: float) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=16384)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--epoch-steps", type=int, default=400)
    parser.add_argument("--max-seconds", type=float, default=max_seconds)
    parser.add_argument("--min-measure-time-s", type=float, default=2.0)
    return parser.parse_args()


def fresh_profile_path(out: str, name: str) -> str:
    """Refuses to run without ZEUS_DRY_RUN=1; makes `out`; the profile path in
    it, with no profile left from an earlier run."""
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("refusing to run without ZEUS_DRY_RUN=1 (this check must not change the GPU)")
    os.makedirs(out, exist_ok=True)
    profile_path = os.path.join(out, name)
    if os.path.exists(profile_path):
        os.remove(profile_path)
    return profile_path


def bf16_training_step(batch: int, width: int):
    """(step function, its time in ms after cuBLAS initialisation)."""
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    d, w = 4096, width
    model = torch.nn.Sequential(
        torch.nn.Linear(d, w), torch.nn.GELU(), torch.nn.Linear(w, w), torch.nn.GELU(),
        torch.nn.Linear(w, d)).to(dev, dtype=torch.bfloat16)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, d, device=dev, dtype=torch.bfloat16)
    y = torch.randn(batch, d, device=dev, dtype=torch.bfloat16)

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
    return step, step_ms


def train_until_done(optimizer, step, args, before_epoch_end, after_epoch_end) -> dict:
    """Runs epochs of args.epoch_steps steps until `optimizer` is done or
    args.max_seconds pass; around each epoch end calls
    context = before_epoch_end() and after_epoch_end(epoch, context, elapsed_s).
    Returns epochs, steps, profiling_wall_s and the on_step_begin timings."""
    call_s = []  # Wall time of every on_step_begin.
    start = time.monotonic()
    epochs = steps = 0
    deadline = start + args.max_seconds
    while optimizer.phase != "done" and time.monotonic() < deadline:
        for _ in range(args.epoch_steps):
            t = time.perf_counter()
            optimizer.on_step_begin()
            call_s.append(time.perf_counter() - t)
            step()
            steps += 1
        context = before_epoch_end()
        torch.cuda.synchronize()
        optimizer.on_epoch_end()
        epochs += 1
        after_epoch_end(epochs, context, time.monotonic() - start)
    call_s.sort()
    return {"epochs": epochs, "steps": steps, "profiling_wall_s": time.monotonic() - start,
            "call_s": call_s}


def step_overhead(call_s, step_ms) -> dict:
    """The mean, median and p99 of on_step_begin, in us and % of a step."""
    mean_us = 1e6 * sum(call_s) / max(1, len(call_s))
    return {
        "on_step_begin_mean_us": mean_us,
        "on_step_begin_median_us": 1e6 * call_s[len(call_s) // 2] if call_s else None,
        "on_step_begin_p99_us": 1e6 * call_s[int(len(call_s) * 0.99)] if call_s else None,
        "overhead_percent_of_step": mean_us / 1000 / step_ms * 100,
    }


def finish(out: str, summary_name: str, summary: dict, ok: bool) -> int:
    """Writes the summary (with "pass") to out/summary_name, prints it and
    the RESULT line; the exit status."""
    summary["pass"] = ok
    with open(os.path.join(out, summary_name), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    print("RESULT:", "PASS" if ok else "FAIL")
    return 0 if ok else 1
