#!/usr/bin/env bash
# Installs this build tree into a temporary prefix, then builds and runs a
# tiny consumer project against it (find_package(zeus CONFIG REQUIRED),
# zeus::zeus), and runs the installed CLI on its bundled traces, offline.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in bin/zeus include/zeus/status.h lib/cmake/zeus/zeusConfig.cmake \
         share/zeus/NOTICE share/zeus/traces/zeus-nsdi23/summary_train.csv; do
  [[ -e "$prefix/$f" ]] || { echo "install_test: $f not installed" >&2; exit 1; }
done

cmake -S "$source_dir/tests/install/consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" -j 2 >/dev/null
out=$("$work/consumer/consumer")
echo "$out"
[[ $(grep -c "cost_ratio" <<<"$out") -eq 6 ]] || { echo "install_test: expected 6 workloads" >&2; exit 1; }

# The installed CLI finds the bundled traces beside itself, with no network
# and no trace variables.
table=$(env -u ZEUS_TRACE_DIR HOME="$work" XDG_CACHE_HOME="$work/cache" \
  "$prefix/bin/zeus" simulate --gpu a40 --dataset cifar100 --policy zeus --policy oracle --seeds 1)
echo "$table"
grep -q "traces: $prefix/share/zeus/traces/zeus-nsdi23" <<<"$table"
grep -qE "^a40 +cifar100 +oracle .* 0\.0%" <<<"$table"
