"""SoCs: get_soc() returns the machine's system-on-chip (Apple Silicon,
NVIDIA Jetson), or raises ZeusSoCInitError when there is none."""

from __future__ import annotations

import threading
from contextlib import suppress

from zeus.device.soc.common import SoC, ZeusSoCInitError
from zeus.device.soc.jetson import Jetson, ZeusJetsonInitError, jetson_is_available
from zeus.device.soc.apple import AppleSilicon, ZeusAppleInitError, apple_silicon_is_available

_soc: SoC | None = None
_lock = threading.Lock()


def get_soc() -> SoC:
    """The SoC, opened once. Raises ZeusSoCInitError when none can be
    opened (on any machine without Apple Silicon or a Jetson)."""
    global _soc
    with _lock:
        if _soc is None:
            if apple_silicon_is_available():
                with suppress(ZeusSoCInitError):
                    _soc = AppleSilicon()
            if _soc is None and jetson_is_available():
                with suppress(ZeusSoCInitError):
                    _soc = Jetson()
            if _soc is None:
                raise ZeusSoCInitError("No observable SoC was found on the current machine.")
        return _soc
