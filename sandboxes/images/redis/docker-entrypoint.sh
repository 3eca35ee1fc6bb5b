#!/bin/sh
# What the upstream redis image's entrypoint does, for Debian's redis-server:
#   [redis-server] [config-file] [--option value ...]   runs redis-server as the redis user in /data;
#   anything else runs as given (e.g. redis-cli).
# Debian builds redis with protected mode on (the upstream image patches it off): without a
# password it would refuse every client that is not on loopback, i.e. every other container.
set -eu
case "${1:-}" in
  -*|"") set -- redis-server "$@" ;;
  *.conf) set -- redis-server "$@" ;;
esac
if [ "$1" = redis-server ] || [ "$1" = /usr/bin/redis-server ]; then
  shift
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then  # a config file comes first; options after it win
    config=$1
    shift
    set -- "$config" --protected-mode no "$@"
  else
    set -- --protected-mode no "$@"
  fi
  if [ "$(id -u)" = 0 ]; then
    find . \! -user redis -exec chown redis:redis '{}' + 2>/dev/null || true
    exec setpriv --reuid=redis --regid=redis --init-groups redis-server "$@"
  fi
  exec redis-server "$@"
fi
exec "$@"
