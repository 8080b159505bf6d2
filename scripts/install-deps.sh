#!/usr/bin/env bash
# Installs every build and test dependency of Zeus from Debian's packages.
# Run as root on Debian 12 (bookworm). Idempotent.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  clang-format-14 clang-14 libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libsqlite3-dev libpq-dev postgresql
  libboost-dev libssl-dev
  libjwt-dev
  python3 python3-dev pybind11-dev
  python3-venv python3-pip python3-torch python3-pytest python3-httpx
  prometheus-cpp-dev prometheus prometheus-pushgateway python3-prometheus-client
  gnuplot-nox libexpat1-dev
  libjs-chart.js chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
