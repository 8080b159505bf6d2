#!/usr/bin/env python3
"""Job-group tables of docs/BATCH_SIZE_POLICY.md: regret of each policy in generated job groups.

For each number of groups and eta, runs

    zeus simulate --json --generate-groups N --eta E --seeds S --policy P ... [--gpu G]
                  [--traces DIR] [arrival-model flags]

and prints one Markdown row per (groups, eta, policy): the mean and max over
the workloads of the expected regret (%), the worst workload's cost ratio to
`default` (mean over the seeds) and the worst single seed's, then, with
--per-workload, each workload's regret. With several group draws (--seeds
11-20/21-30/...), the mean over the draws of each draw's mean and max.
Standard library only.

    scripts/job_group_tables.py --zeus build/tools/zeus --groups 4,16,64 --etas 0.5 \\
        --policies zeus,frugal,swarm,walk-floor --gpu v100
"""

import argparse
import json
import subprocess
import sys

import group_simulation_args


def run(args, groups, eta, seeds):
    cmd = [args.zeus, "simulate", "--quiet", "--json", "--generate-groups", str(groups),
           "--eta", str(eta), "--seeds", seeds] + group_simulation_args.simulate_flags(args)
    for policy in args.policies.split(","):
        cmd += ["--policy", policy]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zeus", default="build/tools/zeus", help="the zeus CLI")
    parser.add_argument("--groups", default="4,16,64", help="comma-separated group counts")
    parser.add_argument("--etas", default="0.5", help="comma-separated etas")
    parser.add_argument("--policies", default="zeus,frugal,swarm,walk-floor")
    parser.add_argument("--seeds", default="1-10",
                        help="seeds; several group draws: ranges joined by '/', e.g. "
                             "11-20/21-30 (each range draws its own groups from its first "
                             "seed; the row then gives the mean over the draws of the mean "
                             "and of the max regret, and the worst cost ratios)")
    group_simulation_args.add_arguments(parser)
    parser.add_argument("--per-workload", action="store_true")
    args = parser.parse_args()
    if args.per_workload and "/" in args.seeds:
        parser.error("--per-workload takes one group draw (no '/' in --seeds)")

    print("| groups | eta | policy | workloads | mean / max regret (%) | worst cost (mean, seed) |"
          + (" per workload |" if args.per_workload else ""))
    print("|---|---|---|---|---|---|" + ("---|" if args.per_workload else ""))
    for groups in args.groups.split(","):
        for eta in args.etas.split(","):
            draws = [run(args, groups, eta, seeds) for seeds in args.seeds.split("/")]
            for policy in args.policies.split(","):
                means, maxes, rows = [], [], []
                for results in draws:
                    draw = [r for r in results if r["policy"] == policy]
                    if not draw:
                        sys.exit("no results for policy " + policy)
                    regrets = [100 * r["expected_regret"] for r in draw]
                    means.append(sum(regrets) / len(regrets))
                    maxes.append(max(regrets))
                    rows += draw
                line = "| %s | %s | %s | %d | %.2f / %.2f | %.3f, %.3f |" % (
                    groups, eta, policy, len(rows) // len(draws), sum(means) / len(means),
                    sum(maxes) / len(maxes), max(r["cost_ratio"] for r in rows),
                    max(r["cost_ratio_max"] for r in rows))
                if args.per_workload:
                    line += " " + ", ".join("%s/%s %.1f" % (r["gpu"], r["dataset"],
                                                            100 * r["expected_regret"])
                                            for r in rows) + " |"
                print(line)


if __name__ == "__main__":
    main()
