#!/usr/bin/env bash
# Real-GPU check of the frequency optimizer (issue 42). Read-only: runs with
# ZEUS_DRY_RUN=1, so every clock lock is a log line, never made; nvidia-smi's
# power and clock reports are saved before and after, and the power limits
# compared. `zeus show-env --json` records the supported clocks zeus reads.
# Builds nothing: expects the portable wheel and `zeus` binary of
# scripts/gpu/python_wheel_build.sh in build-gpu/. Needs python3 with torch
# (and nvidia-ml-py) on the GPU machine.
# Usage: OUT=/some/dir scripts/gpu/frequency_check.sh   (about 3-4 minutes)
source "$(dirname "$0")/common.sh"
zeus_venv

gpu_power_report before
nvidia-smi -q -d CLOCK > "$out/nvidia_smi_clock_before.txt" 2>&1 || true
set +e  # From here each step's status is recorded, not fatal.
LD_LIBRARY_PATH="$PWD/$build/lib" "$build/tools/zeus" show-env --json > "$out/show_env.json" 2>&1
timeout 300 "$py" scripts/gpu/frequency_train.py --out "$out" 2>&1 | tee "$out/frequency_train.log"
train_rc=${PIPESTATUS[0]}
gpu_power_report after
nvidia-smi -q -d CLOCK > "$out/nvidia_smi_clock_after.txt" 2>&1 || true

if gpu_power_limits_unchanged "$out"; then
  smi_verdict="unchanged"
else
  smi_verdict="CHANGED"
fi
# The clock sections that a lock would change (locked and application clocks).
for when in before after; do
  grep -iA3 "applications clocks\|locked" "$out/nvidia_smi_clock_$when.txt" \
    > "$scratch/clocks_$when.txt" || true
done
if diff "$scratch/clocks_before.txt" "$scratch/clocks_after.txt" > /dev/null; then
  clock_verdict="unchanged"
else
  clock_verdict="CHANGED"
fi

{
  echo "train_rc=$train_rc"
  echo "nvidia_smi_power_limits=$smi_verdict"
  echo "nvidia_smi_application_and_locked_clocks=$clock_verdict"
  echo "dry_run_lock_lines=$(grep -c 'ZEUS_DRY_RUN: would lock to' "$out/frequency_train.log")"
  echo "dry_run_unlock_lines=$(grep -c 'ZEUS_DRY_RUN: would unlock the graphics clocks' "$out/frequency_train.log")"
} | tee "$out/frequency_check.txt"
[ "$train_rc" -eq 0 ] && [ "$smi_verdict" = "unchanged" ] && [ "$clock_verdict" = "unchanged" ]
