#!/usr/bin/env python3
"""DDP over NCCL with a GlobalPowerLimitOptimizer per rank, dry run (issue 9).

Run with `python -m torch.distributed.run --standalone --nproc_per_node=2`.
Each rank trains a bf16 MLP on its GPU with DistributedDataParallel and owns a
GlobalPowerLimitOptimizer over a ZeusMonitor of its own GPU; the ranks agree
through the optimizer's automatic torch.distributed all-reduce. Rank 0 also
measures every epoch with a ZeusMonitor over both GPUs. Checks that both
ranks profiled the same limits and pinned the same one; writes ddp.json to
--out. Requires ZEUS_DRY_RUN=1 (no limit is ever set).
"""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer, ZeusCost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=12)
    # About 4 s per epoch on an H200 (2 ms steps): several limits, each
    # measured for at least min_measure_time_s, fit in one epoch.
    parser.add_argument("--steps-per-epoch", type=int, default=2000)
    args = parser.parse_args()
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("python_ddp.py: run with ZEUS_DRY_RUN=1")
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 4096)).to(device), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(1024, 4096, device=device)

    monitor = ZeusMonitor(gpu_indices=[local])
    both = ZeusMonitor(gpu_indices=list(range(world))) if rank == 0 else None
    plo = GlobalPowerLimitOptimizer(monitor, ZeusCost(0.5, world_size=world), wait_steps=5,
                                    warmup_steps=5, profile_steps=20, pl_step=50,
                                    min_measure_time_s=1.0)
    epochs = []
    for epoch in range(args.epochs):
        if both is not None:
            both.begin_window("epoch")
        for _ in range(args.steps_per_epoch):
            plo.on_step_begin()
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()
        plo.on_epoch_end()
        if both is not None:
            m = both.end_window("epoch")
            epochs.append({"epoch": epoch, "time_s": m.time, "gpu_energy_j": m.gpu_energy,
                           "phase": plo.phase})
            print(f"epoch {epoch}: {m.time:.2f} s, energy {m.gpu_energy}, {plo.phase}",
                  flush=True)
        if plo.phase == "done" and epoch >= 2:
            break
    profile = plo.profile()
    mine = {"rank": rank, "phase": plo.phase, "optimum_w": plo.optimal_power_limit,
            "limits_w": [p["power_limit_mw"] // 1000 for p in profile["measurements"]],
            "profile_num_gpus": profile["num_gpus"]}
    decisions = [None] * world
    dist.all_gather_object(decisions, mine)
    plo.close()
    if rank == 0:
        same = all(d["optimum_w"] == decisions[0]["optimum_w"] and
                   d["limits_w"] == decisions[0]["limits_w"] for d in decisions)
        result = {"decisions": decisions, "same_decision": same, "epochs": epochs,
                  "devices": [torch.cuda.get_device_name(i) for i in range(world)]}
        with open(os.path.join(args.out, "ddp.json"), "w") as f:
            json.dump(result, f, indent=2)
        print(json.dumps(decisions))
        print("same decision on every rank:", same)
        both_measured = all(len(e["gpu_energy_j"]) == world and
                            all(v > 0 for v in e["gpu_energy_j"].values()) for e in epochs)
        print("windows measured every GPU:", both_measured)
        ok = same and both_measured and decisions[0]["phase"] == "done"
    else:
        ok = True
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
