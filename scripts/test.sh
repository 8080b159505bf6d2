#!/usr/bin/env bash
# Configures, builds (warnings as errors) and runs every test through ctest.
# Usage: [ZEUS_TEST_OPT=FLAGS] scripts/test.sh [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-test}"
jobs="$(nproc)"

# -Og with line tables (-g1) by default: half the compile time of -O2 (the
# build is most of this script's time, docs/PERFORMANCE.md), and a failing
# test's backtrace still names files and lines. Benchmarks and timings want
# an optimized tree: ZEUS_TEST_OPT="-O2 -g1" scripts/test.sh build-o2.
opt="${ZEUS_TEST_OPT:--Og -g1} -DNDEBUG"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZEUS_WERROR=ON \
  -DZEUS_BUILD_TESTS=ON -DZEUS_BUILD_BENCHMARKS=ON -DZEUS_BUILD_PYTHON=ON -DCMAKE_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$opt"
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600
