#!/usr/bin/env bash
# Configures, builds (warnings as errors) and runs every test through ctest.
# Usage: scripts/test.sh [build-dir]   (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-test}"
jobs="$(nproc)"

# Line tables only (-g1): a failing test's backtrace still names files and
# lines, and the build takes 40 % less time than with full debug info
# (docs/PERFORMANCE.md); build with -g yourself to inspect variables.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZEUS_WERROR=ON \
  -DZEUS_BUILD_TESTS=ON -DZEUS_BUILD_BENCHMARKS=ON -DZEUS_BUILD_PYTHON=ON -DCMAKE_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600
