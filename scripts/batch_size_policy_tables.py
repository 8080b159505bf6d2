#!/usr/bin/env python3
"""Regenerates the tables of docs/BATCH_SIZE_POLICY.md from `zeus simulate`.

For each eta (0.2, 0.5, 0.8) and recurrence count (the default
2 x |batch sizes| x |power limits|, and half of it per workload), prints one
Markdown row: per policy, the mean and the largest expected regret (%) over
the workloads of the chosen GPUs and the worst cost ratio to `default`; with
both zeus and frugal, frugal's mean and max as fractions of zeus's.

    scripts/batch_size_policy_tables.py --zeus build/tools/zeus --gpus v100,a40 --seeds 1-10
    scripts/batch_size_policy_tables.py --gpus a40 --seeds 11-60 --per-workload

Standard library only; one `zeus simulate` call per GPU, eta and policy (and
per workload for the half recurrences).
"""

import argparse
import json
import subprocess
import sys


# Flags every `zeus simulate` call gets (--check-in-s).
EXTRA_FLAGS = []


def simulate(zeus, gpu, eta, policy, seeds, recurrences=None, dataset=None):
    cmd = [zeus, "simulate", "--quiet", "--json", "--gpu", gpu, "--eta", str(eta),
           "--policy", policy, "--seeds", seeds] + EXTRA_FLAGS
    if recurrences is not None:
        cmd += ["--recurrences", str(recurrences)]
    if dataset is not None:
        cmd += ["--dataset", dataset]
    return json.loads(subprocess.check_output(cmd))["results"]


def results(zeus, gpus, eta, policy, seeds, half):
    out = []
    for gpu in gpus:
        full = simulate(zeus, gpu, eta, policy, seeds)
        if not half:
            out += full
            continue
        for r in full:
            out += simulate(zeus, gpu, eta, policy, seeds, r["recurrences"] // 2, r["dataset"])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zeus", default="build/tools/zeus", help="the zeus CLI")
    parser.add_argument("--gpus", default="v100,a40", help="comma-separated trace GPUs")
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--policies", default="zeus,frugal")
    parser.add_argument("--per-workload", action="store_true",
                        help="also print each workload's regret (%%) and cost ratio")
    parser.add_argument("--check-in-s", type=float,
                        help="judge runs between per-epoch reports every S s (0: per epoch)")
    args = parser.parse_args()
    if args.check_in_s is not None:
        EXTRA_FLAGS.extend(["--check-in-s", str(args.check_in_s)])
    gpus = args.gpus.split(",")
    policies = args.policies.split(",")
    print("| eta | recurrences | " + " | ".join(policies) +
          (" | frugal / zeus (mean, max) |" if {"zeus", "frugal"} <= set(policies) else " |"))
    print("|---" * (2 + len(policies) + ({"zeus", "frugal"} <= set(policies))) + "|")
    for eta in (0.2, 0.5, 0.8):
        for half in (False, True):
            stats = {}
            details = []
            for policy in policies:
                rs = results(args.zeus, gpus, eta, policy, args.seeds, half)
                regrets = [100 * r["expected_regret"] for r in rs]
                stats[policy] = (sum(regrets) / len(regrets), max(regrets),
                                 max(r["cost_ratio"] for r in rs))
                details.append(policy + ": " + ", ".join(
                    f"{r['gpu']}/{r['dataset']} {100 * r['expected_regret']:.2f} "
                    f"({r['cost_ratio']:.3f})" for r in rs))
            cells = [f"{m:.2f} / {mx:.2f} / {c:.3f}" for m, mx, c in stats.values()]
            row = f"| {eta} | {'half' if half else 'full'} | " + " | ".join(cells) + " |"
            if "zeus" in stats and "frugal" in stats:
                z, f = stats["zeus"], stats["frugal"]
                row += f" {f[0] / z[0]:.2f}, {f[1] / z[1]:.2f} |"
            print(row, flush=True)
            if args.per_workload:
                for line in details:
                    print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
