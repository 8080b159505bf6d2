#!/usr/bin/env bash
# Read-only check of the device layer on a real GPU machine. Builds nothing:
# runs the already-built build-gpu/tools/zeus (scripts/gpu/build_portable.sh)
# with ZEUS_DRY_RUN=1, and compares what `zeus show-env --json` reports with
# NVML read independently through nvidia-ml-py. Changes no device state.
# Usage: OUT=/some/dir scripts/gpu/show_env.sh
# Writes to $OUT: show_env.txt, show_env.json, show_env_uuid.json (GPU chosen
# by a CUDA_VISIBLE_DEVICES UUID prefix), show_env_mig.txt (a MIG entry must be
# refused), compare.txt (field-by-field comparison; last line PASS or FAIL),
# nvml_gpu_test.txt when build-gpu/tests/device/nvml_gpu_test exists (build it
# with ZEUS_GPU_CMAKE_ARGS=-DZEUS_BUILD_TESTS=ON
# ZEUS_GPU_TARGETS="zeus nvml_gpu_test" scripts/gpu/build_portable.sh).
source "$(dirname "$0")/common.sh"
export LD_LIBRARY_PATH="$PWD/$build/lib:${LD_LIBRARY_PATH:-}"
unset CUDA_VISIBLE_DEVICES
zeus="$build/tools/zeus"
set +e  # From here each step's status is recorded, not fatal.

"$zeus" show-env >"$OUT/show_env.txt" 2>&1
echo "exit code: $?" >>"$OUT/show_env.txt"
"$zeus" show-env --json >"$OUT/show_env.json" 2>"$OUT/show_env_json.stderr"
echo "show-env --json exit code: $?" >"$OUT/exit_codes.txt"

uuid="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][-1]["uuid"])' \
  "$OUT/show_env.json" 2>/dev/null)"
if [ -n "$uuid" ]; then
  prefix="${uuid:0:${#uuid}-2}"  # A UUID prefix, as CUDA accepts.
  CUDA_VISIBLE_DEVICES="$prefix" "$zeus" show-env --json >"$OUT/show_env_uuid.json" 2>&1
  echo "CUDA_VISIBLE_DEVICES=$prefix exit code: $?" >>"$OUT/exit_codes.txt"
fi
CUDA_VISIBLE_DEVICES="MIG-GPU-00000000-0000-0000-0000-000000000000/0/0" \
  "$zeus" show-env >"$OUT/show_env_mig.txt" 2>&1
echo "MIG exit code: $?" >>"$OUT/exit_codes.txt"

# The read-only gtest of the NVML backend, when it was built (see below).
gpu_test="$build/tests/device/nvml_gpu_test"
if [ -x "$gpu_test" ]; then
  "$gpu_test" >"$OUT/nvml_gpu_test.txt" 2>&1
  echo "nvml_gpu_test exit code: $?" >>"$OUT/exit_codes.txt"
fi

python3 - "$OUT" <<'PY' >"$OUT/compare.txt" 2>&1
import json, sys
out = sys.argv[1]
zeus = json.load(open(f"{out}/show_env.json"))
import pynvml as n
n.nvmlInit()
arch_names = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
              8: "Ada", 9: "Hopper", 10: "Blackwell"}
ok = True
def check(what, ours, theirs):
    global ok
    good = ours == theirs
    ok &= good
    print(f"{'OK      ' if good else 'MISMATCH'} {what}: zeus={ours!r} nvml={theirs!r}")
def s(x):
    return x.decode() if isinstance(x, bytes) else x
nvml = next(b for b in zeus["gpu_backends"] if b["name"] == "nvml")
check("driver version", nvml["versions"].get("driver"), s(n.nvmlSystemGetDriverVersion()))
check("NVML version", nvml["versions"].get("nvml"), s(n.nvmlSystemGetNVMLVersion()))
check("GPU count", len(zeus["gpus"]), n.nvmlDeviceGetCount())
for g in zeus["gpus"]:
    h = n.nvmlDeviceGetHandleByIndex(g["index"])
    i = g["index"]
    check(f"GPU {i} name", g["name"], s(n.nvmlDeviceGetName(h)))
    check(f"GPU {i} uuid", g["uuid"], s(n.nvmlDeviceGetUUID(h)))
    try:
        check(f"GPU {i} architecture", g["architecture"],
              arch_names.get(n.nvmlDeviceGetArchitecture(h), "Unknown"))
    except Exception as e:
        print(f"SKIP     GPU {i} architecture: {e}")
    lo, hi = n.nvmlDeviceGetPowerManagementLimitConstraints(h)
    pl = g["power_limit_w"]
    check(f"GPU {i} min limit W", pl["min"], lo / 1000)
    check(f"GPU {i} max limit W", pl["max"], hi / 1000)
    check(f"GPU {i} default limit W", pl["default"],
          n.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000)
    check(f"GPU {i} current limit W", pl["current"], n.nvmlDeviceGetPowerManagementLimit(h) / 1000)
    check(f"GPU {i} enforced limit W", pl["enforced"], n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000)
    try:
        n.nvmlDeviceGetTotalEnergyConsumption(h)
        supported = True
    except n.NVMLError_NotSupported:
        supported = False
    check(f"GPU {i} energy counter supported", g["energy_counter_supported"], supported)
    check(f"GPU {i} persistence mode", g["persistence_mode"],
          n.nvmlDeviceGetPersistenceMode(h) == 1)
try:
    sel = json.load(open(f"{out}/show_env_uuid.json"))
    check("UUID-prefix CUDA_VISIBLE_DEVICES selects that GPU",
          [x["uuid"] for x in sel["gpus"]], [zeus["gpus"][-1]["uuid"]])
except Exception as e:
    ok = False
    print(f"MISMATCH UUID selection: {e}")
mig = open(f"{out}/show_env_mig.txt").read()
check("MIG entry refused with a clear message", "MIG devices are not supported" in mig, True)
n.nvmlShutdown()
print("PASS" if ok else "FAIL")
PY
tail -1 "$OUT/compare.txt"
