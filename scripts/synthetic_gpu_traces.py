#!/usr/bin/env python3
"""Stress-tests the batch-size policies on synthetic GPUs derived from the bundled traces.

The issue judges `frugal` on GPUs whose traces we do not have. A new GPU
changes the power traces (time per epoch and average power at each batch
size and power limit), not the epochs a batch size needs to reach the target
(statistical efficiency is the model's and the data's, so every GPU shares
summary_train.csv). Each synthetic GPU reshapes one bundled GPU's power trace:

  bs+R   time per epoch x (b / default)^-R: large batches relatively faster
         (a wider GPU), so the cost optimum moves to larger sizes
  bs-R   time per epoch x (b / default)^+R: small batches relatively faster
  pl^K   at each batch size, time x (t / t at its highest limit)^(K-1):
         K > 1 slows low limits down more, K < 1 less (power unchanged)

It writes summary_power_<gpu>_<transform>.csv beside copies of jobs.csv and
summary_train.csv in --out, runs `zeus simulate --json --traces OUT --gpu G
--eta E --policy P --seeds S` for each, and prints one Markdown row per GPU
and eta: per policy the mean and max expected regret (%) over the six
workloads and the worst cost ratio to `default`, then frugal's mean and max
as fractions of zeus's, its worst workload, and every workload where
frugal's mean regret is above zeus's. Standard library only.

    scripts/synthetic_gpu_traces.py --zeus build/tools/zeus --seeds 1-10
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import tempfile

TRANSFORMS = ["bs+0.2", "bs-0.2", "pl^1.5", "pl^0.5"]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def transform(rows, name, default_batch_size):
    """Returns new power rows: `name` applied to `rows` (one GPU's power trace)."""
    kind, value = name[:3], float(name[3:])
    out = [dict(r) for r in rows]
    if kind in ("bs+", "bs-"):
        exponent = -value if kind == "bs+" else value
        for r in out:
            ratio = float(r["batch_size"]) / default_batch_size[r["dataset"]]
            r["time_per_epoch"] = repr(float(r["time_per_epoch"]) * ratio ** exponent)
        return out
    if kind == "pl^":
        top = {}
        for r in out:
            key = (r["dataset"], r["optimizer"], r["batch_size"])
            limit = float(r["power_limit"])
            if key not in top or limit > top[key][0]:
                top[key] = (limit, float(r["time_per_epoch"]))
        for r in out:
            t_top = top[(r["dataset"], r["optimizer"], r["batch_size"])][1]
            t = float(r["time_per_epoch"])
            r["time_per_epoch"] = repr(t_top * (t / t_top) ** value)
        return out
    raise ValueError("unknown transform " + name)


def write_traces(source, out, gpus):
    jobs = read_csv(os.path.join(source, "jobs.csv"))
    default_batch_size = {j["dataset"]: float(j["default_batch_size"]) for j in jobs}
    for name in ("jobs.csv", "summary_train.csv"):
        shutil.copy(os.path.join(source, name), os.path.join(out, name))
    made = []
    for gpu in gpus:
        rows = read_csv(os.path.join(source, "summary_power_%s.csv" % gpu))
        for name in TRANSFORMS:
            synthetic = "%s_%s" % (gpu, name.replace("+", "p").replace("-", "m")
                                   .replace("^", "k").replace(".", ""))
            with open(os.path.join(out, "summary_power_%s.csv" % synthetic), "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
                writer.writeheader()
                writer.writerows(transform(rows, name, default_batch_size))
            made.append((synthetic, gpu, name))
    return made


def summarize(zeus, traces, gpu, eta, policy, seeds):
    cmd = [zeus, "simulate", "--quiet", "--json", "--traces", traces, "--gpu", gpu,
           "--eta", str(eta), "--policy", policy, "--seeds", seeds]
    results = json.loads(subprocess.check_output(cmd))["results"]
    return {r["dataset"]: (100 * r["expected_regret"], r["cost_ratio"]) for r in results}


def row(per_dataset):
    """(mean regret %, max regret %, worst cost ratio) over the workloads."""
    regrets = [regret for regret, _ in per_dataset.values()]
    return (sum(regrets) / len(regrets), max(regrets),
            max(cost for _, cost in per_dataset.values()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zeus", default="build/tools/zeus", help="the zeus CLI")
    parser.add_argument("--source", default="data/traces/zeus-nsdi23",
                        help="trace directory to derive from")
    parser.add_argument("--gpus", default="v100,a40", help="comma-separated source GPUs")
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--out", help="where to write the synthetic traces (default: a temp dir)")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="zeus-synthetic-")
    try:
        os.makedirs(out, exist_ok=True)
        report(args, out)
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


def report(args, out):
    made = write_traces(args.source, out, args.gpus.split(","))
    if args.out:
        print("traces: " + out)
        print()
    print("| gpu | transform | eta | zeus | frugal | frugal / zeus (mean, max) "
          "| frugal's worst workload: frugal vs zeus | workloads where frugal > zeus |")
    print("|---|---|---|---|---|---|---|---|")
    for synthetic, gpu, name in made:
        for eta in (0.2, 0.5, 0.8):
            zeus = summarize(args.zeus, out, synthetic, eta, "zeus", args.seeds)
            frugal = summarize(args.zeus, out, synthetic, eta, "frugal", args.seeds)
            z, f = row(zeus), row(frugal)
            worst = max(frugal, key=lambda d: frugal[d][0])
            above = ", ".join("%s %.2f vs %.2f" % (d, frugal[d][0], zeus[d][0])
                              for d in sorted(frugal) if frugal[d][0] > zeus[d][0]) or "none"
            print("| %s | %s | %.1f | %.2f / %.2f / %.3f | %.2f / %.2f / %.3f | %.2f, %.2f "
                  "| %s %.2f vs %.2f | %s |" % (gpu, name, eta, *z, *f, f[0] / z[0], f[1] / z[1],
                                                worst, frugal[worst][0], zeus[worst][0], above))


if __name__ == "__main__":
    main()
