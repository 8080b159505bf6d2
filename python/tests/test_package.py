"""The installed package: imported from the wheel, with its bundled library."""

import os

import zeus
import zeus.device
import zeus.monitor
import zeus.optimizer.batch_size
import zeus.optimizer.power_limit
from zeus import _lib


def test_imported_from_the_installed_wheel():
    assert "site-packages" in zeus.__file__, zeus.__file__
    library = os.path.join(os.path.dirname(zeus.__file__), "libzeus_c.so")
    assert os.path.isfile(library)
    assert _lib.lib().zeus_c_api_version() == _lib.ABI_VERSION


def test_get_gpus_lists_the_fake_gpus():
    gpus = zeus.device.get_gpus()
    assert len(gpus) == 2
    assert gpus.getName(1) == "Fake H100 1"
    assert gpus.getPowerManagementLimitConstraints(0) == (100_000, 700_000)
    assert gpus.getPowerManagementLimit(0) == 700_000
    assert gpus.getInstantPowerUsage(1) == 150_000
    assert gpus.supportsGetTotalEnergyConsumption(0)
    first = gpus.getTotalEnergyConsumption(0)
    assert gpus.getTotalEnergyConsumption(0) > first
    gpus.close()


def test_hf_callback_needs_transformers():
    try:
        import transformers  # noqa: F401
    except ImportError:
        import pytest
        # Importable, as in the original; creating one needs transformers.
        callback = zeus.optimizer.power_limit.HFGlobalPowerLimitOptimizer
        with pytest.raises(ImportError, match="transformers"):
            callback(zeus.monitor.ZeusMonitor(gpu_indices=[0]))
    else:
        assert zeus.optimizer.power_limit.HFGlobalPowerLimitOptimizer is not None


def test_version_compares_as_the_api_it_implements():
    """Version-gated user code (>= 0.16) must judge this package as the v0.16
    API; the package's own version is __core_version__."""
    import importlib.metadata
    assert tuple(int(p) for p in zeus.__version__.split(".")[:2]) >= (0, 16)
    assert zeus.__version__ == "0.16.0"
    assert importlib.metadata.version("zeus") == zeus.__core_version__
