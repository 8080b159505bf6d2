#!/usr/bin/env python3
"""Reports batch-size policies over many draws, never one: the figures
docs/BATCH_SIZE_POLICY.md quotes. Standard library only; runs `zeus simulate`.

  scripts/policy_report.py groups [--policy swarm ...] [--groups 4,16,64]
                                  [--draws 10] [--seeds 1-10] [arrival flags]
      Per policy and group count: the mean regret over the workloads for each
      of --draws draws of generated groups (--group-draw-seed 1..N), then the
      mean, min and max over the draws, the abandoned submissions (must be 0)
      and the most tries any submission took.

  scripts/policy_report.py solo [--policy frugal --policy zeus] [--seeds 1-100]
      Per policy: the mean and max regret over the workloads on the solo
      recurring job, and the workloads where the first policy's mean regret
      is above the second's.

Regret is the paper's (`expected_regret`, the "mean regret" of `zeus
simulate`'s summary). --zeus names the binary (default: build/tools/zeus).
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys

import group_simulation_args


def simulate(zeus, flags):
    """The parsed --json output of `zeus simulate FLAGS`."""
    out = subprocess.run([zeus, "simulate", "--json", "--quiet"] + flags, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["results"]


def policy_flags(policies):
    flags = []
    for policy in policies:
        flags += ["--policy", policy]
    return flags


def summarize(results, policy):
    """Mean and max regret (%), abandoned submissions and most tries of
    `policy` over the workloads of one simulation."""
    rows = [r for r in results if r["policy"] == policy]
    regrets = [100.0 * r["expected_regret"] for r in rows]
    return {
        "mean": statistics.fmean(regrets),
        "max": max(regrets),
        "abandoned": sum(r["submissions"]["abandoned"] for r in rows),
        "most_tries": max(r["submissions"]["most_tries"] for r in rows),
    }


def run_groups(args, extra):
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for groups in args.groups:
            for draw in range(1, args.draws + 1):
                flags = (["--generate-groups", str(groups), "--group-draw-seed", str(draw),
                          "--seeds", args.seeds] + policy_flags(args.policy) + extra)
                jobs[(groups, draw)] = pool.submit(simulate, args.zeus, flags)
    print(f"seeds {args.seeds} per draw, draws 1-{args.draws}; regret in %, the mean over the "
          "workloads of one draw, then over the draws")
    print(f"{'policy':<8} {'groups':>6} {'mean':>6} {'min':>6} {'max':>6} {'stdev':>6} "
          f"{'worst wl':>8} {'abandoned':>9} {'most tries':>10}")
    for policy in args.policy:
        for groups in args.groups:
            draws = [summarize(jobs[(groups, d)].result(), policy)
                     for d in range(1, args.draws + 1)]
            means = [d["mean"] for d in draws]
            print(f"{policy:<8} {groups:>6} {statistics.fmean(means):>6.2f} {min(means):>6.2f} "
                  f"{max(means):>6.2f} {statistics.pstdev(means):>6.2f} "
                  f"{max(d['max'] for d in draws):>8.2f} "
                  f"{sum(d['abandoned'] for d in draws):>9} "
                  f"{max(d['most_tries'] for d in draws):>10}")


def run_solo(args, extra):
    results = simulate(args.zeus, ["--seeds", args.seeds] + policy_flags(args.policy) + extra)
    print(f"solo, seeds {args.seeds}; regret in %")
    print(f"{'policy':<8} {'mean':>6} {'max':>6} {'abandoned':>9} {'most tries':>10}")
    for policy in args.policy:
        s = summarize(results, policy)
        print(f"{policy:<8} {s['mean']:>6.2f} {s['max']:>6.2f} {s['abandoned']:>9} "
              f"{s['most_tries']:>10}")
    if len(args.policy) >= 2:
        first, second = args.policy[0], args.policy[1]
        regret = {(r["gpu"], r["dataset"], r["policy"]): 100.0 * r["expected_regret"]
                  for r in results}
        worse = [(gpu, dataset, regret[(gpu, dataset, first)], regret[(gpu, dataset, second)])
                 for (gpu, dataset, policy) in regret
                 if policy == first and regret[(gpu, dataset, first)] >
                 regret[(gpu, dataset, second)]]
        print(f"\nworkloads where {first} > {second}: {len(worse)}")
        for gpu, dataset, a, b in sorted(worse):
            print(f"  {gpu}/{dataset}: {a:.2f} % > {b:.2f} %")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("groups", "solo"))
    parser.add_argument("--zeus", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                       "tools", "zeus"))
    parser.add_argument("--policy", action="append")
    parser.add_argument("--groups", default="4,16,64",
                        type=lambda text: [int(n) for n in text.split(",")])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--seeds")
    parser.add_argument("--eta", type=float)
    group_simulation_args.add_arguments(parser)
    args = parser.parse_args()
    extra = group_simulation_args.simulate_flags(args)
    if args.eta is not None:
        extra += ["--eta", str(args.eta)]
    if args.mode == "groups":
        args.policy = args.policy or ["swarm"]
        args.seeds = args.seeds or "1-10"
        run_groups(args, extra)
    else:
        args.policy = args.policy or ["frugal", "zeus"]
        args.seeds = args.seeds or "1-100"
        run_solo(args, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
