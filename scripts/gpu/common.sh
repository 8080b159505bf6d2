# The preamble of the scripts/gpu checks, sourced (never run) by each:
#   source "$(dirname "$0")/common.sh"
# It makes the shell strict (set -euo pipefail: a failed setup step stops the
# check before it measures anything), moves to the repository root, and sets
#   out     $OUT, required, created: where the check writes everything;
#   build   $ZEUS_GPU_BUILD, default build-gpu: the tree of build_portable.sh
#           or python_wheel_build.sh (the checks build nothing);
#   scratch a temporary directory, removed when the script exits;
# and exports ZEUS_DRY_RUN=1, so zeus logs every GPU setting it is asked to
# change and changes none. The functions below are the other shared steps.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out="${OUT:?set OUT to the output directory}"
mkdir -p "$out"
build="${ZEUS_GPU_BUILD:-build-gpu}"
export ZEUS_DRY_RUN=1
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# gpu_power_report WHEN: `nvidia-smi -q -d POWER` (limits, draw, samples of
# every GPU) into $out/nvidia_smi_power_WHEN.txt; WHEN is before or after.
# Never fails (a missing nvidia-smi leaves its error in the file).
gpu_power_report() {
  nvidia-smi -q -d POWER > "$out/nvidia_smi_power_$1.txt" 2>&1 || true
}

# gpu_power_limits_unchanged DIR: the "power limit" lines of the before and
# after reports into DIR/limits_before.txt and DIR/limits_after.txt, their
# diff into DIR/limits_diff.txt. Status 0 when the lines are identical.
gpu_power_limits_unchanged() {
  grep -i "power limit" "$out/nvidia_smi_power_before.txt" > "$1/limits_before.txt" || true
  grep -i "power limit" "$out/nvidia_smi_power_after.txt" > "$1/limits_after.txt" || true
  diff "$1/limits_before.txt" "$1/limits_after.txt" > "$1/limits_diff.txt"
}

# zeus_venv: the portable wheel of python_wheel_build.sh ($build/python/dist)
# installed offline, without dependencies (it has none), into $scratch/site,
# which is put first on PYTHONPATH; sets py to the interpreter, which sees
# its own packages (torch). The interpreter is $ZEUS_GPU_PYTHON, default
# python3. (A venv with --system-site-packages would not do: where python3 is
# itself a venv, as on the GPU machine, the new venv sees only the base
# interpreter's packages, without torch.)
zeus_venv() {
  py="${ZEUS_GPU_PYTHON:-python3}"
  "$py" -m pip install --no-index --no-deps --disable-pip-version-check -q \
    --target "$scratch/site" "$build"/python/dist/zeus-*.whl 2>&1 | tee "$scratch/pip_install.log"
  export PYTHONPATH="$scratch/site${PYTHONPATH:+:$PYTHONPATH}"
}
