"""One rank of test_distributed.py: DDP training on gloo over fake GPU
`rank`, with a GlobalPowerLimitOptimizer; prints the decision as JSON. With
ZEUS_TEST_KNOB=frequency, a GlobalFrequencyOptimizer instead. With
ZEUS_TEST_SELECTOR=custom, a Python selector that disagrees across ranks
(rank 0 picks 500 W, rank 1 300 W) and records what it was given."""

import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training import batches, make_task  # noqa: E402
from zeus.monitor import ZeusMonitor  # noqa: E402
from zeus.optimizer.frequency import GlobalFrequencyOptimizer  # noqa: E402
from zeus.optimizer.power_limit import (Energy, GlobalPowerLimitOptimizer,  # noqa: E402
                                        OptimumSelector, Time)


class RankDependent(OptimumSelector):
    def __init__(self, rank):
        self.rank = rank
        self.seen = None

    def select(self, measurements):
        self.seen = [m.dict() for m in measurements]
        return 500 if self.rank == 0 else 300


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    x, y = make_task(seed=rank)
    monitor = ZeusMonitor(gpu_indices=[rank])
    if os.environ.get("ZEUS_TEST_KNOB") == "frequency":
        return run_frequency(rank, model, opt, loss_fn, x, y, monitor)
    custom = os.environ.get("ZEUS_TEST_SELECTOR") == "custom"
    selector = RankDependent(rank) if custom else Energy()
    plo = GlobalPowerLimitOptimizer(monitor, selector, wait_steps=2, warmup_steps=2,
                                    profile_steps=3, pl_step=100, min_measure_time_s=0.0)
    for _ in range(4):
        for bx, by in batches(x, y, 8):
            plo.on_step_begin()
            opt.zero_grad()
            loss_fn(model(bx), by).backward()
            opt.step()
        plo.on_epoch_end()
    profile = plo.profile()
    print(json.dumps({"rank": rank, "phase": plo.phase, "optimum_w": plo.optimal_power_limit,
                      "limits_w": [m["power_limit_mw"] // 1000 for m in profile["measurements"]],
                      "num_gpus": profile["num_gpus"],
                      "seen": selector.seen if custom else None}))
    plo.close()
    dist.destroy_process_group()


def run_frequency(rank, model, opt, loss_fn, x, y, monitor):
    """ZEUS_TEST_KNOB=frequency: a GlobalFrequencyOptimizer choosing by time,
    which differs per rank (wall-clock noise) until it is all-reduced."""
    fo = GlobalFrequencyOptimizer(monitor, Time(), wait_steps=2, warmup_steps=2,
                                  profile_steps=3, clock_step=300, min_clock=1000,
                                  min_measure_time_s=0.0)
    for _ in range(4):
        for bx, by in batches(x, y, 8):
            fo.on_step_begin()
            opt.zero_grad()
            loss_fn(model(bx), by).backward()
            opt.step()
        fo.on_epoch_end()
    profile = fo.profile()
    print(json.dumps({"rank": rank, "phase": fo.phase, "optimum_mhz": fo.optimal_clock,
                      "clocks_mhz": [m["sm_clock_mhz"] for m in profile["measurements"]],
                      "times_s": [m["time_s"] for m in profile["measurements"]],
                      "num_gpus": profile["num_gpus"]}))
    fo.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
