"""Learning-rate scaling rules for a changed batch size (the original's
`zeus.utils.lr_scaler`): built from the batch size `bs` and learning rate
`lr` a run was tuned at, `compute_lr(new_bs)` returns the learning rate for
`new_bs`. Both raise ValueError for a batch size that is not positive."""

import math
from dataclasses import dataclass


def _check(bs: int, new_bs: int) -> None:
    if bs <= 0:
        raise ValueError(f"lr_scaler: the initial batch size bs must be positive, got {bs}")
    if new_bs <= 0:
        raise ValueError(f"lr_scaler: new_bs must be positive, got {new_bs}")


@dataclass
class SquareRootScaler:
    """lr * sqrt(new_bs / bs)."""

    bs: int
    lr: float

    def compute_lr(self, new_bs: int) -> float:
        _check(self.bs, new_bs)
        return self.lr * math.sqrt(new_bs / self.bs)


@dataclass
class LinearScaler:
    """lr * new_bs / bs."""

    bs: int
    lr: float

    def compute_lr(self, new_bs: int) -> float:
        _check(self.bs, new_bs)
        return self.lr * new_bs / self.bs
