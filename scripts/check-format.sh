#!/usr/bin/env bash
# Fails when a C++ file of ours differs from what clang-format 14 would write.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt="$(command -v clang-format-14 || command -v clang-format)"
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cpp')
"$fmt" --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
