#!/usr/bin/env python3
"""Where a policy's regret in job groups goes, by trial kind (docs/BATCH_SIZE_POLICY.md).

Runs

    zeus simulate --generate-groups N --eta E --seeds S --policy P --policy oracle
                  --history-csv FILE [--gpu G] [--traces DIR] [arrival-model flags]

and splits P's excess cost over the oracle by the kind each run was handed
out as (the history's `kind` column: exploration, speculative, concurrent,
bandit) and whether it reached the target (a near miss that ran on past its
bound and reached, the history's `ran_on`, shows as "ran on"; a concurrent run stopped so that
its submission restarts at a cheaper size, the history's `restarted`, as "restarted"). A run that
reached counts its cost
minus the oracle's run of the same group and submission; one that did not
counts whole (its submission still needs a run). Each share is in points of
the workload's regret: the excess over the sum of the oracle's runs of the
same groups and seeds. The oracle's runs draw their own epochs, so the total
differs from `zeus simulate`'s expected regret by the oracle's luck (a few
points on small draws). `--failed-cost-scale Q` adds what the regret would
be if every run that did not reach the target had cost Q times what it spent
(the same decisions: a what-if for cheaper failure detection, such as a
stop that reads the learning curve; docs/BATCH_SIZE_POLICY.md, "What failed
runs cost"). The last row is the mean over workloads. `--failed-by-size`
adds a table of where the failed runs were: their points by batch size (as
a multiple of the oracle's size b*) and kind. Standard library only.

    scripts/group_regret_by_kind.py --zeus build/tools/zeus --groups 16 --gpu v100
"""

import argparse
import collections
import csv
import os
import subprocess
import tempfile

import group_simulation_args


def simulate(args, history):
    cmd = [args.zeus, "simulate", "--quiet", "--generate-groups", str(args.groups),
           "--eta", str(args.eta), "--seeds", args.seeds, "--policy", args.policy,
           "--policy", "oracle", "--history-csv", history]
    cmd += group_simulation_args.simulate_flags(args)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def shares(rows, policy):
    """(gpu, dataset) -> {(kind, "reached" | "ran on" | "failed" | "restarted"): points}."""
    oracle = {}
    oracle_total = collections.Counter()
    for r in rows:
        if r["policy"] == "oracle" and r["reached"] == "true":
            key = (r["gpu"], r["dataset"], r["seed"], r["group"], r["recurrence"])
            oracle[key] = float(r["cost"])
            oracle_total[(r["gpu"], r["dataset"])] += float(r["cost"])
    excess = collections.defaultdict(collections.Counter)
    for r in rows:
        if r["policy"] != policy:
            continue
        workload = (r["gpu"], r["dataset"])
        cost = float(r["cost"])
        if r["reached"] == "true":
            key = (r["gpu"], r["dataset"], r["seed"], r["group"], r["recurrence"])
            outcome = "ran on" if r.get("ran_on") == "true" else "reached"
            excess[workload][(r["kind"] or "-", outcome)] += cost - oracle[key]
        else:
            outcome = "restarted" if r.get("restarted") == "true" else "failed"
            excess[workload][(r["kind"] or "-", outcome)] += cost
    return {w: {k: 100.0 * v / oracle_total[w] for k, v in parts.items()}
            for w, parts in excess.items()}


def failed_by_size(rows, policy):
    """(gpu, dataset) -> (b*, {(batch size, kind): points}) for runs that failed."""
    oracle_size = {}
    oracle_total = collections.Counter()
    for r in rows:
        if r["policy"] == "oracle":
            oracle_size[(r["gpu"], r["dataset"])] = int(r["batch_size"])
            if r["reached"] == "true":
                oracle_total[(r["gpu"], r["dataset"])] += float(r["cost"])
    failed = collections.defaultdict(collections.Counter)
    for r in rows:
        if r["policy"] == policy and r["reached"] != "true":
            workload = (r["gpu"], r["dataset"])
            failed[workload][(int(r["batch_size"]), r["kind"] or "-")] += float(r["cost"])
    return {w: (oracle_size[w], {k: 100.0 * v / oracle_total[w] for k, v in parts.items()})
            for w, parts in failed.items()}


def ratio_text(size, best):
    ratio = size / best
    return f"{ratio:.3g}x" if ratio >= 1 else f"1/{1 / ratio:.3g}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zeus", default="build/tools/zeus", help="the zeus CLI")
    parser.add_argument("--policy", default="swarm")
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--eta", type=float, default=0.5)
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--failed-cost-scale", type=float, default=None, metavar="Q",
                        help="also print the regret if failed runs had cost Q x what they spent")
    parser.add_argument("--failed-by-size", action="store_true",
                        help="also print the failed runs' points by batch size and kind")
    group_simulation_args.add_arguments(parser)
    args = parser.parse_args()
    if args.policy == "oracle":
        parser.error("--policy oracle: the oracle is the reference; name another policy")
    with tempfile.TemporaryDirectory() as tmp:
        history = os.path.join(tmp, "history.csv")
        simulate(args, history)
        with open(history, newline="") as f:
            rows = list(csv.DictReader(f))
    q = args.failed_cost_scale
    if q is not None and not 0.0 <= q <= 1.0:
        parser.error(f"--failed-cost-scale must be in [0, 1], got {q}")
    what_if = f" if failed x{q:g} |" if q is not None else ""
    print(f"| workload | total | failed runs |{what_if} shares (points of regret, largest first) |")
    print("|---|---|---|" + ("---|" if q is not None else "") + "---|")
    by_workload = sorted(shares(rows, args.policy).items())
    sums = collections.Counter()
    for (gpu, dataset), parts in by_workload:
        total = sum(parts.values())
        failed = sum(points for (_, outcome), points in parts.items()
                     if outcome in ("failed", "restarted"))
        sums["total"] += total
        sums["failed"] += failed
        ranked = sorted(parts.items(), key=lambda item: -item[1])
        text = ", ".join(f"{kind} {outcome} {points:.1f}" for (kind, outcome), points in ranked
                         if abs(points) >= 0.1)
        scaled = f" {total - (1.0 - q) * failed:.1f} |" if q is not None else ""
        print(f"| {gpu}/{dataset} | {total:.1f} | {failed:.1f} |{scaled} {text} |")
    n = max(len(by_workload), 1)
    scaled = (f" {(sums['total'] - (1.0 - q) * sums['failed']) / n:.2f} |"
              if q is not None else "")
    print(f"| mean | {sums['total'] / n:.2f} | {sums['failed'] / n:.2f} |{scaled} |")
    if args.failed_by_size:
        print()
        print("| workload | b* | failed runs: batch size (x b*) kind points, largest first |")
        print("|---|---|---|")
        for (gpu, dataset), (best, parts) in sorted(failed_by_size(rows, args.policy).items()):
            ranked = sorted(parts.items(), key=lambda item: -item[1])
            text = ", ".join(f"{size} ({ratio_text(size, best)}) {kind} {points:.1f}"
                             for (size, kind), points in ranked if points >= 0.1)
            print(f"| {gpu}/{dataset} | {best} | {text} |")


if __name__ == "__main__":
    main()
