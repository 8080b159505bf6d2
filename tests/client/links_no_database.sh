#!/bin/sh
# Fails when binary $1 cannot be inspected or needs libsqlite3 or libpq.
set -eu
deps=$(ldd "$1")
if printf '%s\n' "$deps" | grep -E 'libsqlite3|libpq'; then
  echo "$1 links a database library" >&2
  exit 1
fi
echo "$1: no database library"
