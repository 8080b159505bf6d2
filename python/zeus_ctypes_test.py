"""Tests of zeus_ctypes.py through libzeus_c.so over the fake libnvml.

Run by ctest (python/CMakeLists.txt) with ZEUS_C_LIBRARY, ZEUS_NVML_LIBRARY
(the fake: 2 GPUs, limits 100-700 W) and ZEUS_DRY_RUN=1 set.
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zeus_ctypes as z  # noqa: E402

OPTIONS = dict(wait_steps=2, warmup_steps=2, measure_steps=3, min_measure_time_s=0.0,
               power_limit_step_w=100, restore_on_signal=False)


def run_until_done(plo, epoch_steps=1000, max_epochs=50):
    epochs = 0
    while plo.phase != "done" and epochs < max_epochs:
        for _ in range(epoch_steps):
            plo.on_step_begin()
        plo.on_epoch_end()
        epochs += 1
    return epochs


class ZeusCtypesTest(unittest.TestCase):
    def test_profiles_every_limit_and_calls_the_callbacks(self):
        calls = {"sync": 0, "all_reduce": 0}

        def sync():
            calls["sync"] += 1

        def all_reduce(energy_j, time_s, num_gpus):
            calls["all_reduce"] += 1
            return energy_j, time_s, num_gpus

        with z.PowerLimitOptimizer(sync=sync, all_reduce=all_reduce, **OPTIONS) as plo:
            self.assertEqual(plo.phase, "waiting")
            self.assertEqual(plo.current_limit_w, 700)
            run_until_done(plo)
            self.assertEqual(plo.phase, "done")
            limits = [m["power_limit_mw"] // 1000 for m in plo.profile()["measurements"]]
            self.assertEqual(limits, [700, 600, 500, 400, 300, 200, 100])
            self.assertIn(plo.optimum_w, limits)
            self.assertEqual(plo.profile()["num_gpus"], 2)
        self.assertGreaterEqual(calls["sync"], 2 * 7)
        self.assertEqual(calls["all_reduce"], 2 * 7)

    def test_saved_profile_pins_the_optimum_at_creation(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "profile.json")
            with z.PowerLimitOptimizer(profile_path=path, **OPTIONS) as plo:
                run_until_done(plo)
                optimum = plo.optimum_w
            self.assertTrue(os.path.exists(path))
            with z.PowerLimitOptimizer(profile_path=path, **OPTIONS) as plo:
                self.assertEqual(plo.phase, "done")
                self.assertEqual(plo.optimum_w, optimum)

    def test_errors_raise_one_class_per_code(self):
        with self.assertRaises(z.InvalidArgumentError) as e:
            z.PowerLimitOptimizer(gpu_indices=[5])
        self.assertIn("gpu_indices: no GPU 5", str(e.exception))
        with self.assertRaises(z.InvalidArgumentError):
            z.PowerLimitOptimizer(measure_steps=0)
        with self.assertRaises(z.InvalidArgumentError) as e:
            z.PowerLimitOptimizer(no_such_option=1)
        self.assertIn("no_such_option", str(e.exception))
        # The options JSON is read with the project's bounds (depth, NaN).
        deep = []
        for _ in range(200):
            deep = [deep]
        with self.assertRaises(z.InvalidArgumentError) as e:
            z.PowerLimitOptimizer(gpu_indices=deep)
        self.assertIn("nesting deeper than 64 levels", str(e.exception))
        with self.assertRaises(z.InvalidArgumentError) as e:
            z.PowerLimitOptimizer(eta=float("nan"))
        self.assertIn("not valid JSON", str(e.exception))

    def test_a_failing_callback_raises_its_own_exception(self):
        def sync():
            raise KeyError("sync broke")

        with z.PowerLimitOptimizer(sync=sync, **OPTIONS) as plo:
            with self.assertRaises(KeyError):
                run_until_done(plo)


if __name__ == "__main__":
    unittest.main()
