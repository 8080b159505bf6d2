#!/usr/bin/env bash
# Real-GPU check of the power-limit optimizer (issue 4). Read-only: runs with
# ZEUS_DRY_RUN=1, so limits are logged, never set; nvidia-smi's power report
# is saved before and after and compared. Builds nothing: expects the
# portable wheel and `zeus` binary of scripts/gpu/python_wheel_build.sh in
# build-gpu/ (power_limit_train.py drives the `zeus` package from the wheel).
# Needs python3 with torch (and nvidia-ml-py) on the GPU machine.
# Usage: OUT=/some/dir scripts/gpu/power_limit_check.sh   (about 2-3 minutes)
source "$(dirname "$0")/common.sh"
zeus_venv

gpu_power_report before
set +e  # From here each step's status is recorded, not fatal.
timeout 240 "$py" scripts/gpu/power_limit_train.py --out "$out" 2>&1 | tee "$out/power_limit_train.log"
train_rc=${PIPESTATUS[0]}
gpu_power_report after

# Every limit line must be identical before and after.
if gpu_power_limits_unchanged "$out"; then
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
