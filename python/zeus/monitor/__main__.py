"""`python -m zeus.monitor energy|power`: measure from the command line.

  energy [--gpu-indices I ...]    one window from start until Ctrl-C; prints
                                  the Measurement.
  power [--gpu-indices I ...] [--update-period S] [--power-domain D]
                                  prints each GPU's power in domain D every S
                                  seconds; on Ctrl-C, the time and, once, the
                                  energy of domain D (its power's integral).
"""

import argparse
import sys
import time
from datetime import datetime
from typing import Dict, List, Optional

from zeus.monitor.energy import ZeusMonitor
from zeus.monitor.power import PowerMonitor

_DOMAINS = ("device_instant", "device_average", "memory_average")


def _by_name(values: Dict[int, float]) -> Dict[str, float]:
    return {f"GPU{index}": value for index, value in values.items()}


def energy(gpu_indices: Optional[List[int]] = None) -> None:
    """Measures the time and energy of the GPUs from now until Ctrl-C."""
    monitor = ZeusMonitor(gpu_indices)
    monitor.begin_window("zeus.monitor.energy")
    try:
        # Inside the try: a Ctrl-C right after the line still ends the window.
        print("Measuring; press Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print(monitor.end_window("zeus.monitor.energy"), flush=True)


def power(gpu_indices: Optional[List[int]] = None, update_period: float = 1.0,
          power_domain: str = "device_instant") -> None:
    """Prints the GPUs' power in `power_domain` every `update_period` seconds
    until Ctrl-C, then the total time and energy."""
    if power_domain not in _DOMAINS:
        raise ValueError(f"power_domain must be one of {_DOMAINS}, got {power_domain!r}")
    monitor = PowerMonitor(gpu_indices=gpu_indices, update_period=update_period,
                           power_domains=[power_domain])
    start_time = time.time()
    try:
        while True:
            time.sleep(monitor.update_period)
            readings = monitor.get_power(power_domain=power_domain)
            if readings is not None:
                print(datetime.now(), power_domain, _by_name(readings), flush=True)
    except KeyboardInterrupt:
        end_time = time.time()
        print("\nTotal time (s):", end_time - start_time, flush=True)
        total = monitor.get_energy(start_time, end_time, power_domain=power_domain)
        if total is not None:
            print("Total energy (J):", _by_name(total), flush=True)
    finally:
        monitor.stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zeus.monitor",
                                     description="Measure GPU energy and power.")
    sub = parser.add_subparsers(dest="subcommand", required=True)
    energy_parser = sub.add_parser("energy", help="time and energy of one window until Ctrl-C")
    energy_parser.add_argument("--gpu-indices", nargs="+", type=int,
                               help="CUDA indices of the GPUs (default: every GPU)")
    power_parser = sub.add_parser("power", help="print power periodically; energy on Ctrl-C")
    power_parser.add_argument("--gpu-indices", nargs="+", type=int,
                              help="CUDA indices of the GPUs (default: every GPU)")
    power_parser.add_argument("--update-period", type=float, default=1.0,
                              help="seconds between power readings (default 1.0)")
    power_parser.add_argument("--power-domain", choices=_DOMAINS, default="device_instant",
                              help="which power to read (default device_instant; GPUs without "
                                   "instant power: device_average)")
    args = parser.parse_args(argv)
    if args.subcommand == "energy":
        energy(args.gpu_indices)
    else:
        if args.update_period <= 0:
            parser.error(f"--update-period must be positive, got {args.update_period}")
        power(args.gpu_indices, args.update_period, args.power_domain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
