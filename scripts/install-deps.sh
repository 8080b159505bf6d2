#!/usr/bin/env bash
# Installs Zeus's dependencies from Debian's packages. Run as root on Debian 12
# (bookworm). Idempotent.
#
#   scripts/install-deps.sh            the full development set: the runtime set
#                                      plus what the tests, benchmarks, fuzzers
#                                      and format check use (scripts/test.sh, .ci/run)
#   scripts/install-deps.sh --runtime  the runtime set: build and run the `zeus`
#                                      tool (every subcommand) and `pip install ./python`
#   scripts/install-deps.sh --list [--runtime]   print the set, install nothing
set -euo pipefail

# Build and run the tool and the Python package.
runtime_packages=(
  build-essential cmake ninja-build pkg-config ca-certificates
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libsqlite3-dev libpq-dev libboost-dev libssl-dev libjwt-dev prometheus-cpp-dev zlib1g-dev
  python3 python3-venv python3-httpx
  gnuplot-nox libjs-chart.js
)
# Tests, benchmarks, fuzzers, format check, the Python tests (torch), and the
# real servers and browser the tests start (PostgreSQL, Prometheus, Chromium).
dev_packages=(
  git
  clang-format-14 clang-14 libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  postgresql
  python3-dev pybind11-dev python3-pip python3-torch python3-pytest
  prometheus prometheus-pushgateway python3-prometheus-client
  libexpat1-dev systemd
  chromium
)

set_name=dev
list_only=0
for arg in "$@"; do
  case "$arg" in
    --runtime) set_name=runtime ;;
    --dev) set_name=dev ;;
    --list) list_only=1 ;;
    -h | --help)
      sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "install-deps.sh: unknown argument '$arg' (expected --runtime, --dev, --list)" >&2
      exit 2
      ;;
  esac
done

packages=("${runtime_packages[@]}")
if [[ "$set_name" == dev ]]; then packages+=("${dev_packages[@]}"); fi
if ((list_only)); then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
