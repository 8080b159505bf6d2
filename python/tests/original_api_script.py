"""A training script written against the original Zeus package's documented
API only (v0.16 names and arguments); test_original_api.py runs it
unchanged."""

import torch

from zeus.device import get_gpus
from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer, MaxSlowdownConstraint

gpus = get_gpus()
print("GPUs:", len(gpus))

monitor = ZeusMonitor(gpu_indices=[0, 1])
plo = GlobalPowerLimitOptimizer(monitor, MaxSlowdownConstraint(factor=10.0), wait_steps=1,
                                warmup_steps=2, profile_steps=5, pl_step=150)

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(100)]

monitor.begin_window("training")
for epoch in range(3):
    plo.on_epoch_begin()
    monitor.begin_window("epoch")
    for x, y in data:
        plo.on_step_begin()
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        plo.on_step_end()
    measurement = monitor.end_window("epoch")
    plo.on_epoch_end()
    print(f"Epoch {epoch}: {measurement.time:.3f} s, {measurement.total_energy:.1f} J, "
          f"GPU energy {measurement.gpu_energy}")
total = monitor.end_window("training")
print(f"Training: {total.time:.3f} s, {total.total_energy:.1f} J")
