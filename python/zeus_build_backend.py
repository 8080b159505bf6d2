"""The PEP 517 build backend of `pip install ./python` (python/pyproject.toml).

Builds libzeus_c.so and the `zeus` tool with CMake (targets `zeus_c` and
`zeus`, a unity Release build at -O2, with Ninja when it is installed, in a
fresh temporary build directory unless one is given) from the checkout this
file sits in, then packs them with the `zeus`
package into the same py3-none wheel as build_wheel.py (which it runs); the
wheel's `zeus` console command runs the tool. pip shows a backend's output
only with -v, so the build's progress ("zeus: building the zeus tool and
libzeus_c.so: 40 %, 61 s") is also written to the terminal (/dev/tty) when there is one.
Standard library only, no build requirements: it works offline, with or
without pip's build isolation, on a machine prepared by
scripts/install-deps.sh --runtime (CMake, a C++17 compiler and the Debian
libraries the core links).

Settings (pip: `--config-settings KEY=VALUE`, or the environment):
  build-dir  / ZEUS_BUILD_DIR    an existing or new CMake build directory to
                                 use and keep (configured only when it has no
                                 CMakeCache.txt); default a temporary one,
                                 removed afterwards.
  cmake-args / ZEUS_CMAKE_ARGS   extra configure arguments (shell words),
                                 e.g. "-DZEUS_HEADER_ONLY_LOGGING=ON"; a -G
                                 or -DCMAKE_BUILD_TYPE here replaces the
                                 default generator or build type.
  jobs       / ZEUS_BUILD_JOBS   parallel compile jobs (default: CPU count).
Failures raise RuntimeError naming the failed command (its output is on
stderr: `pip install -v` shows it).

No sdist: the package needs the whole checkout (the C++ core), so it is
installed from a clone; build_sdist is deliberately absent.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

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


class _Progress:
    """Build progress on the terminal, when the process has one: the
    percentage of the build and the time so far, redrawn every 2 s."""

    # "[ 40%] Building ..." (Makefiles) or "[12/30] Building ..." (Ninja).
    _LINE = re.compile(r"^\[\s*(?:(\d+)%|(\d+)/(\d+))\]")

    def __init__(self, what="the C++ core"):
        self.what = what
        try:
            self.tty = open("/dev/tty", "w")
        except OSError:
            self.tty = None
        self.start = time.monotonic()
        self.percent = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.ticker = None
        if self.tty is not None:
            self.ticker = threading.Thread(target=self._tick, daemon=True)
            self.ticker.start()

    def _draw(self):
        with self.lock:
            if self.tty is None:
                return
            try:
                self.tty.write(f"\rzeus: building {self.what}: {self.percent:3d} %, "
                               f"{time.monotonic() - self.start:4.0f} s ")
                self.tty.flush()
            except OSError:
                self.tty = None

    def _tick(self):
        while not self.done.wait(2.0):
            self._draw()

    def line(self, line):
        match = self._LINE.match(line)
        if match is None:
            return
        if match.group(1) is not None:
            percent = int(match.group(1))
        else:
            percent = 100 * int(match.group(2)) // max(1, int(match.group(3)))
        if percent != self.percent:
            self.percent = percent
            self._draw()

    def close(self):
        self.done.set()
        if self.ticker is not None:
            self.ticker.join()
        self._draw()
        with self.lock:
            if self.tty is not None:
                self.tty.write("\n")
                self.tty.close()
                self.tty = None


def _run_with_progress(command, what, progress):
    """_run, passing each output line to `progress` as well as to stderr."""
    print("zeus_build_backend: " + " ".join(shlex.quote(c) for c in command), file=sys.stderr)
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace")
    except FileNotFoundError as e:
        raise RuntimeError(f"zeus_build_backend: {what}: {command[0]} not found "
                           "(scripts/install-deps.sh --runtime installs the build tools)") from e
    for line in process.stdout:
        sys.stderr.write(line)
        progress.line(line)
    if process.wait() != 0:
        raise RuntimeError(f"zeus_build_backend: {what} failed (exit {process.returncode}): "
                           + " ".join(shlex.quote(c) for c in command))


def configure_command(build_dir, cmake_args=()):
    """The CMake configure command of a fresh build directory: a unity build
    with Ninja when it is installed (it compiles every target's files as soon
    as a core is free, where Make finishes one library before starting the
    next) and, unless `cmake_args` name a build type, Release at -O2 (the
    optimisation level of Debian's packages and of the test build; -O3
    compiles about 15 % longer for code that is not compute-bound)."""
    command = ["cmake", "-S", SOURCE_ROOT, "-B", build_dir, "-DZEUS_BUILD_PYTHON=ON",
               "-DCMAKE_UNITY_BUILD=ON", f"-DZEUS_PYTHON_EXECUTABLE={sys.executable}"]
    if not any(a.startswith("-G") for a in cmake_args) and shutil.which("ninja"):
        command += ["-G", "Ninja"]
    if not any(a.startswith("-DCMAKE_BUILD_TYPE") for a in cmake_args):
        command += ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
                    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG"]
    return command + list(cmake_args)


def build_steps(build_dir):
    """(targets, what) per build command for the configured `build_dir`: one
    command for both targets with Ninja, whose [done/total] progress counts
    them together; with Make one per target, because its percentages restart
    with each target (the tool first: it builds most of what the library
    needs)."""
    generator = None
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as cache:
            for line in cache:
                if line.startswith("CMAKE_GENERATOR:INTERNAL="):
                    generator = line.split("=", 1)[1].strip()
    except OSError:
        pass
    if generator == "Ninja":
        return [(("zeus", "zeus_c"), "the zeus tool and libzeus_c.so")]
    return [(("zeus",), "the zeus tool (1/2)"), (("zeus_c",), "libzeus_c.so (2/2)")]


def build_library(build_dir, cmake_args=(), jobs=None):
    """Configures (when `build_dir` has no CMakeCache.txt) and builds targets
    zeus_c and zeus; returns the paths of libzeus_c.so and of the tool."""
    if not os.path.isfile(os.path.join(SOURCE_ROOT, "CMakeLists.txt")):
        raise RuntimeError(f"zeus_build_backend: {SOURCE_ROOT} is not a Zeus checkout (no "
                           "CMakeLists.txt): install from a clone of the repository")
    if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        _run(configure_command(build_dir, cmake_args), "configuring the C++ build")
    for targets, what in build_steps(build_dir):
        progress = _Progress(what)
        try:
            _run_with_progress(["cmake", "--build", build_dir, "--target", *targets, "-j",
                                str(jobs or os.cpu_count() or 1)], "building " + what, progress)
        finally:
            progress.close()
    library = os.path.join(build_dir, "python", "libzeus_c.so")
    cli = os.path.join(build_dir, "tools", "zeus")
    for path in (library, cli):
        if not os.path.isfile(path):
            raise RuntimeError(f"zeus_build_backend: the build left no {path}")
    return library, cli


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
        library, cli = build_library(os.path.abspath(build_dir), cmake_args, jobs)
        os.makedirs(wheel_directory, exist_ok=True)
        out = subprocess.run([sys.executable, os.path.join(HERE, "build_wheel.py"), "--library",
                              library, "--cli", cli, "--out", os.path.abspath(wheel_directory)],
                             stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        if out.returncode != 0:
            raise RuntimeError("zeus_build_backend: build_wheel.py failed "
                               f"(exit {out.returncode})")
        return os.path.basename(out.stdout.strip().splitlines()[-1])
    finally:
        if temporary:
            shutil.rmtree(build_dir, ignore_errors=True)
