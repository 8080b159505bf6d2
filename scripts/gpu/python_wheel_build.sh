#!/usr/bin/env bash
# Builds, HERE (the build machine), the portable zeus wheel for the GPU
# machine (CPython >= 3.9 with its own torch, none of our Debian libraries):
# libzeus_c.so with libstdc++/libgcc linked statically and spdlog/fmt
# compiled in (header-only), so it needs nothing but glibc; plus the `zeus`
# binary for `zeus serve` (its libraries copied to build-gpu/lib by
# build_portable.sh). Result: build-gpu/python/dist/zeus-*.whl.
# Usage: scripts/gpu/python_wheel_build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ZEUS_GPU_CMAKE_ARGS="-DZEUS_BUILD_PYTHON=ON -DZEUS_HEADER_ONLY_LOGGING=ON ${ZEUS_GPU_CMAKE_ARGS:-}" \
  ZEUS_GPU_TARGETS="zeus zeus_c zeus_wheel" scripts/gpu/build_portable.sh
lib=build-gpu/python/libzeus_c.so
# Only glibc may remain among its dependencies.
needed="$(readelf -d "$lib" | awk '/NEEDED/{gsub(/[\[\]]/, "", $5); print $5}')"
echo "libzeus_c.so needs: $(echo $needed)"
for n in $needed; do
  case "$n" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) echo "error: libzeus_c.so needs $n: not portable" >&2; exit 1 ;;
  esac
done
# The newest glibc symbol version it uses (the GPU machine's glibc must be at least this).
objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1
# The wheel was packed before strip ran: repack with the stripped library.
rm -f build-gpu/python/dist/*.whl
python3 python/build_wheel.py --library "$lib" --out build-gpu/python/dist
ls -l build-gpu/python/dist/*.whl
