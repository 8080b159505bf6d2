"""Zeus: GPU energy measurement and optimisation for deep-learning training.

A drop-in for the Python API of the original Zeus package (v0.16) on Zeus's
C++ core (libzeus_c.so, bundled in this package):

    from zeus.monitor import ZeusMonitor
    from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer
    from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
    from zeus.device import get_gpus

With ZEUS_DRY_RUN=1 power limits are logged, never set.
"""

__version__ = "0.1.0"  # Keep equal to project(zeus VERSION) in CMakeLists.txt.
