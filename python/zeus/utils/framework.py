"""Talking to the training framework (PyTorch or JAX) without importing it
unless the caller uses it."""

import functools
import sys


@functools.lru_cache(maxsize=None)
def torch_is_available(ensure_available=False):
    """True when torch can be imported (and, with ensure_available, raises
    otherwise)."""
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        if ensure_available:
            raise RuntimeError("zeus: PyTorch is not importable")
        return False


def jax_is_available(ensure_available=False):
    try:
        import jax  # noqa: F401
        return True
    except ImportError:
        if ensure_available:
            raise RuntimeError("zeus: JAX is not importable")
        return False


_cuda_torch = None  # torch, once a program has initialised CUDA through it.


def _torch_cuda_ready():
    # A program that has not imported torch has no torch work to wait for, and
    # CUDA is never initialised here: only a program already using it syncs.
    # Once CUDA is initialised it stays so: later calls skip the checks.
    global _cuda_torch
    if _cuda_torch is not None:
        return _cuda_torch
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        _cuda_torch = torch
        return torch
    return None


def sync_execution(gpu_devices, sync_with="torch"):
    """Blocks until the queued work on `gpu_devices` (CUDA indices) is done.

    With "torch", synchronises each device through torch.cuda (nothing when
    CUDA is not in use, e.g. CPU training or fake GPUs); with "jax", waits on
    a trivial computation of every device.
    """
    if sync_with == "torch":
        torch = _torch_cuda_ready()
        if torch is None:
            return
        if len(gpu_devices) == 1 and gpu_devices[0] == torch.cuda.current_device():
            torch.cuda.synchronize()  # The current device: no device switch.
            return
        count = torch.cuda.device_count()
        for index in gpu_devices:
            if index < count:
                torch.cuda.synchronize(index)
        return
    if sync_with == "jax":
        import jax
        (jax.device_put(0.0) + 0).block_until_ready()
        return
    raise ValueError(f'zeus: sync_execution_with must be "torch" or "jax", got {sync_with!r}')


def all_reduce(values, operation):
    """Sums ("sum") or maxes ("max") a list of floats across the ranks of the
    initialised torch.distributed process group; the values unchanged when
    not distributed."""
    if not is_distributed():
        return list(values)
    import torch
    import torch.distributed as dist
    device = "cpu"
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    tensor = torch.tensor(list(values), dtype=torch.float64, device=device)
    op = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}[operation]
    dist.all_reduce(tensor, op=op)
    return tensor.cpu().tolist()


def is_distributed():
    """True inside an initialised torch.distributed process group (never
    imports torch: a program that has not imported it is not distributed)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()
