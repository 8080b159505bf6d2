"""Multiprocessing pitfalls (the original's `zeus.utils.multiprocessing`).

`warn_if_global_in_subprocess(class_name="ZeusMonitor")` issues a
RuntimeWarning when called, directly or not, from module-level code of a
process started with the "spawn" method: such a child re-imports the main
module, so a monitor built at module level there is built again in every
child (and so is whatever else the module builds, e.g. a model). Anywhere
else it does nothing.
"""

from __future__ import annotations

import multiprocessing as _mp
import sys
import warnings


def _in_spawned_child() -> bool:
    return _mp.parent_process() is not None and "__mp_main__" in sys.modules


def _module_level_caller() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return True
        frame = frame.f_back
    return False


def warn_if_global_in_subprocess(class_name: str = "ZeusMonitor") -> None:
    """Warns when `class_name` is being built at import time in a spawned child."""
    if _in_spawned_child() and _module_level_caller():
        warnings.warn(
            f"{class_name} was created while a spawned subprocess imported the main module "
            "(a module-level global?): it is created again in every such child. Build it "
            'under `if __name__ == "__main__":` or inside a function.',
            RuntimeWarning, stacklevel=3)
