#!/usr/bin/env bash
# A throwaway PgBouncer in front of a test cluster (see scripts/pg-cluster.sh).
#
#   scripts/pgbouncer.sh start POSTGRES_URL [transaction|session]   # prints the pooler's URL
#   scripts/pgbouncer.sh stop                                       # stops it, deletes its files
#
# Listens on 127.0.0.1 only, on the first free port from $ONCEQ_PGBOUNCER_FIRST_PORT
# (default 6440) upward, and forwards every database name to the server the URL
# names (`* = host=… port=…`), so the tests' scratch databases work through it. Auth is
# `trust` for the URL's user, like the test cluster. The pool mode is stock PgBouncer's
# (`transaction` by default): no `ignore_startup_parameters`, no prepared-statement
# support (1.18 has none), default pool size 20 per database and user
# ($ONCEQ_PGBOUNCER_POOL_SIZE sets it, for a server with few connections).
#
# State (directory, pid) is kept in $ONCEQ_PGBOUNCER_STATE, default
# ${TMPDIR:-/tmp}/onceq-pgbouncer-<uid>.state; `stop` ends the pid recorded there, and
# a failed `start` stops what it started.
#
# PgBouncer refuses to run as root: as root it runs as the `postgres` OS user
# (ONCEQ_PG_OS_USER overrides) through `runuser`.
#
# Exit codes: 0 ok, 1 failure, 3 no pgbouncer binary (apt-get install pgbouncer).
set -euo pipefail

STATE_FILE="${ONCEQ_PGBOUNCER_STATE:-${TMPDIR:-/tmp}/onceq-pgbouncer-$(id -u).state}"
OS_USER="${ONCEQ_PG_OS_USER:-postgres}"
FIRST_PORT="${ONCEQ_PGBOUNCER_FIRST_PORT:-6440}"
POOL_SIZE="${ONCEQ_PGBOUNCER_POOL_SIZE:-20}"

die() {
  echo "pgbouncer: $*" >&2
  exit 1
}

as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u "$OS_USER" -- "$@"
  else
    "$@"
  fi
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

read_state() {
  [[ -f "$STATE_FILE" ]] || return 1
  # shellcheck disable=SC1090
  source "$STATE_FILE"
  [[ -n "${PGB_DIR:-}" ]]
}

cmd_start() {
  local url="${1:-}" mode="${2:-transaction}"
  [[ -n "$url" ]] || die "usage: $0 start POSTGRES_URL [transaction|session]"
  [[ "$mode" == transaction || "$mode" == session ]] || die "pool mode must be transaction or session, not '$mode'"
  local bin
  if ! bin="$(command -v pgbouncer 2>/dev/null || ls /usr/sbin/pgbouncer 2>/dev/null)"; then
    echo "pgbouncer: no pgbouncer binary (apt-get install -y pgbouncer)" >&2
    exit 3
  fi
  if read_state && [[ -d "$PGB_DIR" ]]; then
    die "a pooler is already recorded in $STATE_FILE; run 'stop' first or set ONCEQ_PGBOUNCER_STATE"
  fi
  # postgres://user@host:port/db → user, host, port (the test cluster's shape).
  local rest="${url#*://}" user host port db
  rest="${rest%%\?*}"
  db="${rest#*/}"
  rest="${rest%%/*}"
  user="${rest%@*}"
  user="${user%%:*}"
  local hostport="${rest##*@}"
  host="${hostport%%:*}"
  port="${hostport##*:}"
  [[ "$port" != "$hostport" ]] || port=5432

  local dir
  dir="$(mktemp -d /tmp/onceq-pgb.XXXXXX)"
  printf 'PGB_DIR=%q\nPGB_PORT=%q\n' "$dir" 0 >"$STATE_FILE"
  trap 'cmd_stop; exit 1' ERR

  echo "\"$user\" \"\"" >"$dir/users.txt"
  local listen="$FIRST_PORT" tries=0
  while port_in_use "$listen" && ((tries < 40)); do
    listen=$((listen + 1))
    tries=$((tries + 1))
  done
  ((tries < 40)) || die "no free port in $FIRST_PORT..$((FIRST_PORT + 39))"
  cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$host port=$port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
max_client_conn = 1000
default_pool_size = $POOL_SIZE
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  if [[ "$(id -u)" -eq 0 ]]; then
    chown -R "$OS_USER" "$dir"
  fi
  printf 'PGB_DIR=%q\nPGB_PORT=%q\n' "$dir" "$listen" >"$STATE_FILE"
  (cd "$dir" && as_owner "$bin" -d "$dir/pgbouncer.ini") >"$dir/start.log" 2>&1 || {
    cat "$dir/start.log" "$dir/pgbouncer.log" >&2 2>/dev/null || true
    die "pgbouncer did not start"
  }
  local i
  for ((i = 0; i < 100; i++)); do
    port_in_use "$listen" && break
    sleep 0.05
  done
  port_in_use "$listen" || die "pgbouncer is not accepting connections on 127.0.0.1:$listen"
  trap - ERR
  echo "postgres://$user@127.0.0.1:$listen/$db"
}

cmd_stop() {
  if ! read_state; then
    rm -f "$STATE_FILE"
    return 0
  fi
  if [[ -f "$PGB_DIR/pgbouncer.pid" ]]; then
    local pid
    pid="$(cat "$PGB_DIR/pgbouncer.pid")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null; then
      local i
      for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
    fi
  fi
  case "$PGB_DIR" in
  /tmp/onceq-pgb.*) rm -rf -- "$PGB_DIR" ;;
  *) echo "pgbouncer: not deleting unexpected directory '$PGB_DIR'" >&2 ;;
  esac
  rm -f "$STATE_FILE"
}

case "${1:-}" in
start) cmd_start "${2:-}" "${3:-}" ;;
stop) cmd_stop ;;
*)
  echo "usage: $0 start POSTGRES_URL [transaction|session] | stop" >&2
  exit 2
  ;;
esac
