"""Multiprocessing pitfalls (the original's `zeus.utils.multiprocessing`).

`warn_if_global_in_subprocess(class_name="ZeusMonitor")` issues a
RuntimeWarning when called, directly or not, from the module-level code of
the main module as a "spawn" (or "forkserver") child re-imports it (under the
name `__mp_main__`): a monitor built there is built again in every child,
and so is whatever else the module builds (e.g. a model). Anywhere else,
including the child's target function, it does nothing.
"""

from __future__ import annotations

import sys
import warnings


def _reimported_main_is_running() -> bool:
    # A frame executing the top level of the re-imported main module. (The
    # child's parent_process() is not yet set while that import runs.)
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            return True
        frame = frame.f_back
    return False


def warn_if_global_in_subprocess(class_name: str = "ZeusMonitor") -> None:
    """Warns when `class_name` is being built at import time in a spawned child."""
    if "__mp_main__" in sys.modules and _reimported_main_is_running():
        warnings.warn(
            f"{class_name} was created while a spawned subprocess imported the main module "
            "(a module-level global?): it is created again in every such child. Build it "
            'under `if __name__ == "__main__":` or inside a function.',
            RuntimeWarning, stacklevel=3)
