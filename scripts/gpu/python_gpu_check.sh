#!/usr/bin/env bash
# Real-GPU checks of the zeus Python package (issue 9), read-only
# (ZEUS_DRY_RUN=1: limits are logged, never set; nvidia-smi's power report is
# compared before and after). Builds nothing: expects the portable wheel and
# `zeus` binary of scripts/gpu/python_wheel_build.sh in build-gpu/.
#  1. python_step_overhead.py: p50 step time of a ~1.5 ms bf16 matmul step and
#     ResNet-18 (batch 256 and 64) without windows, with per-step windows in
#     exact and low-overhead modes, and begin+end cost from Python.
#  2. python_recurring_job.py: >= 20 recurrences of a job trained to a target
#     accuracy, batch size from `zeus serve`, GlobalPowerLimitOptimizer
#     profiling (dry run), energy per recurrence vs the default batch size.
#  3. python_ddp.py (only with >= 2 GPUs): DDP over NCCL, one process per GPU,
#     GlobalPowerLimitOptimizer in dry run: both ranks reach the same decision.
#  4. python_hf_check.py: HFGlobalPowerLimitOptimizer as a callback of a real
#     Hugging Face Trainer (small BERT, synthetic task): profiling ends with a
#     limit pinned and the model learns the task.
# Extra arguments: $ZEUS_STEP_OVERHEAD_ARGS (check 1), $ZEUS_RECURRING_ARGS (check 2),
# $ZEUS_DDP_ARGS (check 3).
# Usage: OUT=/some/dir scripts/gpu/python_gpu_check.sh [1 2 3 4]   (about 10 minutes; one check per call fits the 10-minute limit)
source "$(dirname "$0")/common.sh"
checks="${*:-1 2 3 4}"
zeus_venv
(cd / && "$py" -c "import sys, torch, zeus; print(sys.version.split()[0], 'torch', torch.__version__, 'zeus', zeus.__version__, zeus.__file__)") \
  2>&1 | tee "$out/python_env.txt"
num_gpus="$(nvidia-smi -L | grep -c '^GPU')"

gpu_power_report before
set +e  # From here each check's status is recorded, not fatal.
rc=0
for check in $checks; do
  case "$check" in
    1) timeout 300 "$py" scripts/gpu/python_step_overhead.py --out "$out" ${ZEUS_STEP_OVERHEAD_ARGS:-} 2>&1 | tee "$out/step_overhead.log" ;;
    2) timeout 560 "$py" scripts/gpu/python_recurring_job.py --zeus "$build/tools/zeus" \
         --zeus-lib "$PWD/$build/lib" --out "$out" ${ZEUS_RECURRING_ARGS:-} 2>&1 | tee "$out/recurring_job.log" ;;
    3) if [ "$num_gpus" -ge 2 ]; then
         timeout 300 "$py" -m torch.distributed.run --standalone --nproc_per_node=2 \
           scripts/gpu/python_ddp.py --out "$out" ${ZEUS_DDP_ARGS:-} 2>&1 | tee "$out/ddp.log"
       else
         echo "check 3 skipped: $num_gpus GPU(s)" | tee "$out/ddp.log"; true
       fi ;;
    4) timeout 400 "$py" scripts/gpu/python_hf_check.py --out "$out" 2>&1 | tee "$out/hf.log" ;;
  esac
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "check $check failed"; rc=1; }
done
gpu_power_report after
if gpu_power_limits_unchanged "$scratch"; then
  echo "nvidia_smi_power_limits=unchanged" | tee -a "$out/python_env.txt"
else
  echo "nvidia_smi_power_limits=CHANGED" | tee -a "$out/python_env.txt"; rc=1
fi
exit "$rc"
