"""`pip install ./python` from a clone: the in-tree PEP 517 backend
(python/zeus_build_backend.py) builds libzeus_c.so with CMake and installs
the py3-none wheel, offline (--no-index), with pip's build isolation on (the
backend needs nothing beyond the standard library).

To keep the suite fast the backend reuses ctest's build tree
(ZEUS_CMAKE_BUILD_DIR, set by python/CMakeLists.txt: target zeus_c is then
up to date); ZEUS_TEST_PIP_FROM_SCRATCH=1 makes it configure and build in a
fresh temporary directory instead, as a user's `pip install ./python` does.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
# Loaded from its file: putting python/ on sys.path would shadow the
# installed zeus package (the source tree has no libzeus_c.so).
_spec = importlib.util.spec_from_file_location(
    "zeus_build_backend", os.path.join(PYTHON_DIR, "zeus_build_backend.py"))
zeus_build_backend = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zeus_build_backend)


def clean_env(**extra):
    """This environment without what would make the installed package
    look elsewhere (source tree on PYTHONPATH, a library override)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ZEUS_C_LIBRARY", "ZEUS_BUILD_DIR", "ZEUS_CMAKE_ARGS",
                        "PIP_NO_BUILD_ISOLATION", "PIP_FIND_LINKS", "PIP_INDEX_URL")}
    env.update(extra)
    return env


def test_pyproject_names_the_in_tree_backend_and_no_requirements():
    text = open(os.path.join(PYTHON_DIR, "pyproject.toml")).read()
    assert re.search(r'^requires = \[\]$', text, re.M)
    assert re.search(r'^build-backend = "zeus_build_backend"$', text, re.M)
    assert re.search(r'^backend-path = \["\."\]$', text, re.M)
    assert zeus_build_backend.get_requires_for_build_wheel() == []


def test_pip_install_from_the_checkout_into_a_fresh_venv(tmp_path):
    extra = {}
    if os.environ.get("ZEUS_TEST_PIP_FROM_SCRATCH") != "1":
        build_dir = os.environ.get("ZEUS_CMAKE_BUILD_DIR")
        if not build_dir:
            pytest.fail("ZEUS_CMAKE_BUILD_DIR must name the CMake build tree (run through "
                        "ctest), or set ZEUS_TEST_PIP_FROM_SCRATCH=1")
        extra["ZEUS_BUILD_DIR"] = build_dir
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--no-index", PYTHON_DIR],
                             env=clean_env(**extra), cwd=tmp_path, capture_output=True,
                             text=True, timeout=3600)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed zeus-" in install.stdout
    # The `zeus` console command runs the bundled tool, services included.
    command = venv / "bin" / "zeus"
    assert command.is_file(), "no zeus console command"
    help_run = subprocess.run([str(command), "serve", "--help"], env=clean_env(),
                              capture_output=True, text=True, timeout=60)
    assert help_run.returncode == 0 and "--db URL" in help_run.stdout, help_run.stderr

    script = (
        "import glob, os, zeus, zeus._lib\n"
        "from zeus.monitor import ZeusMonitor\n"
        "lib = zeus._lib.lib()\n"
        "print('package', os.path.dirname(zeus.__file__))\n"
        "print('library', lib._name)\n"
        "print('wheel', open(glob.glob(os.path.join(os.path.dirname(zeus.__file__), '..',\n"
        "      'zeus-*.dist-info', 'WHEEL'))[0]).read())\n"
        "m = ZeusMonitor()\n"
        "m.begin_window('w')\n"
        "print('gpus', sorted(m.end_window('w').gpu_energy))\n")
    run = subprocess.run([python, "-c", script], env=clean_env(), cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    site = str(venv)
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    assert lines["package"].startswith(site)  # Not the source tree.
    assert lines["library"].startswith(site) and lines["library"].endswith("libzeus_c.so")
    assert "Tag: py3-none-linux_" in run.stdout
    assert lines["gpus"] == "[0, 1]"  # The fake libnvml's GPUs, through the installed library.


def test_a_failed_cmake_step_names_the_command(tmp_path):
    with pytest.raises(RuntimeError) as info:
        zeus_build_backend.build_wheel(
            str(tmp_path / "wheels"),
            config_settings={"build-dir": str(tmp_path / "build"),
                             "cmake-args": "-DCMAKE_CXX_COMPILER=/nonexistent/c++ "
                                           "-DCMAKE_C_COMPILER=/nonexistent/cc"})
    message = str(info.value)
    assert "configuring the C++ build failed" in message
    assert "-DCMAKE_CXX_COMPILER=/nonexistent/c++" in message
    assert not (tmp_path / "wheels").exists() or not os.listdir(tmp_path / "wheels")


def test_build_progress_reads_make_and_ninja_lines():
    progress = zeus_build_backend._Progress()
    try:
        progress.line("[ 40%] Building CXX object src/util/x.cc.o")
        assert progress.percent == 40
        progress.line("-- Configuring done")
        assert progress.percent == 40
        progress.line("[12/16] Building CXX object y.cc.o")
        assert progress.percent == 75
    finally:
        progress.close()


def test_the_build_uses_ninja_when_installed_in_one_command_at_o2(tmp_path, monkeypatch):
    build = str(tmp_path / "build")
    monkeypatch.setattr(zeus_build_backend.shutil, "which",
                        lambda name: "/usr/bin/ninja" if name == "ninja" else None)
    command = zeus_build_backend.configure_command(build)
    assert command[command.index("-G") + 1] == "Ninja"
    assert "-DCMAKE_BUILD_TYPE=Release" in command
    assert "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" in command
    # The caller's generator and build type win.
    command = zeus_build_backend.configure_command(build, ["-GUnix Makefiles",
                                                           "-DCMAKE_BUILD_TYPE=Debug"])
    assert "-G" not in command and "-DCMAKE_BUILD_TYPE=Release" not in command
    assert command[-2:] == ["-GUnix Makefiles", "-DCMAKE_BUILD_TYPE=Debug"]
    monkeypatch.setattr(zeus_build_backend.shutil, "which", lambda name: None)
    assert "-G" not in zeus_build_backend.configure_command(build)

    # Ninja counts both targets together: one command. Make: one per target.
    os.makedirs(build)
    with open(os.path.join(build, "CMakeCache.txt"), "w") as cache:
        cache.write("CMAKE_GENERATOR:INTERNAL=Ninja\n")
    assert zeus_build_backend.build_steps(build) == [
        (("zeus", "zeus_c"), "the zeus tool and libzeus_c.so")]
    with open(os.path.join(build, "CMakeCache.txt"), "w") as cache:
        cache.write("CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n")
    assert [targets for targets, _ in zeus_build_backend.build_steps(build)] == [
        ("zeus",), ("zeus_c",)]
