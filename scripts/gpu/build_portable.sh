#!/usr/bin/env bash
# Builds a self-contained Release tree in build-gpu/ for a GPU machine that has
# no build dependencies: libstdc++ is linked statically and every shared
# library outside glibc is copied to build-gpu/lib (use LD_LIBRARY_PATH).
# Runs HERE (the build machine); the GPU machine only executes the result.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build-gpu
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DZEUS_STATIC_RUNTIME=ON \
  -DZEUS_BUILD_TESTS=OFF -DZEUS_BUILD_BENCHMARKS=ON ${ZEUS_GPU_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target ${ZEUS_GPU_TARGETS:-zeus}
mkdir -p "$build/lib"
for bin in "$build"/tools/zeus "$build"/bench/*/*_bench "$build"/python/*.so "$build"/tests/*/*_test; do
  [ -f "$bin" ] || continue
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      # glibc and the C++ runtime: the GPU machine's own are newer, and a copy
      # here would shadow them for Python (torch needs its newer libstdc++).
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
      *) cp -Lu "$lib" "$build/lib/" ;;
    esac
  done
done
strip "$build"/tools/zeus "$build"/bench/*/*_bench "$build"/python/*.so "$build"/tests/*/*_test 2>/dev/null || true
du -sh "$build/lib"
