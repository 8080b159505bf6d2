#!/usr/bin/env bash
# Real-GPU benchmark of the energy monitor (issue 2), read-only
# (ZEUS_DRY_RUN=1; no setter is called). While monitor_load.py keeps GPU 0
# busy with ~1.5 ms bf16 matmul steps, runs build-gpu/bench/monitor/
# nvml_monitor_bench: raw NVML energy/power read latency, caller-thread cost
# of Begin+End in exact and low-overhead mode (p50/p99), and the low-overhead
# mode's difference from exact reads for 0.1 s, 1 s and 10 s windows.
# Per-step slowdown is ESTIMATED as (low-overhead Begin+End cost) / (step
# time), since no Python binding calls zeus from the training loop yet.
# Builds nothing: expects build-gpu/ from scripts/gpu/build_portable.sh with
#   ZEUS_GPU_TARGETS="zeus nvml_monitor_bench"
# Needs python3 with torch. About 2 minutes.
# Usage: OUT=/some/dir scripts/gpu/monitor_bench.sh
source "$(dirname "$0")/common.sh"
export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
set +e  # From here each step's status is recorded, not fatal.

python3 scripts/gpu/monitor_load.py --seconds 150 --out "$out" > "$out/monitor_load.log" 2>&1 &
load_pid=$!
sleep 15  # CUDA start-up, warm-up and a few step-time segments without the monitor.
timeout 170 "$build/bench/monitor/nvml_monitor_bench" \
  --benchmark_out="$out/nvml_monitor_bench.json" --benchmark_out_format=json \
  2>&1 | tee "$out/nvml_monitor_bench.txt"
bench_rc=${PIPESTATUS[0]}
kill "$load_pid" 2>/dev/null
wait "$load_pid" 2>/dev/null
cat "$out/monitor_load.json" 2>/dev/null
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
try:
    bench = {b["name"]: b for b in json.load(open(f"{out}/nvml_monitor_bench.json"))["benchmarks"]}
    load = json.load(open(f"{out}/monitor_load.json"))
    step_us = 1e3 * load["step_ms_p50"]
    for mode, arg in (("exact", "0"), ("low-overhead", "1")):
        b = next((v for k, v in bench.items() if k.startswith(f"BM_NvmlBeginEnd/{arg}/")), None)
        if b is None:
            continue
        mean_us = b["real_time"]  # The benchmark's unit is us.
        print(f"{mode}: begin+end mean {mean_us:.1f} us, p50 {b['p50_us']:.1f} us, "
              f"p99 {b['p99_us']:.1f} us; estimated slowdown of a {step_us / 1e3:.2f} ms step: "
              f"{100 * mean_us / step_us:.2f}% (mean)")
except Exception as e:  # Summary only; the raw JSON is in $OUT.
    print(f"summary failed: {e}")
PY
exit "$bench_rc"
