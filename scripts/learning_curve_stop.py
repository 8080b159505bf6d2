#!/usr/bin/env python3
"""How early a stop reading the learning curve would cut failing runs (docs/BATCH_SIZE_POLICY.md).

Today a run stops when its cost passes a bound on the whole run (an
exploration run: 1.25 x the lowest cost), so a run that fails has spent the
whole bound. In job groups those failed runs are most of the policies'
regret above the floor (scripts/group_regret_by_kind.py). The traces also
record, for every seed run, the first epoch at which each intermediate
metric level (a milestone) was reached. This script asks, from the traces
alone, what a milestone rule would do:

    a run stops at the first milestone m it has not reached by the time it
    has spent `--milestone-factor` x what the reference needed to reach m,
    and at the target itself by `--target-factor` x the reference's cost

where the reference is the oracle batch size b*'s mean curve (an idealised
stand-in for the best run a policy has seen). Each run's cost to a milestone
is its epochs to it times its batch size's cost per epoch at its cheapest
power limit (eta as given, MaxPower its highest limit). For the sizes within
`--neighbours` sizes of b* (the walk's last probes) it prints, per GPU and
workload: how many seed runs fail the target bound and what they would spend
under the milestone rule as a fraction of that bound (1.0: no earlier than
today), and how many runs that pass the target bound the milestone rule
would stop by mistake. Standard library only.

    scripts/learning_curve_stop.py --milestone-factor 1.5
"""

import argparse
import collections
import csv
import math
import os


def load(traces, gpu):
    jobs = {}
    with open(os.path.join(traces, "jobs.csv"), newline="") as f:
        for row in csv.DictReader(f):
            jobs[row["dataset"]] = row
    # (dataset, batch size) -> seed run -> {metric level: first epoch, or None}
    curves = collections.defaultdict(lambda: collections.defaultdict(dict))
    with open(os.path.join(traces, "summary_train.csv"), newline="") as f:
        for row in csv.DictReader(f):
            job = jobs.get(row["dataset"])
            if job is None or row["optimizer"] != job["optimizer"]:
                continue
            epoch = row["target_epoch"]
            level = float(row["target_metric"])
            run = curves[(row["dataset"], int(row["batch_size"]))][row["run"]]
            run[level] = None if epoch in ("", "nan") else float(epoch)
    # (dataset, batch size) -> [(limit W, s per epoch, W)]
    power = collections.defaultdict(list)
    with open(os.path.join(traces, f"summary_power_{gpu}.csv"), newline="") as f:
        for row in csv.DictReader(f):
            job = jobs.get(row["dataset"])
            if job is None or row["optimizer"] != job["optimizer"]:
                continue
            power[(row["dataset"], int(row["batch_size"]))].append(
                (float(row["power_limit"]), float(row["time_per_epoch"]),
                 float(row["average_power"])))
    return jobs, curves, power


def analyse(job, dataset, curves, power, args):
    """(failing runs, their mean spend / target bound, passing runs, falsely stopped)."""
    target = float(job["target_metric"])
    max_epochs = float(job["max_epochs"])
    # A metric improves upwards (accuracy) or downwards (a word error rate):
    # whichever end of the recorded levels the runs reach first.
    first_epochs = collections.defaultdict(list)
    for runs in (curves[key] for key in curves if key[0] == dataset):
        for run in runs.values():
            for level, epoch in run.items():
                if epoch is not None:
                    first_epochs[level].append(epoch)
    earliest = min(first_epochs,
                   key=lambda level: sum(first_epochs[level]) / len(first_epochs[level]))
    lower_is_better = earliest > target
    if lower_is_better:
        on_the_way = lambda level: level >= target  # noqa: E731
    else:
        on_the_way = lambda level: level <= target  # noqa: E731
    sizes = sorted(b for (d, b) in curves if d == dataset and (d, b) in power)
    cost_per_epoch = {}
    for b in sizes:
        max_power_w = max(limit for limit, _, _ in power[(dataset, b)])
        cost_per_epoch[b] = min(args.eta * t * w + (1 - args.eta) * max_power_w * t
                                for _, t, w in power[(dataset, b)])

    def epochs_to(run, level):
        epoch = run.get(level)
        return epoch if epoch is not None and epoch <= max_epochs else math.inf

    def expected(b):
        runs = curves[(dataset, b)].values()
        return cost_per_epoch[b] * sum(epochs_to(r, target) for r in runs) / len(runs)

    best = min(sizes, key=expected)
    reference_runs = list(curves[(dataset, best)].values())
    milestones = sorted((level for level in reference_runs[0] if on_the_way(level)),
                        reverse=lower_is_better)
    reference = {}
    for level in milestones:
        epochs = [epochs_to(r, level) for r in reference_runs]
        if all(math.isfinite(e) for e in epochs):
            reference[level] = cost_per_epoch[best] * sum(epochs) / len(epochs)
    milestones = [level for level in milestones if level in reference]
    target_bound = args.target_factor * reference[target]
    failing, spends, passing, false_stops = 0, [], 0, 0
    for b in sizes:
        if b == best or abs(sizes.index(b) - sizes.index(best)) > args.neighbours:
            continue
        for run in curves[(dataset, b)].values():
            stop = None
            for level in milestones:
                factor = args.target_factor if level == target else args.milestone_factor
                if cost_per_epoch[b] * epochs_to(run, level) > factor * reference[level]:
                    stop = factor * reference[level]
                    break
            if cost_per_epoch[b] * epochs_to(run, target) > target_bound:
                failing += 1
                spends.append(min(stop, target_bound) / target_bound)
            else:
                passing += 1
                false_stops += stop is not None
    return failing, spends, passing, false_stops


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=os.path.join(here, "..", "data", "traces",
                                                         "zeus-nsdi23"))
    parser.add_argument("--gpus", default="v100,a40")
    parser.add_argument("--eta", type=float, default=0.5)
    parser.add_argument("--target-factor", type=float, default=1.25)
    parser.add_argument("--milestone-factor", type=float, default=1.5)
    parser.add_argument("--neighbours", type=int, default=2,
                        help="sizes on each side of b* whose runs are judged")
    args = parser.parse_args()
    if not 0.0 <= args.eta <= 1.0:
        parser.error(f"--eta must be in [0, 1], got {args.eta}")
    for name, value in (("--target-factor", args.target_factor),
                        ("--milestone-factor", args.milestone_factor)):
        if not value > 0.0:
            parser.error(f"{name} must be > 0, got {value}")
    if args.neighbours < 1:
        parser.error(f"--neighbours must be >= 1, got {args.neighbours}")
    for gpu in args.gpus.split(","):
        for name in ("jobs.csv", "summary_train.csv", f"summary_power_{gpu}.csv"):
            if not os.path.isfile(os.path.join(args.traces, name)):
                parser.error(f"--traces {args.traces} has no {name} (--gpus {args.gpus})")
    print("| workload | failing runs | their spend / bound | passing runs | falsely stopped |")
    print("|---|---|---|---|---|")
    all_spends, all_passing, all_false = [], 0, 0
    for gpu in args.gpus.split(","):
        jobs, curves, power = load(args.traces, gpu)
        for dataset in sorted(jobs):
            failing, spends, passing, false_stops = analyse(jobs[dataset], dataset, curves,
                                                            power, args)
            spend = f"{sum(spends) / len(spends):.2f}" if spends else "-"
            print(f"| {gpu}/{dataset} | {failing} | {spend} | {passing} | {false_stops} |")
            all_spends += spends
            all_passing += passing
            all_false += false_stops
    spend = f"{sum(all_spends) / len(all_spends):.2f}" if all_spends else "-"
    print(f"| all | {len(all_spends)} | {spend} | {all_passing} | {all_false} |")


if __name__ == "__main__":
    main()
