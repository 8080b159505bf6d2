"""Talking to the training framework (PyTorch, JAX or CuPy) without importing
it unless the caller uses it (the original's `zeus.utils.framework`).

`*_is_available` import the framework once (cached), store the module in
MODULE_CACHE and say whether it is importable; `ensure_available=True` raises
RuntimeError instead of returning False, and (as in the original)
`ensure_cuda=True` raises RuntimeError when the framework imports but has no
CUDA device. `is_distributed`, `get_rank`, `get_world_size` and `all_reduce`
never import torch: a program that has not imported torch.distributed is not
distributed (rank 0 of 1).
"""

import functools
import sys

# Framework name ("torch", "jax", "cupy") -> its module, once imported here.
MODULE_CACHE = {}


@functools.lru_cache(maxsize=None)
def torch_is_available(ensure_available=False, ensure_cuda=True):
    """True when torch imports (RuntimeError: see module doc)."""
    try:
        import torch
    except ImportError as e:
        if ensure_available:
            raise RuntimeError("zeus: PyTorch is not importable") from e
        return False
    MODULE_CACHE["torch"] = torch
    if ensure_cuda and not torch.cuda.is_available():
        raise RuntimeError("zeus: PyTorch is available but has no CUDA support")
    return True


@functools.lru_cache(maxsize=None)
def jax_is_available(ensure_available=False, ensure_cuda=True):
    """True when jax imports (RuntimeError: see module doc)."""
    try:
        import jax
    except ImportError as e:
        if ensure_available:
            raise RuntimeError("zeus: JAX is not importable") from e
        return False
    MODULE_CACHE["jax"] = jax
    if ensure_cuda:
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        if not gpus:
            raise RuntimeError("zeus: JAX is available but has no CUDA support")
    return True


@functools.lru_cache(maxsize=None)
def cupy_is_available(ensure_available=False):
    """True when cupy imports (RuntimeError with ensure_available otherwise)."""
    try:
        import cupy
    except ImportError as e:
        if ensure_available:
            raise RuntimeError("zeus: CuPy is not importable") from e
        return False
    MODULE_CACHE["cupy"] = cupy
    return True


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
    a trivial computation on each listed GPU and the first CPU device; with
    "cupy", synchronises each device through cupy.cuda. RuntimeError when the
    named framework is not importable (jax, cupy); ValueError for another name.
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
        jax_is_available(ensure_available=True, ensure_cuda=False)
        jax = MODULE_CACHE["jax"]
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        futures = [jax.device_put(0.0, device=gpus[i]) + 0 for i in gpu_devices if i < len(gpus)]
        futures.append(jax.device_put(0.0, device=jax.devices("cpu")[0]) + 0)
        jax.block_until_ready(futures)
        return
    if sync_with == "cupy":
        cupy_is_available(ensure_available=True)
        cupy = MODULE_CACHE["cupy"]
        for index in gpu_devices:
            cupy.cuda.Device(index).synchronize()
        return
    raise ValueError(
        f'zeus: sync_execution_with must be "torch", "jax" or "cupy", got {sync_with!r}')


def all_reduce(object, operation):  # noqa: A002 (the original's name)
    """Sums ("sum") or maxes ("max") a list of floats across the ranks of the
    initialised torch.distributed process group; the values unchanged when
    not distributed."""
    values = object
    if operation not in ("sum", "max"):
        raise ValueError(f'zeus: all_reduce operation must be "sum" or "max", got {operation!r}')
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


def get_rank():
    """This process's rank in the initialised torch.distributed group; 0
    when not distributed."""
    if is_distributed():
        return sys.modules["torch.distributed"].get_rank()
    return 0


def get_world_size():
    """The number of ranks of the initialised torch.distributed group; 1
    when not distributed."""
    if is_distributed():
        return sys.modules["torch.distributed"].get_world_size()
    return 1
