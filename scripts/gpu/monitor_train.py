#!/usr/bin/env python3
"""A small PyTorch training loop (MLP on random data) that keeps GPU 0 busy
for --seconds; the workload `zeus monitor` measures in monitor_check.sh.
Prints progress to stderr only (stdout stays free for zeus's report)."""
import argparse
import sys
import time

import torch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("monitor_train: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    device = torch.device("cuda:0")
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 8192), torch.nn.ReLU(),
        torch.nn.Linear(8192, 8192), torch.nn.ReLU(),
        torch.nn.Linear(8192, 4096),
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(512, 4096, device=device)
    y = torch.randn(512, 4096, device=device)
    start = time.monotonic()
    steps = 0
    while time.monotonic() - start < args.seconds:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 200 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    elapsed = time.monotonic() - start
    print(f"monitor_train: {steps} steps in {elapsed:.1f} s, loss {loss.item():.4f}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
