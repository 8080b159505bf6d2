#!/usr/bin/env bash
# Times the README's first command on a bare Debian 12: a minbase chroot made
# with debootstrap (apt and nothing else), a fresh clone of this repository in
# it, then the command's phases one by one (packages, configure, build, run).
# With --pip it then times the Quick start's venv and `pip install ./python`
# in the same chroot; with --tests, the README's second command (the full
# package set, then every test) after the first, as a reader runs them. Run
# as root on a Debian host that reaches Debian's package mirror; the host
# itself is left as it was (the chroot lives under the work directory and is
# removed at the end unless --keep).
#
#   bench/quickstart_bare_debian.sh [--pip] [--tests] [--keep] [--workdir DIR] [--mirror URL]
#
# The mirror defaults to the host's first Debian archive among its apt
# sources. Results: one line per phase on stdout ("phase: N.N s"), the full
# log in WORKDIR/out.log.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
workdir=/tmp/zeus-bare-debian
mirror=""
pip=0
tests=0
keep=0
while (($#)); do
  case "$1" in
    --pip) pip=1 ;;
    --tests) tests=1 ;;
    --keep) keep=1 ;;
    --workdir) workdir=$2; shift ;;
    --mirror) mirror=$2; shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quickstart_bare_debian.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [[ $(id -u) != 0 ]]; then
  echo "quickstart_bare_debian.sh: needs root (debootstrap, chroot, mount)" >&2
  exit 2
fi
if [[ -z "$mirror" ]]; then
  # The first Debian archive (a URL ending in /debian) among the host's sources.
  mirror=$( (grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?$' /etc/apt/sources.list \
    /etc/apt/sources.list.d 2>/dev/null || true) | awk '{print $2}' | head -1)
fi
[[ -n "$mirror" ]] || { echo "quickstart_bare_debian.sh: no apt mirror found; pass --mirror URL" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null

root=$workdir/root
cleanup() {
  for m in dev/shm proc dev sys; do mountpoint -q "$root/$m" && umount "$root/$m"; done
  ((keep)) || rm -rf "$root"
}
trap cleanup EXIT
rm -rf "$root"
mkdir -p "$workdir"
echo "debootstrap --variant=minbase bookworm (not timed) ..." >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$workdir/debootstrap.log" 2>&1
# The host's apt sources (main, updates, security), as a Debian 12 image has.
rm -f "$root/etc/apt/sources.list"
cp -r /etc/apt/sources.list /etc/apt/sources.list.d "$root/etc/apt/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount -t tmpfs shm "$root/dev/shm"  # Chromium's, in the dashboard tests.
mount --bind /sys "$root/sys"
git clone -q "$repo" "$root/root/zeus"

# The README's first command, split at its '&&'s so each phase is timed.
cmd=$(grep -m1 '^    ./scripts/install-deps.sh --runtime &&' "$repo/README.md" | sed 's/^    //')
[[ -n "$cmd" ]] || { echo "quickstart_bare_debian.sh: README's first command not found" >&2; exit 1; }
echo "command: $cmd"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
phases=$(printf '%s' "$cmd" | sed 's/ && /\n/g')
if ((pip)); then
  phases+=$'\n'"python3 -m venv --system-site-packages /root/venv"
  phases+=$'\n'"CCACHE_DISABLE=1 /root/venv/bin/pip install ./python"
  phases+=$'\n'"/root/venv/bin/zeus --version"
fi
if ((tests)); then
  second=$(grep -m1 '^    ./scripts/install-deps.sh && ./scripts/test.sh' "$repo/README.md" | sed 's/^    //')
  [[ -n "$second" ]] || { echo "quickstart_bare_debian.sh: README's test command not found" >&2; exit 1; }
  echo "second command: $second"
  phases+=$'\n'"$(printf '%s' "$second" | sed 's/ && /\n/g')"
fi
: >"$workdir/out.log"
total_ms=0
while IFS= read -r phase; do
  start=$(date +%s%N)
  if ! chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    bash -c "cd /root/zeus && $phase" >>"$workdir/out.log" 2>&1; then
    echo "FAILED: $phase (log: $workdir/out.log)" >&2
    exit 1
  fi
  ms=$((($(date +%s%N) - start) / 1000000))
  total_ms=$((total_ms + ms))
  printf '%s: %d.%d s\n' "$phase" $((ms / 1000)) $((ms % 1000 / 100))
done <<<"$phases"
printf 'total: %d.%d s\n' $((total_ms / 1000)) $((total_ms % 1000 / 100))
grep -m1 -E '^Fetched ' "$workdir/out.log" || true
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
