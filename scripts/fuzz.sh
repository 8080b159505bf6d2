#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang under AddressSanitizer
# and UBSan and runs each on its seed corpus (tests/fuzz/corpus/<target>) for
# a bounded time. Fails (exit 1) when any target crashes, leaks, hits UBSan or
# breaks one of its invariants; the reproducer is left in the build dir.
# Usage: scripts/fuzz.sh [seconds-per-target] [target...]
#                          (default: 60 s, every target; exploratory: new
#                           inputs each run)
#        scripts/fuzz.sh --ci [target...]
#                          (reproducible, for CI: every seed, then a fixed
#                           number of mutations from a fixed random seed,
#                           so a given tree passes or fails every time;
#                           new findings come from exploratory runs)
#        e.g. scripts/fuzz.sh 600 fuzz_trace_sim   (one target for 10 minutes)
# Environment: ZEUS_FUZZ_BUILD_DIR (default: build-fuzz), ZEUS_FUZZ_JOBS
# (targets run at once; default: nproc, at most 2), CXX (default: clang++-14).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=explore
seconds="${1:-60}"
if [[ "$seconds" == --ci ]]; then
  mode=ci
  seconds=0
fi
(($# > 0)) && shift
build_dir="${ZEUS_FUZZ_BUILD_DIR:-build-fuzz}"
parallel="${ZEUS_FUZZ_JOBS:-$(( $(nproc) < 2 ? 1 : 2 ))}"
all_targets=(fuzz_http fuzz_json fuzz_trace_csv fuzz_trace_sim fuzz_profile fuzz_optimizer_state)
targets=("${all_targets[@]}")
(($# > 0)) && targets=("$@")

usage="usage: scripts/fuzz.sh [seconds-per-target | --ci] [target...]"
if [[ "$mode" == explore ]] && ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "$usage, got '$seconds'" >&2
  exit 2
fi
for target in "${targets[@]}"; do
  if [[ " ${all_targets[*]} " != *" $target "* ]]; then
    echo "$usage: unknown target '$target' (known: ${all_targets[*]})" >&2
    exit 2
  fi
done

# -O1 with assertions: compiles faster than -O2 and fuzzes about as well.
# Line tables (reports still name files and lines) and a unity build keep
# the instrumented build short (docs/PERFORMANCE.md, "Fuzzing").
dbg="-O1 -gline-tables-only"
CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}" cmake -S . -B "$build_dir" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="$dbg" -DCMAKE_CXX_FLAGS_DEBUG="$dbg" \
  -DCMAKE_UNITY_BUILD=ON -DZEUS_BUILD_FUZZERS=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

out_dir="$build_dir/fuzz-out"
rm -rf "$out_dir"
mkdir -p "$out_dir"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Mutations per target in --ci mode: about 7-15 s each on one CI core.
ci_runs() {
  case "$1" in
    fuzz_http) echo 1500 ;;
    fuzz_trace_csv) echo 15000 ;;
    fuzz_trace_sim) echo 15000 ;;
    *) echo 150000 ;;
  esac
}

run_target() {
  local target="$1"
  local work="$out_dir/$target"
  local budget=(-max_total_time="$seconds")
  [[ "$mode" == ci ]] && budget=(-seed=1 -runs="$(ci_runs "$target")")
  mkdir -p "$work/corpus"
  # A target's dictionary (tests/fuzz/<target>.dict), when it has one: tokens
  # that random mutation rarely spells (e.g. 1e307, 4294968).
  local dict=()
  [[ -f "tests/fuzz/$target.dict" ]] && dict=(-dict="$PWD/tests/fuzz/$target.dict")
  # New inputs go to a scratch corpus; the repository's seeds are read only.
  # fuzz_http's inputs may include its health check (3 tries of 10 s).
  local timeout_s=10
  [[ "$target" == fuzz_http ]] && timeout_s=40
  (cd "$work" && "../../tests/fuzz/$target" "${budget[@]}" "${dict[@]}" -timeout="$timeout_s" \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    corpus "$OLDPWD/tests/fuzz/corpus/$target") >"$work/log" 2>&1
}

failed=()
pids=()
names=()
for target in "${targets[@]}"; do
  run_target "$target" &
  pids+=("$!")
  names+=("$target")
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

for target in "${targets[@]}"; do
  log="$out_dir/$target/log"
  stats="$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)"
  execs="$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)"
  echo "$target: ${execs:-?} exec/s; ${stats:-no stats}"
done
if ((${#failed[@]} > 0)); then
  for target in "${failed[@]}"; do
    echo "error: $target failed; its log ($out_dir/$target/log) ends:" >&2
    tail -40 "$out_dir/$target/log" >&2
  done
  exit 1
fi
if [[ "$mode" == ci ]]; then
  echo "fuzz: ${#targets[@]} targets ran their seeds and fixed-seed mutations without a finding"
else
  echo "fuzz: ${#targets[@]} targets ran ${seconds} s each without a finding"
fi
