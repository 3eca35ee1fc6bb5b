#!/bin/sh
# What the upstream postgres image's entrypoint does, for Debian's PostgreSQL 15 (the variables
# docker-compose.yml and most users set):
#   [postgres] [-c name=value ...]   on the first start (an empty $PGDATA): initdb with POSTGRES_USER
#   (default postgres) and POSTGRES_PASSWORD, CREATE DATABASE POSTGRES_DB (default the user), password
#   (scram-sha-256) for connections over the network, trust on the local socket; then the server,
#   as the postgres user, listening on every address. Anything else runs as given.
set -eu
PGBIN=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
case "${1:-}" in -*|"") set -- postgres "$@" ;; esac
if [ "$1" != postgres ]; then
  exec "$@"
fi
if [ "$(id -u)" = 0 ]; then
  install -d -o postgres -g postgres -m 0700 "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
shift

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo "error: the database is uninitialized and POSTGRES_PASSWORD is not set" \
      "(or set POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one)" >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, as upstream
  "$PGBIN/initdb" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$auth" \
    --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  printf 'host all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  # a private socket and no TCP while initialising: the healthcheck (pg_isready) says "ready" only
  # once the real server runs
  initsock="$(mktemp -d)"
  "$PGBIN/pg_ctl" -D "$PGDATA" -w -s -o "-c listen_addresses='' -c unix_socket_directories=$initsock" start
  if [ "$db" != postgres ]; then
    echo 'CREATE DATABASE :"db";' | "$PGBIN/psql" -h "$initsock" -U "$user" -d postgres -v ON_ERROR_STOP=1 -q -v db="$db"
  fi
  "$PGBIN/pg_ctl" -D "$PGDATA" -w -s -m fast stop
  rmdir "$initsock"
  echo "postgres: initialised $PGDATA (user $user, database $db)"
fi
exec "$PGBIN/postgres" "$@"
