#!/usr/bin/env python3
"""End-to-end recurring job on a GPU through the zeus Python package (issue 9).

A learnable synthetic task made here (no download): 16-class classification
of --train-samples Gaussian points in 512 dimensions labelled by a fixed
random teacher network; an MLP trains on cuda:0 until validation accuracy reaches the
target. Without --target, one calibration run at the default batch size sets
it to the accuracy that run reaches at half of --max-epochs (so the default
converges mid-way and recurrences stay short). Every recurrence is a full
training run:
  - its batch size comes from `zeus serve` (started here on 127.0.0.1, SQLite
    in a temporary directory) through zeus.optimizer.batch_size.BatchSizeOptimizer;
  - a GlobalPowerLimitOptimizer profiles power limits in DRY RUN (one
    profile per batch size, saved and reused by later recurrences with it;
    no limit is ever set);
  - ZeusMonitor measures the energy of the whole recurrence.
First, --baseline runs at the default batch size (no server) give the energy
to compare with. Writes recurring_job.json and recurring_job.md (the table)
to --out. Requires ZEUS_DRY_RUN=1.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch

from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
from zeus.optimizer.batch_size.exceptions import ZeusBSOTrainFailError
from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost

BATCH_SIZES = [32, 64, 128, 256, 512, 1024, 2048]
DEFAULT_BATCH_SIZE = 256
CLASSES, FEATURES = 16, 512


def make_task(device, train, teacher_width, val=20_000, seed=0):
    """Drawn on the GPU: inputs from a standard normal in 512 dimensions,
    labelled by a fixed random teacher network (512 -> teacher_width -> 16,
    ReLU, argmax). The student fits it progressively over several epochs,
    which a Gaussian-mixture task (solved in one epoch) does not."""
    gen = torch.Generator(device=device).manual_seed(seed)
    w1 = torch.randn(FEATURES, teacher_width, generator=gen, device=device) / FEATURES ** 0.5
    w2 = torch.randn(teacher_width, CLASSES, generator=gen, device=device) / teacher_width ** 0.5

    def draw(n):
        x = torch.randn(n, FEATURES, generator=gen, device=device)
        labels = (torch.relu(x @ w1) @ w2).argmax(1)
        return x, labels

    return draw(train), draw(val)


WIDTH = 1024


def make_model(device, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH),
        torch.nn.ReLU(), torch.nn.Linear(WIDTH, CLASSES)).to(device)


def accuracy(model, x, y):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return (model(x).argmax(1) == y).float().mean().item()


def train_run(data, batch_size, target, max_epochs, seed, plo=None, bso=None, curve=None):
    """One recurrence; returns (epochs, reached accuracy, converged). With
    target None it trains all max_epochs and appends each epoch's accuracy to
    `curve`."""
    (x, y), (vx, vy) = data
    model = make_model(x.device, seed)
    lr = 0.05 * (batch_size / 256) ** 0.5
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator(device=x.device).manual_seed(seed)
    acc = 0.0
    if bso is not None:
        bso.on_train_begin()
    for epoch in range(1, max_epochs + 1):
        if plo is not None:
            plo.on_epoch_begin()
        order = torch.randperm(len(x), device=x.device, generator=gen)
        for start in range(0, len(x), batch_size):
            if plo is not None:
                plo.on_step_begin()
            idx = order[start:start + batch_size]
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            if plo is not None:
                plo.on_step_end()
        if plo is not None:
            plo.on_epoch_end()
        acc = accuracy(model, vx, vy)
        if curve is not None:
            curve.append(acc)
        if target is None:
            continue
        if bso is not None:
            try:
                bso.on_evaluate(acc)
            except ZeusBSOTrainFailError:
                return epoch, acc, False
            if bso.train_end:
                return epoch, acc, acc >= target
        elif acc >= target:
            return epoch, acc, True
    return max_epochs, acc, target is not None and acc >= target


def start_server(zeus, lib_dir, work):
    db = os.path.join(work, "recurring_job.db")
    env = dict(os.environ)
    if lib_dir:  # The server's libraries, for it alone (they could shadow torch's).
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    proc = subprocess.Popen([zeus, "serve", "--listen", "127.0.0.1:0", "--db", f"sqlite:{db}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    # Warnings may come before the address (e.g. no Chart.js for the dashboard
    # on a machine without our Debian packages).
    seen = []
    match = None
    for line in proc.stdout:
        seen.append(line)
        match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if match or len(seen) >= 50:
            break
    if not match:
        proc.kill()
        sys.exit("zeus serve did not start:\n" + "".join(seen))
    # The server's log goes to a file; the pipe is drained for its lifetime.
    log = open(os.path.join(work, "zeus_serve.log"), "w")
    log.writelines(seen)
    threading.Thread(target=shutil.copyfileobj, args=(proc.stdout, log), daemon=True).start()
    return proc, match.group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zeus", required=True, help="the zeus binary (for zeus serve)")
    parser.add_argument("--zeus-lib", default="", help="LD_LIBRARY_PATH for the zeus binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--recurrences", type=int, default=24)
    parser.add_argument("--baseline", type=int, default=3)
    parser.add_argument("--target", type=float, default=None,
                        help="validation accuracy to reach (default: calibrated)")
    parser.add_argument("--max-epochs", type=int, default=8)
    parser.add_argument("--train-samples", type=int, default=400_000)
    parser.add_argument("--teacher-width", type=int, default=64)
    parser.add_argument("--eta", type=float, default=0.5)
    parser.add_argument("--time-budget-s", type=float, default=470,
                        help="start no recurrence after this many seconds (the summary is "
                             "still written)")
    args = parser.parse_args()
    started = time.monotonic()
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("python_recurring_job.py: run with ZEUS_DRY_RUN=1")
    device = torch.device("cuda", 0)
    data = make_task(device, args.train_samples, args.teacher_width)
    monitor = ZeusMonitor(gpu_indices=[0])
    rows = []
    if args.target is None:
        curve = []
        train_run(data, DEFAULT_BATCH_SIZE, None, args.max_epochs, seed=99, curve=curve)
        args.target = math.floor(curve[(args.max_epochs + 1) // 2 - 1] * 200) / 200
        print(f"calibration: accuracy per epoch {[round(a, 3) for a in curve]}; "
              f"target {args.target}", flush=True)

    baseline = []
    for i in range(args.baseline):
        monitor.begin_window("recurrence")
        epochs, acc, ok = train_run(data, DEFAULT_BATCH_SIZE, args.target, args.max_epochs,
                                    seed=100 + i)
        m = monitor.end_window("recurrence")
        baseline.append({"batch_size": DEFAULT_BATCH_SIZE, "epochs": epochs, "accuracy": acc,
                         "converged": ok, "time_s": m.time, "energy_j": m.total_energy})
        print(f"baseline {i}: batch {DEFAULT_BATCH_SIZE}, {epochs} epochs, acc {acc:.3f}, "
              f"{m.time:.1f} s, {m.total_energy:.0f} J", flush=True)
    base_energy = statistics.mean(b["energy_j"] for b in baseline)
    if not all(b["converged"] for b in baseline):
        print(f"warning: a default-batch-size run did not reach accuracy {args.target} in "
              f"{args.max_epochs} epochs (its energy still counts)", flush=True)

    work = tempfile.mkdtemp(prefix="zeus-recurring-")  # Server database, power profiles.
    server, url = start_server(args.zeus, args.zeus_lib, work)
    # One JIT profile per batch size (power and step time depend on it): the
    # first run of a batch size profiles, later runs with it pin at once.
    profile_dir = work
    job = JobSpec(job_id_prefix="gpu-recurring", batch_sizes=BATCH_SIZES,
                  default_batch_size=DEFAULT_BATCH_SIZE, eta_knob=args.eta, beta_knob=2.0,
                  target_metric=args.target, max_epochs=args.max_epochs, mab_seed=1)
    try:
        for r in range(args.recurrences):
            if time.monotonic() - started > args.time_budget_s:
                print(f"time budget of {args.time_budget_s:.0f} s spent: stopping after "
                      f"{r} recurrences", flush=True)
                break
            bso = BatchSizeOptimizer(monitor, url, job)
            batch_size = bso.get_batch_size()
            plo = GlobalPowerLimitOptimizer(
                monitor, ZeusCost(args.eta), wait_steps=5, warmup_steps=3, profile_steps=10,
                pl_step=100, profile_path=os.path.join(profile_dir, f"batch_{batch_size}.json"),
                min_measure_time_s=0.15)
            monitor.begin_window("recurrence")
            epochs, acc, ok = train_run(data, batch_size, args.target, args.max_epochs,
                                        seed=r, plo=plo, bso=bso)
            m = monitor.end_window("recurrence")
            row = {"recurrence": r + 1, "batch_size": batch_size, "epochs": epochs,
                   "accuracy": acc, "converged": ok, "time_s": m.time,
                   "energy_j": m.total_energy, "energy_vs_default": m.total_energy / base_energy,
                   "power_limit_phase": plo.phase, "power_limit_optimum_w":
                   plo.optimal_power_limit}
            rows.append(row)
            print(f"recurrence {r + 1}: batch {batch_size}, {epochs} epochs, acc {acc:.3f}, "
                  f"{'converged' if ok else 'stopped'}, {m.time:.1f} s, {m.total_energy:.0f} J "
                  f"({row['energy_vs_default']:.2f}x default), power limit {plo.phase} "
                  f"{plo.optimal_power_limit}", flush=True)
            plo.close()
            bso.close()
    finally:
        server.terminate()
        server.wait(timeout=10)

    last = rows[-5:]
    summary = {
        "device": torch.cuda.get_device_name(0), "target_accuracy": args.target,
        "default_batch_size": DEFAULT_BATCH_SIZE, "baseline": baseline,
        "baseline_mean_energy_j": base_energy, "recurrences": rows,
        "total_energy_j": sum(r["energy_j"] for r in rows),
        "default_total_energy_j": base_energy * len(rows),
        "last5_mean_energy_vs_default": statistics.mean(r["energy_vs_default"] for r in last),
    }
    with open(os.path.join(args.out, "recurring_job.json"), "w") as f:
        json.dump(summary, f, indent=2)
    lines = [f"Device: {summary['device']}; target accuracy {args.target}; default batch size "
             f"{DEFAULT_BATCH_SIZE}: {base_energy:.0f} J per run (mean of {len(baseline)})", "",
             "| recurrence | batch size | epochs | accuracy | converged | time (s) | energy (J) "
             "| vs default |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['recurrence']} | {r['batch_size']} | {r['epochs']} | "
                     f"{r['accuracy']:.3f} | {'yes' if r['converged'] else 'no'} | "
                     f"{r['time_s']:.1f} | {r['energy_j']:.0f} | {r['energy_vs_default']:.2f} |")
    lines.append("")
    lines.append(f"All {len(rows)} recurrences: {summary['total_energy_j']:.0f} J vs "
                 f"{summary['default_total_energy_j']:.0f} J at the default batch size; last 5: "
                 f"{summary['last5_mean_energy_vs_default']:.2f}x default per run.")
    with open(os.path.join(args.out, "recurring_job.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
