"""A training script written against the original Zeus API only (v0.16
names, arguments and attributes): a custom OptimumSelector, the optimizer's
state machine and its measurements, and the batch-size optimizer's loop with
JobSpec.copy(update=...). test_original_optimizer_scripts.py runs it
unchanged; argv[1] is the batch-size server's URL."""

import sys

import torch

from zeus.monitor import ZeusMonitor
from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
from zeus.optimizer.batch_size.exceptions import ZeusBSOTrainFailError
from zeus.optimizer.power_limit import (Done, GlobalPowerLimitOptimizer, OptimumSelector,
                                        PowerLimitMeasurement, Ready)


class LowestWithinTenPercentEnergy(OptimumSelector):
    """Lowest power limit whose energy is within 10% of the least energy."""

    def select(self, measurements: list[PowerLimitMeasurement]) -> int:
        least = min(m.energy for m in measurements)
        return min(m.power_limit for m in measurements if m.energy <= 1.1 * least)


monitor = ZeusMonitor(gpu_indices=[0, 1])
plo = GlobalPowerLimitOptimizer(monitor, LowestWithinTenPercentEnergy(), wait_steps=1,
                                warmup_steps=2, profile_steps=5, pl_step=100)
assert isinstance(plo.state, Ready)
print("Power limits (W):", [pl // 1000 for pl in plo.power_limits])

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_one_epoch(data):
    plo.on_epoch_begin()
    for x, y in data:
        plo.on_step_begin()
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        plo.on_step_end()
    plo.on_epoch_end()


data = [(torch.randn(32, 8), torch.randn(32, 1)) for _ in range(40)]
for epoch in range(20):
    train_one_epoch(data)
    if isinstance(plo.state, Done):
        break
assert isinstance(plo.state, Done)
print("Optimal power limit (W):", plo.state.optimal_power_limit // 1000)
print("Measured (W):", [m.power_limit for m in plo.measurements])

job = JobSpec(job_id=None, job_id_prefix="original-script", default_batch_size=32,
              batch_sizes=[16, 32, 64], max_epochs=3, target_metric=0.6)
bso = BatchSizeOptimizer(monitor=monitor, server_url=sys.argv[1], job=job)
print("Registered:", bso.job.job_id)
batch_size = bso.get_batch_size()
data = [(torch.randn(batch_size, 8), torch.randn(batch_size, 1)) for _ in range(40)]
bso.on_train_begin()
try:
    for epoch in range(10):
        train_one_epoch(data)
        bso.on_evaluate(0.7 if epoch >= 1 else 0.1)
        if bso.training_finished:
            break
except ZeusBSOTrainFailError as e:
    print("Train failed:", e)
print("Epochs:", bso.cur_epoch, "finished:", bso.training_finished)

# The next recurrence of the job registers with the id the server gave.
next_job = job.copy(update={"job_id": bso.job.job_id})
again = BatchSizeOptimizer(monitor=monitor, server_url=sys.argv[1], job=next_job)
print("Recurrence:", again.job.job_id == bso.job.job_id, again.get_batch_size() in job.batch_sizes)
