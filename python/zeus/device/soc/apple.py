"""Apple Silicon (macOS only, through the optional zeus_apple_silicon
package). This package runs on Linux: apple_silicon_is_available() is False
and AppleSilicon() raises ZeusAppleInitError."""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from typing import List, Optional

from zeus.device.soc.common import SoC, SoCMeasurement, ZeusSoCInitError


class ZeusAppleInitError(ZeusSoCInitError):
    """Apple Silicon cannot be measured here."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def apple_silicon_is_available() -> bool:
    """Whether this is macOS with the zeus_apple_silicon package."""
    if sys.platform != "darwin":
        return False
    try:
        import zeus_apple_silicon  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class AppleSiliconMeasurement(SoCMeasurement):
    """Energy of Apple Silicon's parts, in mJ (None: not measured)."""

    cpu_total_mj: Optional[int] = None
    efficiency_cores_mj: Optional[List[int]] = None
    performance_cores_mj: Optional[List[int]] = None
    efficiency_cluster_mj: Optional[List[int]] = None
    performance_cluster_mj: Optional[List[int]] = None
    efficiency_core_manager_mj: Optional[int] = None
    performance_core_manager_mj: Optional[int] = None
    dram_mj: Optional[int] = None
    gpu_mj: Optional[int] = None
    gpu_sram_mj: Optional[int] = None
    ane_mj: Optional[int] = None

    def __sub__(self, other: "AppleSiliconMeasurement") -> "AppleSiliconMeasurement":
        """Field-wise difference (lists element-wise); a field None on both
        sides stays None. TypeError for another type; ValueError naming the
        field when one side lacks it or the lists differ in length."""
        if not isinstance(other, type(self)):
            raise TypeError(
                "Subtraction is only supported between AppleSiliconMeasurement instances.")
        result = type(self)()
        for field in fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if mine is None and theirs is None:
                continue
            inconsistent = ValueError(
                f"Inconsistent field between two AppleSiliconMeasurement objects: {field.name}")
            if type(mine) is not type(theirs):
                raise inconsistent
            if isinstance(mine, list):
                if len(mine) != len(theirs):
                    raise inconsistent
                setattr(result, field.name, [a - b for a, b in zip(mine, theirs)])
            else:
                setattr(result, field.name, mine - theirs)
        return result

    def zero_all_fields(self) -> None:
        """Numbers become 0, lists empty, the rest None (as the original)."""
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, list):
                setattr(self, field.name, [])
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(self, field.name, 0)
            else:
                setattr(self, field.name, None)

    @classmethod
    def from_metrics(cls, metrics) -> "AppleSiliconMeasurement":
        """From a zeus_apple_silicon.AppleEnergyMetrics (same field names)."""
        return cls(**{f.name: getattr(metrics, f.name, None) for f in fields(cls)})


class AppleSilicon(SoC):
    """Apple Silicon: not available in this Linux build."""

    def __init__(self) -> None:
        self.available_metrics: set[str] = set()
        raise ZeusAppleInitError(
            "Apple Silicon energy needs macOS and the zeus_apple_silicon package; this is "
            f"{sys.platform!r}")

    def get_available_metrics(self) -> set[str]:
        return set(self.available_metrics)

    def get_total_energy_consumption(self) -> AppleSiliconMeasurement:
        raise ZeusAppleInitError("Apple Silicon is not available")

    def begin_window(self, key: str, restart: bool = False) -> None:
        raise ZeusAppleInitError("Apple Silicon is not available")

    def end_window(self, key: str) -> AppleSiliconMeasurement:
        raise ZeusAppleInitError("Apple Silicon is not available")
