"""A small real PyTorch (CPU) workload shared by the tests: a two-layer MLP
learning a noisy linear rule of its inputs."""

import torch


def make_task(samples=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    w = torch.randn(features, 1, generator=gen)
    y = (x @ w > 0).float()
    return x, y


class Trainer:
    def __init__(self, features=16, seed=0, lr=0.3):
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(torch.nn.Linear(features, 32), torch.nn.ReLU(),
                                         torch.nn.Linear(32, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.loss = torch.nn.BCEWithLogitsLoss()

    def step(self, x, y):
        self.opt.zero_grad()
        loss = self.loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.item()

    def accuracy(self, x, y):
        with torch.no_grad():
            return ((self.model(x) > 0).float() == y).float().mean().item()


def batches(x, y, batch_size):
    for start in range(0, len(x), batch_size):
        yield x[start:start + batch_size], y[start:start + batch_size]
