#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite.
#
#   scripts/pg-cluster.sh start   # initdb + start, prints the URL
#   scripts/pg-cluster.sh url     # prints the URL of the running cluster
#   scripts/pg-cluster.sh stop    # stops it and deletes every file (idempotent)
#
# Everything (data dir, unix socket, log) lives under one fresh `mktemp -d`
# directory. The cluster listens on 127.0.0.1 on the first free port from
# 54330 upward (never the system's 5432) and on a socket in that directory.
# Auth is `trust` for the local user `onceq`; the database is `onceq_test`.
#
# State (directory, port, bin dir) is kept in $ONCEQ_PG_STATE, default
# ${TMPDIR:-/tmp}/onceq-pg-<uid>.state, so `stop` finds what `start` made.
# scripts/test.sh sets ONCEQ_PG_STATE to a file of its own so parallel runs
# never share a cluster.
#
# ONCEQ_PG_MAX_CONNECTIONS sets the server's max_connections (default 100, PostgreSQL's
# own default): the connection-budget tests start a small cluster of their own with it.
#
# TLS: with ONCEQ_PG_SSL_CERT and ONCEQ_PG_SSL_KEY naming a PEM certificate and its key,
# the cluster runs with `ssl = on` and serves that certificate (copied into the cluster's
# directory, owned by the server's user); plain connections are still accepted.
#
# PostgreSQL refuses to run as root: as root the server runs as the `postgres`
# OS user (ONCEQ_PG_OS_USER overrides) through `runuser`; as any other user it
# runs directly.
#
# Exit codes: 0 ok, 1 failure, 3 no PostgreSQL server binaries found.
set -euo pipefail

STATE_FILE="${ONCEQ_PG_STATE:-${TMPDIR:-/tmp}/onceq-pg-$(id -u).state}"
PG_OS_USER="${ONCEQ_PG_OS_USER:-postgres}"
DB_USER="onceq"
DB_NAME="onceq_test"
FIRST_PORT="${ONCEQ_PG_FIRST_PORT:-54330}"
SSL_CERT="${ONCEQ_PG_SSL_CERT:-}"
SSL_KEY="${ONCEQ_PG_SSL_KEY:-}"
MAX_CONNECTIONS="${ONCEQ_PG_MAX_CONNECTIONS:-100}"
[[ "$MAX_CONNECTIONS" =~ ^[0-9]+$ ]] || { echo "pg-cluster: ONCEQ_PG_MAX_CONNECTIONS must be a whole number" >&2; exit 1; }

die() {
  echo "pg-cluster: $*" >&2
  exit 1
}

# Directory that holds initdb, pg_ctl and postgres: $PG_BINDIR, else PATH,
# else the newest /usr/lib/postgresql/<version>/bin.
find_bindir() {
  if [[ -n "${PG_BINDIR:-}" && -x "$PG_BINDIR/initdb" && -x "$PG_BINDIR/pg_ctl" ]]; then
    echo "$PG_BINDIR"
    return 0
  fi
  local initdb
  if initdb="$(command -v initdb 2>/dev/null)"; then
    local dir
    dir="$(dirname "$(readlink -f "$initdb")")"
    if [[ -x "$dir/pg_ctl" && -x "$dir/postgres" ]]; then
      echo "$dir"
      return 0
    fi
  fi
  local newest
  newest="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [[ -n "$newest" && -x "$newest/initdb" && -x "$newest/pg_ctl" ]]; then
    echo "$newest"
    return 0
  fi
  return 1
}

# Runs a server-side command as the user that may own the cluster.
as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u "$PG_OS_USER" -- "$@"
  else
    "$@"
  fi
}

port_in_use() {
  # Something accepts connections there (bash's /dev/tcp, no extra tools).
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

read_state() {
  [[ -f "$STATE_FILE" ]] || return 1
  # shellcheck disable=SC1090
  source "$STATE_FILE"
  [[ -n "${PGC_DIR:-}" && -n "${PGC_PORT:-}" && -n "${PGC_BINDIR:-}" ]]
}

url_of() {
  echo "postgres://$DB_USER@127.0.0.1:$1/$DB_NAME"
}

cmd_start() {
  if read_state && [[ -d "$PGC_DIR/data" ]]; then
    die "a cluster is already recorded in $STATE_FILE ($(url_of "$PGC_PORT")); run 'stop' first or set ONCEQ_PG_STATE"
  fi

  local bindir
  if ! bindir="$(find_bindir)"; then
    echo "pg-cluster: no PostgreSQL server binaries (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin" >&2
    exit 3
  fi

  if [[ "$(id -u)" -eq 0 ]] && ! id -u "$PG_OS_USER" >/dev/null 2>&1; then
    die "running as root needs the OS user '$PG_OS_USER' to run the server (set ONCEQ_PG_OS_USER)"
  fi

  # Short path under /tmp: unix socket paths are limited to ~100 bytes, and
  # /tmp is traversable by the postgres user when we start as root.
  local dir
  dir="$(mktemp -d /tmp/onceq-pg.XXXXXX)"
  mkdir -p "$dir/sock"
  local ssl_options=""
  if [[ -n "$SSL_CERT" || -n "$SSL_KEY" ]]; then
    [[ -r "$SSL_CERT" && -r "$SSL_KEY" ]] || die "ONCEQ_PG_SSL_CERT and ONCEQ_PG_SSL_KEY must both name readable files"
    cp -- "$SSL_CERT" "$dir/server.crt"
    cp -- "$SSL_KEY" "$dir/server.key"
    # The server refuses a key file that others can read.
    chmod 600 "$dir/server.key"
    ssl_options=" -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
  fi
  if [[ "$(id -u)" -eq 0 ]]; then
    chown -R "$PG_OS_USER" "$dir"
  fi
  chmod 700 "$dir"

  # Record the directory at once so `stop` can clean up a half-made cluster.
  printf 'PGC_DIR=%q\nPGC_PORT=%q\nPGC_BINDIR=%q\n' "$dir" "0" "$bindir" >"$STATE_FILE"

  # The server tools must not start in a directory the postgres user cannot
  # read (e.g. /root/...).
  cd "$dir"

  if ! as_owner "$bindir/initdb" -D "$dir/data" --auth=trust -U "$DB_USER" \
    --encoding=UTF8 --locale=C --no-instructions >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    cmd_stop
    die "initdb failed"
  fi

  # TEST CLUSTER ONLY: fsync/synchronous_commit/full_page_writes are off for
  # speed. The data is thrown away after the run, so durability across an OS
  # crash is irrelevant here; never use these settings for a real database.
  local port="$FIRST_PORT" tries=0 started=0
  while ((tries < 40)); do
    if ! port_in_use "$port"; then
      printf 'PGC_DIR=%q\nPGC_PORT=%q\nPGC_BINDIR=%q\n' "$dir" "$port" "$bindir" >"$STATE_FILE"
      if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=$MAX_CONNECTIONS$ssl_options" \
        start >"$dir/pg_ctl.log" 2>&1; then
        started=1
        break
      fi
      # Lost a race for the port (another run took it) or a real error:
      # the log says which; try the next port a few times.
      if ! grep -qiE 'address already in use|could not bind|could not create any TCP/IP sockets' "$dir/server.log" 2>/dev/null; then
        cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null || true
        cmd_stop
        die "the server did not start"
      fi
      : >"$dir/server.log"
    fi
    port=$((port + 1))
    tries=$((tries + 1))
  done
  if ((started == 0)); then
    cmd_stop
    die "no free port in $FIRST_PORT..$((FIRST_PORT + 39))"
  fi

  local createdb="$bindir/createdb"
  if [[ -x "$createdb" ]]; then
    "$createdb" -h 127.0.0.1 -p "$port" -U "$DB_USER" "$DB_NAME" || {
      cmd_stop
      die "createdb failed"
    }
  else
    local psql="$bindir/psql"
    [[ -x "$psql" ]] || psql="psql"
    "$psql" -h 127.0.0.1 -p "$port" -U "$DB_USER" -d postgres -qAtc "CREATE DATABASE $DB_NAME" || {
      cmd_stop
      die "CREATE DATABASE failed"
    }
  fi

  url_of "$port"
}

cmd_url() {
  read_state || die "no cluster recorded in $STATE_FILE"
  [[ "$PGC_PORT" != 0 ]] || die "the cluster in $STATE_FILE never started"
  url_of "$PGC_PORT"
}

cmd_stop() {
  if ! read_state; then
    rm -f "$STATE_FILE"
    return 0
  fi
  if [[ -f "$PGC_DIR/data/postmaster.pid" ]]; then
    # Throwaway data: `immediate` skips the shutdown checkpoint.
    (cd "$PGC_DIR" && as_owner "$PGC_BINDIR/pg_ctl" -D "$PGC_DIR/data" -m immediate -w -t 30 stop) \
      >/dev/null 2>&1 || true
  fi
  case "$PGC_DIR" in
  /tmp/onceq-pg.*) rm -rf -- "$PGC_DIR" ;;
  *) echo "pg-cluster: not deleting unexpected directory '$PGC_DIR'" >&2 ;;
  esac
  rm -f "$STATE_FILE"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
url) cmd_url ;;
*)
  echo "usage: $0 start|stop|url" >&2
  exit 2
  ;;
esac
