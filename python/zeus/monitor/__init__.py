"""Time and energy measurement: ZeusMonitor (windows) and PowerMonitor
(power timelines)."""

from zeus.monitor.energy import Measurement, ZeusMonitor
from zeus.monitor.power import PowerDomain, PowerMonitor

__all__ = ["Measurement", "ZeusMonitor", "PowerDomain", "PowerMonitor"]
