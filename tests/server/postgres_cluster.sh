#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL cluster for the server tests.
#   postgres_cluster.sh start STATE_DIR   writes STATE_DIR/url (a libpq URI), or
#                                         "unavailable" when the binaries are absent
#   postgres_cluster.sh stop STATE_DIR    stops the cluster and removes its files
# The cluster lives in a fresh temporary directory, listens on 127.0.0.1 on a
# free port (and a socket in that directory), trusts local connections and
# runs without fsync. initdb refuses to run as root: as root, the cluster runs
# as the unprivileged user `postgres` (created by Debian's package).
set -euo pipefail
action="${1:?usage: postgres_cluster.sh start|stop STATE_DIR}"
state="${2:?usage: postgres_cluster.sh start|stop STATE_DIR}"

bindir="${ZEUS_PG_BINDIR:-}"
if [[ -z "$bindir" ]]; then
  for candidate in /usr/lib/postgresql/*/bin; do
    [[ -x "$candidate/initdb" ]] && bindir="$candidate"
  done
fi

as_owner() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
  start)
    mkdir -p "$state"
    rm -f "$state/url" "$state/cluster_dir"
    if [[ -z "$bindir" || ! -x "$bindir/initdb" || ! -x "$bindir/pg_ctl" ]]; then
      echo "unavailable" >"$state/url"
      echo "##########################################################################" >&2
      echo "# WARNING: PostgreSQL server binaries not found (initdb, pg_ctl);         #" >&2
      echo "# the PostgreSQL variants of the server tests will be SKIPPED.            #" >&2
      echo "# Install the 'postgresql' package (scripts/install-deps.sh).             #" >&2
      echo "##########################################################################" >&2
      exit 0
    fi
    if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
      echo "postgres_cluster.sh: running as root but user 'postgres' does not exist" >&2
      exit 1
    fi
    dir="$(mktemp -d /tmp/zeus-pg.XXXXXX)"
    echo "$dir" >"$state/cluster_dir"
    [[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
    chmod 700 "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -A trust -U zeus -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    for attempt in 1 2 3 4 5; do
      port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
      if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
          -o "-h 127.0.0.1 -p $port -k $dir -F -c max_connections=300 -c shared_buffers=64MB" start >/dev/null; then
        as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U zeus zeus_test
        echo "postgresql://zeus@127.0.0.1:$port/zeus_test" >"$state/url"
        echo "PostgreSQL test cluster on 127.0.0.1:$port in $dir"
        exit 0
      fi
      echo "pg_ctl start failed on port $port (attempt $attempt)" >&2
      tail -5 "$dir/server.log" >&2 || true
    done
    exit 1
    ;;
  stop)
    if [[ -f "$state/cluster_dir" ]]; then
      dir="$(cat "$state/cluster_dir")"
      if [[ -d "$dir/data" ]]; then
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
      fi
      rm -rf "$dir"
      rm -f "$state/cluster_dir"
    fi
    rm -f "$state/url"
    ;;
  *)
    echo "postgres_cluster.sh: unknown action '$action'" >&2
    exit 2
    ;;
esac
