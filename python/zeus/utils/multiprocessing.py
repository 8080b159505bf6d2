"""Multiprocessing pitfalls (the original's `zeus.utils.multiprocessing`).

`warn_if_global_in_subprocess(self)`, called by a monitor's constructor with
the instance being built, issues the original's UserWarning ("<ClassName> was
instantiated during module import in a spawned subprocess ...") when the
construction runs, directly or not, in the module-level code of the main
module as a "spawn" (or "forkserver") child re-imports it (under the name
`__mp_main__`): a monitor built there is built again in every child, and so
is whatever else the module builds (e.g. a model). Anywhere else, including
the child's target function, it does nothing. (A class name given as a str
names the class too.)
"""

from __future__ import annotations

import sys
import warnings
from typing import Any


def _reimported_main_is_running() -> bool:
    # A frame executing the top level of the re-imported main module. (The
    # child's parent_process() is not yet set while that import runs.)
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            return True
        frame = frame.f_back
    return False


def warn_if_global_in_subprocess(self: Any = None) -> None:
    """Warns when `self` (the instance being constructed) is built at import
    time in a spawned child. Without `self`, the caller's `self` names the
    class (ZeusMonitor when it has none)."""
    if "__mp_main__" in sys.modules and _reimported_main_is_running():
        if self is None:
            self = sys._getframe(1).f_locals.get("self", "ZeusMonitor")
        class_name = self if isinstance(self, str) else type(self).__name__
        warnings.warn(
            f"{class_name} was instantiated during module import in a spawned subprocess. "
            "This usually means the monitor was created as a global variable, so the child "
            "process re-imported your main module and executed global code again. Move "
            'monitor construction under `if __name__ == "__main__":` or inside a function to '
            "avoid repeated imports and memory issues.",
            UserWarning, stacklevel=3)
