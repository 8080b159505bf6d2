"""Time, energy, power and temperature measurement: ZeusMonitor (windows),
PowerMonitor (power timelines per domain) and TemperatureMonitor."""

from zeus.monitor.energy import Measurement, MeasurementState, ZeusMonitor
from zeus.monitor.power import PowerDomain, PowerMonitor
from zeus.monitor.temperature import TemperatureMonitor

__all__ = ["Measurement", "MeasurementState", "ZeusMonitor", "PowerDomain", "PowerMonitor",
           "TemperatureMonitor"]
