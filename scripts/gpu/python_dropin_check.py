"""A script written only against the original Zeus v0.16 public names, run on
a real GPU with ZEUS_DRY_RUN=1 (read-only: setters log, nothing changes).

It exercises what issue 24 names: zeus.utils.env.get_env, lr_scaler,
zeus.device.get_gpus() getters and setters, a custom OptimumSelector in
GlobalPowerLimitOptimizer on a real torch loop, ZeusMonitor windows,
PowerMonitor with named power domains and TemperatureMonitor. Every check
prints one line "ok <what>" or raises; the last line is "all checks passed".

Usage: ZEUS_DRY_RUN=1 python3 python_dropin_check.py   (about 1-2 minutes)
"""

import os
import time

import torch

from zeus.device import get_gpus
from zeus.monitor import PowerMonitor, ZeusMonitor
from zeus.optimizer.power_limit import (Done, GlobalPowerLimitOptimizer, OptimumSelector,
                                        PowerLimitMeasurement)
from zeus.utils.env import get_env
from zeus.utils.lr_scaler import LinearScaler

assert os.environ.get("ZEUS_DRY_RUN") == "1", "run with ZEUS_DRY_RUN=1 (read-only)"


def ok(what):
    print("ok", what, flush=True)


batch_size = get_env("DROPIN_BATCH_SIZE", int, 128)
lr = LinearScaler(bs=64, lr=0.1).compute_lr(batch_size)
assert abs(lr - 0.2) < 1e-12, lr
ok(f"get_env and LinearScaler (batch {batch_size}, lr {lr})")

gpus = get_gpus()
name = gpus.get_name(0)
limit_before = gpus.get_power_management_limit(0)
lo, hi = gpus.get_power_management_limit_constraints(0)
energy_a = gpus.get_total_energy_consumption(0)
power = gpus.get_instant_power_usage(0)
ok(f"getters: {name}, limit {limit_before} mW in [{lo}, {hi}], power {power} mW, "
   f"energy {energy_a} mJ, temperature {gpus.get_gpu_temperature(0)} C")
gpus.set_power_management_limit(0, lo)
assert gpus.get_power_management_limit(0) == limit_before, "dry run changed the limit"
ok(f"set_power_management_limit({lo}) in dry run left the limit at {limit_before} mW")


class LowestWithinFivePercentEnergy(OptimumSelector):
    """The lowest limit whose energy is within 5 % of the least energy."""

    def __init__(self):
        self.calls = 0

    def select(self, measurements: list[PowerLimitMeasurement]) -> int:
        self.calls += 1
        least = min(m.energy for m in measurements)
        return min(m.power_limit for m in measurements if m.energy <= 1.05 * least)


device = torch.device("cuda:0")
model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)]).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
x = torch.randn(batch_size * 8, 4096, device=device)

monitor = ZeusMonitor(gpu_indices=[0])
selector = LowestWithinFivePercentEnergy()
plo = GlobalPowerLimitOptimizer(monitor, selector, warmup_steps=5, profile_steps=40,
                                pl_step=100)
power_monitor = PowerMonitor(gpu_indices=[0], update_period=0.05,
                             power_domains=["device_instant", "device_average"])
start = time.time()
epochs = 0
while not isinstance(plo.state, Done) and epochs < 40:
    plo.on_epoch_begin()
    monitor.begin_window("epoch")
    for _ in range(200):
        plo.on_step_begin()
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
        plo.on_step_end()
    measurement = monitor.end_window("epoch")
    plo.on_epoch_end()
    epochs += 1
end = time.time()
assert isinstance(plo.state, Done), f"profiling did not end in {epochs} epochs"
assert selector.calls >= 1, "the custom selector was never called"
ok(f"GlobalPowerLimitOptimizer with a custom selector: {len(plo.measurements)} limits measured, "
   f"pinned {plo.state.optimal_power_limit} mW after {epochs} epochs (dry run)")
ok(f"ZeusMonitor window: {measurement.time:.2f} s, {measurement.total_energy:.1f} J")
energy_j = power_monitor.get_energy(start, end)
timelines = power_monitor.get_all_power_timelines()
power_monitor.stop()
ok(f"PowerMonitor: {energy_j} J over {end - start:.1f} s; domains {sorted(timelines)}")
assert gpus.get_power_management_limit(0) == limit_before
ok("power limit unchanged after the run")
print("all checks passed")
