"""The base exceptions of the device layer (zeus.device)."""

from __future__ import annotations

from zeus.exception import ZeusBaseError


class ZeusBaseGPUError(ZeusBaseError):
    """Base of every GPU error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusBaseCPUError(ZeusBaseError):
    """Base of every CPU error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusBaseSoCError(ZeusBaseError):
    """Base of every SoC error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ZeusdError(ZeusBaseGPUError):
    """The Zeus daemon (ZEUSD_SOCK_PATH) refused a request or cannot be reached."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
