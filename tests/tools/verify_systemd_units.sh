#!/bin/sh
# Checks every unit of packaging/systemd with `systemd-analyze verify`, its
# /usr/local/bin/zeus replaced by the built binary (verify checks that the
# command exists). Any finding fails. Exit 77 (skipped) without systemd-analyze.
# Usage: verify_systemd_units.sh SOURCE_DIR ZEUS_BINARY
set -eu
source_dir="$1"
zeus="$2"
command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd-analyze not installed"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
for unit in "$source_dir"/packaging/systemd/*.service; do
  name="$(basename "$unit")"
  sed "s|/usr/local/bin/zeus|$zeus|g" "$unit" > "$work/$name"
  if ! out="$(cd "$work" && systemd-analyze verify "./$name" 2>&1)" || [ -n "$out" ]; then
    echo "$name: systemd-analyze verify found:"
    echo "$out"
    status=1
  else
    echo "$name: ok"
  fi
done
exit "$status"
