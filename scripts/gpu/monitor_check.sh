#!/usr/bin/env bash
# Real-GPU check of `zeus monitor` (issue 2): a 50 s PyTorch training loop
# under `zeus monitor --json`, against the NVML energy counter read
# independently (pynvml) right before and after. Target: within 1%.
# Read-only (ZEUS_DRY_RUN=1; zeus monitor sets nothing anyway). Builds
# nothing: expects build-gpu/ from scripts/gpu/build_portable.sh.
# Needs python3 with torch and nvidia-ml-py. About 70 s.
# Usage: OUT=/some/dir scripts/gpu/monitor_check.sh
source "$(dirname "$0")/common.sh"
export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
set +e  # From here each step's status is recorded, not fatal.
"$build/tools/zeus" show-env > "$out/show_env.txt" 2>&1
timeout 180 python3 scripts/gpu/monitor_check.py --zeus "$build/tools/zeus" --out "$out" \
  --seconds "${MONITOR_SECONDS:-50}" 2>&1 | tee "$out/monitor_check.log"
exit "${PIPESTATUS[0]}"
