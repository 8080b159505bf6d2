"""Zeus: GPU energy measurement and optimisation for deep-learning training.

A drop-in for the Python API of the original Zeus package (v0.16) on Zeus's
C++ core (libzeus_c.so, bundled in this package):

    from zeus.monitor import ZeusMonitor
    from zeus.optimizer.power_limit import GlobalPowerLimitOptimizer
    from zeus.optimizer.batch_size import BatchSizeOptimizer, JobSpec
    from zeus.device import get_gpus

With ZEUS_DRY_RUN=1 power limits are logged, never set.
"""

# The version of the original Zeus API this package implements, so that
# version-gated user code (`Version(zeus.__version__) >= Version("0.16")`)
# judges it as that API. The wheel's own version is __core_version__.
__version__ = "0.16.0"
# The version of this package and its C++ core: keep equal to ZEUS_VERSION in
# include/zeus/version.h (build_wheel.py checks).
__core_version__ = "0.1.0"
