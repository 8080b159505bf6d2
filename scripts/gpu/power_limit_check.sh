#!/usr/bin/env bash
# Real-GPU check of the power-limit optimizer (issue 4). Read-only: runs with
# ZEUS_DRY_RUN=1, so limits are logged, never set; nvidia-smi's power report
# is saved before and after and compared. Builds nothing: expects
# build-gpu/ from scripts/gpu/build_portable.sh with
#   ZEUS_GPU_CMAKE_ARGS=-DZEUS_BUILD_PYTHON=ON ZEUS_GPU_TARGETS="zeus zeus_c"
# Needs python3 with torch (and nvidia-ml-py) on the GPU machine.
# Usage: OUT=/some/dir scripts/gpu/power_limit_check.sh   (about 2-3 minutes)
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:?set OUT to the output directory}"
build="${ZEUS_GPU_BUILD:-build-gpu}"
mkdir -p "$out"
export ZEUS_DRY_RUN=1
export ZEUS_C_LIBRARY="$PWD/$build/python/libzeus_c.so"
# libzeus_c.so needs libspdlog and libfmt from $build/lib. Expose only those to
# Python (all of $build/lib could shadow libraries torch brings), adding the
# copied libstdc++ only if the machine's own is too old.
libs="$(mktemp -d)"
trap 'rm -rf "$libs"' EXIT
ln -s "$PWD/$build"/lib/libspdlog.so* "$PWD/$build"/lib/libfmt.so* "$libs/" 2>/dev/null
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! python3 -c "import torch, ctypes; ctypes.CDLL('$ZEUS_C_LIBRARY')" 2> "$out/load_probe.txt"; then
  ln -s "$PWD/$build"/lib/libstdc++.so* "$libs/" 2>/dev/null
  python3 -c "import torch, ctypes; ctypes.CDLL('$ZEUS_C_LIBRARY')" 2>> "$out/load_probe.txt" \
    || echo "cannot load $ZEUS_C_LIBRARY (see load_probe.txt)"
fi

nvidia-smi -q -d POWER > "$out/nvidia_smi_power_before.txt" 2>&1
timeout 240 python3 scripts/gpu/power_limit_train.py --out "$out" 2>&1 | tee "$out/power_limit_train.log"
train_rc=${PIPESTATUS[0]}
nvidia-smi -q -d POWER > "$out/nvidia_smi_power_after.txt" 2>&1

# Every limit line must be identical before and after.
grep -i "power limit" "$out/nvidia_smi_power_before.txt" > "$out/limits_before.txt"
grep -i "power limit" "$out/nvidia_smi_power_after.txt" > "$out/limits_after.txt"
if diff "$out/limits_before.txt" "$out/limits_after.txt" > "$out/limits_diff.txt"; then
  smi_verdict="unchanged"
else
  smi_verdict="CHANGED"
fi

{
  echo "train_rc=$train_rc"
  echo "nvidia_smi_power_limits=$smi_verdict"
  if [ -f "$out/power_limit_profile.json" ]; then
    for selector in energy time cost slowdown; do
      echo -n "zeus power-limit select --selector $selector: "
      LD_LIBRARY_PATH="$PWD/$build/lib" "$build/tools/zeus" power-limit select --profile "$out/power_limit_profile.json" \
        --selector "$selector" --json 2>&1
    done
  fi
} | tee "$out/power_limit_check.txt"
[ "$train_rc" -eq 0 ] && [ "$smi_verdict" = "unchanged" ]
