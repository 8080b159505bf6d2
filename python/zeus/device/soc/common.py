"""The vendor-neutral SoC classes (Apple Silicon, NVIDIA Jetson): one
monolithic device whose energy is read as a SoCMeasurement."""

from __future__ import annotations

import abc

from zeus.device.common import DeprecatedAliasABCMeta, deprecated_alias
from zeus.device.exception import ZeusBaseSoCError


class ZeusSoCInitError(ZeusBaseSoCError):
    """No SoC could be opened."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class SoCMeasurement(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """Energy of a SoC's parts (fields by vendor)."""

    @deprecated_alias("zeroAllFields")
    @abc.abstractmethod
    def zero_all_fields(self) -> None:
        """Sets every measured field to zero."""


class SoC(abc.ABC, metaclass=DeprecatedAliasABCMeta):
    """One SoC with named measurement windows."""

    @deprecated_alias("getAvailableMetrics")
    @abc.abstractmethod
    def get_available_metrics(self) -> set[str]:
        """The field names this SoC measures."""

    @deprecated_alias("getTotalEnergyConsumption")
    @abc.abstractmethod
    def get_total_energy_consumption(self) -> SoCMeasurement:
        """Energy since the SoC object was created."""

    @deprecated_alias("beginWindow")
    @abc.abstractmethod
    def begin_window(self, key: str, restart: bool = False) -> None:
        """Opens window `key`."""

    @deprecated_alias("endWindow")
    @abc.abstractmethod
    def end_window(self, key: str) -> SoCMeasurement:
        """Closes window `key` and returns its energy."""


class EmptySoC(SoC):
    """No SoC: every method raises ValueError."""

    def __init__(self) -> None:
        pass

    @deprecated_alias("getAvailableMetrics")
    def get_available_metrics(self) -> set[str]:
        raise ValueError("No SoC is available.")

    @deprecated_alias("getTotalEnergyConsumption")
    def get_total_energy_consumption(self) -> SoCMeasurement:
        raise ValueError("No SoC is available.")

    @deprecated_alias("beginWindow")
    def begin_window(self, key: str, restart: bool = False) -> None:
        raise ValueError("No SoC is available.")

    @deprecated_alias("endWindow")
    def end_window(self, key: str) -> SoCMeasurement:
        raise ValueError("No SoC is available.")
