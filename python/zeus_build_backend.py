"""The PEP 517 build backend of `pip install ./python` (python/pyproject.toml).

Builds libzeus_c.so with CMake (only the `zeus_c` target, in a fresh
temporary build directory unless one is given) from the checkout this file
sits in, then packs it with the `zeus` package into the same py3-none wheel
as build_wheel.py (which it runs). Standard library only, no build
requirements: it works offline, with or without pip's build isolation, on a
machine prepared by scripts/install-deps.sh (CMake, a C++17 compiler and the
Debian libraries the core links).

Settings (pip: `--config-settings KEY=VALUE`, or the environment):
  build-dir  / ZEUS_BUILD_DIR    an existing or new CMake build directory to
                                 use and keep (configured only when it has no
                                 CMakeCache.txt); default a temporary one,
                                 removed afterwards.
  cmake-args / ZEUS_CMAKE_ARGS   extra configure arguments (shell words),
                                 e.g. "-DZEUS_HEADER_ONLY_LOGGING=ON".
  jobs       / ZEUS_BUILD_JOBS   parallel compile jobs (default: CPU count).
Failures raise RuntimeError naming the failed command (its output is on
stderr: `pip install -v` shows it).

No sdist: the package needs the whole checkout (the C++ core), so it is
installed from a clone; build_sdist is deliberately absent.
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(HERE)


def _setting(config_settings, key, env):
    value = (config_settings or {}).get(key)
    if value is None:
        value = os.environ.get(env)
    return value


def _run(command, what):
    print("zeus_build_backend: " + " ".join(shlex.quote(c) for c in command), file=sys.stderr)
    try:
        # Output to stderr: stdout of a backend hook is not the frontend's.
        result = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr)
    except FileNotFoundError as e:
        raise RuntimeError(f"zeus_build_backend: {what}: {command[0]} not found "
                           "(scripts/install-deps.sh installs the build tools)") from e
    if result.returncode != 0:
        raise RuntimeError(f"zeus_build_backend: {what} failed (exit {result.returncode}): "
                           + " ".join(shlex.quote(c) for c in command))


def build_library(build_dir, cmake_args=(), jobs=None):
    """Configures (when `build_dir` has no CMakeCache.txt) and builds target
    zeus_c; returns the path of libzeus_c.so."""
    if not os.path.isfile(os.path.join(SOURCE_ROOT, "CMakeLists.txt")):
        raise RuntimeError(f"zeus_build_backend: {SOURCE_ROOT} is not a Zeus checkout (no "
                           "CMakeLists.txt): install from a clone of the repository")
    if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        _run(["cmake", "-S", SOURCE_ROOT, "-B", build_dir, "-DZEUS_BUILD_PYTHON=ON",
              f"-DZEUS_PYTHON_EXECUTABLE={sys.executable}"] + list(cmake_args),
             "configuring the C++ build")
    _run(["cmake", "--build", build_dir, "--target", "zeus_c", "-j",
          str(jobs or os.cpu_count() or 1)], "building libzeus_c.so")
    library = os.path.join(build_dir, "python", "libzeus_c.so")
    if not os.path.isfile(library):
        raise RuntimeError(f"zeus_build_backend: the build left no {library}")
    return library


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 517: builds the wheel into `wheel_directory`; returns its file name."""
    build_dir = _setting(config_settings, "build-dir", "ZEUS_BUILD_DIR")
    cmake_args = shlex.split(_setting(config_settings, "cmake-args", "ZEUS_CMAKE_ARGS") or "")
    jobs = _setting(config_settings, "jobs", "ZEUS_BUILD_JOBS")
    temporary = build_dir is None
    if temporary:
        build_dir = tempfile.mkdtemp(prefix="zeus-build-")
    try:
        library = build_library(os.path.abspath(build_dir), cmake_args, jobs)
        os.makedirs(wheel_directory, exist_ok=True)
        out = subprocess.run([sys.executable, os.path.join(HERE, "build_wheel.py"), "--library",
                              library, "--out", os.path.abspath(wheel_directory)],
                             stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        if out.returncode != 0:
            raise RuntimeError("zeus_build_backend: build_wheel.py failed "
                               f"(exit {out.returncode})")
        return os.path.basename(out.stdout.strip().splitlines()[-1])
    finally:
        if temporary:
            shutil.rmtree(build_dir, ignore_errors=True)
