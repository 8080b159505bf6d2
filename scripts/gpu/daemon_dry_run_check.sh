#!/usr/bin/env bash
# Real-GPU check of `zeus daemon` (issues 12, 24). Read-only: the daemon runs with
# --dry-run (ZEUS_DRY_RUN=1 semantics), so it reads the real limits, power and
# energy and only logs the changes it is asked for. `nvidia-smi -q -d POWER`
# is saved before and after and compared (readings that move by themselves,
# power draw and power samples, are left out of the comparison; both full
# outputs are kept). Builds nothing: expects build-gpu/ from
# scripts/gpu/build_portable.sh (ZEUS_GPU_TARGETS must include zeus).
# Needs python3 (standard library only).
# Usage: OUT=/some/dir scripts/gpu/daemon_dry_run_check.sh   (about 10 seconds)
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:?set OUT to the output directory}"
build="${ZEUS_GPU_BUILD:-build-gpu}"
mkdir -p "$out"
zeus="$PWD/$build/tools/zeus"
export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sock="$out/zeusd.sock"
state="$out/zeusd-state.json"
rm -f "$sock" "$state"

# One request over the daemon's Unix socket: prints "STATUS BODY".
request() {
  python3 - "$sock" "$1" "$2" <<'PY'
import http.client, socket, sys
class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sys.argv[1])
c = Conn("zeusd", timeout=10)
c.request(sys.argv[2], sys.argv[3])
r = c.getresponse()
print(r.status, r.read().decode())
PY
}

nvidia-smi -q -d POWER > "$out/nvidia_smi_power_before.txt" 2>&1
"$zeus" daemon --dry-run --socket "$sock" --state-file "$state" --tcp 127.0.0.1:0 \
  > "$out/daemon_stdout.txt" 2> "$out/daemon.log" &
daemon_pid=$!
for _ in $(seq 1 100); do
  [ -S "$sock" ] && request GET /time > /dev/null 2>&1 && break
  sleep 0.1
done

failures=0
check() {  # check NAME EXPECTED_STATUS METHOD TARGET
  local answer status
  answer="$(request "$3" "$4" 2>&1)"
  status="${answer%% *}"
  echo "$1: $3 $4 -> $answer" | tee -a "$out/daemon_requests.txt"
  if [ "$status" != "$2" ]; then
    echo "  FAILED: expected HTTP $2" | tee -a "$out/daemon_requests.txt"
    failures=$((failures + 1))
  fi
}
check discover 200 GET /discover
check power_limit 200 GET /gpu/get_power_limit
check constraints 200 GET /gpu/get_power_limit_constraints
check persistence 200 GET /gpu/get_persistence_mode
check power 200 GET /gpu/get_power
check energy_1 200 GET /gpu/get_cumulative_energy
sleep 1
check energy_2 200 GET /gpu/get_cumulative_energy
request GET "/cpu/get_cumulative_energy?cpu=true&dram=true" >> "$out/daemon_requests.txt" 2>&1

# /discover's pci_address for every GPU: nvidia-smi's bus ids ("00000000:3B:00.0")
# in the form lspci -D prints ("0000:3b:00.0").
expected_pci="$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | python3 -c '
import sys
for line in sys.stdin:
    domain, rest = line.strip().split(":", 1)
    print("%04x:%s" % (int(domain, 16), rest.lower()))' | paste -sd, -)"
served_pci="$(request GET /discover |
  python3 -c 'import json,sys; print(",".join(g["pci_address"] for g in json.loads(sys.stdin.read().split(" ",1)[1])["gpus"]))')"
pci_verdict="different"
[ -n "$served_pci" ] && [ "$served_pci" = "$expected_pci" ] && pci_verdict="same"
echo "pci_address: served $served_pci, nvidia-smi $expected_pci" | tee -a "$out/daemon_requests.txt"

# Ask for the GPU's minimum limit on GPU 0 (dry run: logged, not made), and
# one outside its range (400 naming the range).
min_mw="$(request GET '/gpu/get_power_limit_constraints?gpu_ids=0' |
  python3 -c 'import json,sys; print(json.loads(sys.stdin.read().split(" ",1)[1])["0"]["min_power_limit_mw"])')"
check set_min 200 POST "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=${min_mw}&block=true"
check set_out_of_range 400 POST "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=1&block=true"
check set_persistence 200 POST "/gpu/set_persistence_mode?gpu_ids=0&enabled=true&block=true"
sleep 0.5  # Each request's process has ended: the daemon "puts back" (logged).
check leases_empty 200 GET /leases

kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_rc=$?
nvidia-smi -q -d POWER > "$out/nvidia_smi_power_after.txt" 2>&1

# Everything but the readings that move by themselves must be identical.
filter() { grep -viE "power draw|timestamp|power samples|duration|number of samples|^\s*(max|min|avg)\s*:" "$1"; }
filter "$out/nvidia_smi_power_before.txt" > "$out/smi_settings_before.txt"
filter "$out/nvidia_smi_power_after.txt" > "$out/smi_settings_after.txt"
if diff "$out/smi_settings_before.txt" "$out/smi_settings_after.txt" > "$out/smi_settings_diff.txt"; then
  smi_verdict="unchanged"
else
  smi_verdict="CHANGED"
fi
dry_run_logged="$(grep -c 'ZEUS_DRY_RUN: would' "$out/daemon.log")"
state_file="absent"
[ -e "$state" ] && state_file="PRESENT"
{
  echo "daemon_rc=$daemon_rc"
  echo "request_failures=$failures"
  echo "dry_run_lines_logged=$dry_run_logged"
  echo "state_file=$state_file"
  echo "nvidia_smi_power_settings=$smi_verdict"
  echo "pci_address_vs_nvidia_smi=$pci_verdict"
} | tee "$out/daemon_dry_run_check.txt"
[ "$daemon_rc" -eq 0 ] && [ "$failures" -eq 0 ] && [ "$dry_run_logged" -ge 2 ] &&
  [ "$state_file" = "absent" ] && [ "$smi_verdict" = "unchanged" ] && [ "$pci_verdict" = "same" ]
