#!/usr/bin/env python3
"""Job-group tables of docs/BATCH_SIZE_POLICY.md: regret of each policy in generated job groups.

For each number of groups and eta, runs

    zeus simulate --json --generate-groups N --eta E --seeds S --policy P ... [--gpu G]
                  [--traces DIR] [arrival-model flags]

and prints one Markdown row per (groups, eta, policy): the mean and max over
the workloads of the expected regret (%), the worst workload's cost ratio to
`default` (mean over the seeds) and the worst single seed's, then, with
--per-workload, each workload's regret. Standard library only.

    scripts/job_group_tables.py --zeus build/tools/zeus --groups 4,16,64 --etas 0.5 \\
        --policies zeus,frugal,swarm,walk-floor --gpu v100
"""

import argparse
import json
import subprocess
import sys


def run(args, groups, eta):
    cmd = [args.zeus, "simulate", "--quiet", "--json", "--generate-groups", str(groups),
           "--eta", str(eta), "--seeds", args.seeds]
    if args.gpu:
        cmd += ["--gpu", args.gpu]
    if args.traces:
        cmd += ["--traces", args.traces]
    for flag in ("submissions", "interarrival_s", "duration_s", "runtime_sigma"):
        value = getattr(args, "group_" + flag)
        if value is not None:
            cmd += ["--group-" + flag.replace("_", "-"), str(value)]
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
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--gpu", help="one GPU's traces only (default: every GPU)")
    parser.add_argument("--traces", help="trace directory (default: the bundled traces)")
    parser.add_argument("--group-submissions", type=int)
    parser.add_argument("--group-interarrival-s", type=float)
    parser.add_argument("--group-duration-s", type=float)
    parser.add_argument("--group-runtime-sigma", type=float)
    parser.add_argument("--per-workload", action="store_true")
    args = parser.parse_args()

    print("| groups | eta | policy | workloads | mean / max regret (%) | worst cost (mean, seed) |"
          + (" per workload |" if args.per_workload else ""))
    print("|---|---|---|---|---|---|" + ("---|" if args.per_workload else ""))
    for groups in args.groups.split(","):
        for eta in args.etas.split(","):
            results = run(args, groups, eta)
            for policy in args.policies.split(","):
                rows = [r for r in results if r["policy"] == policy]
                if not rows:
                    sys.exit("no results for policy " + policy)
                regrets = [100 * r["expected_regret"] for r in rows]
                line = "| %s | %s | %s | %d | %.2f / %.2f | %.3f, %.3f |" % (
                    groups, eta, policy, len(rows), sum(regrets) / len(regrets), max(regrets),
                    max(r["cost_ratio"] for r in rows), max(r["cost_ratio_max"] for r in rows))
                if args.per_workload:
                    line += " " + ", ".join("%s/%s %.1f" % (r["gpu"], r["dataset"],
                                                            100 * r["expected_regret"])
                                            for r in rows) + " |"
                print(line)


if __name__ == "__main__":
    main()
