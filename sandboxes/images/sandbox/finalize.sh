#!/bin/sh
# Last step of both builds (Dockerfile RUN and the offline mmdebstrap customize hook):
# runs as root inside the image's root filesystem. The sandbox runs with a read-only
# root, so everything it needs at run time must exist now.
set -eu

# the unprivileged user every sandbox command runs as
groupadd --gid 1000 agent
useradd --uid 1000 --gid 1000 --home-dir /workspace --no-create-home --shell /bin/bash agent
# mount point of the per-run workspace (a read-only root cannot create it later)
install -d -o 1000 -g 1000 -m 0755 /workspace

# Bytecode: file mtimes in the image may be clamped, which would make timestamp-checked
# .pyc files look stale on every import (and a read-only root cannot rewrite them).
# unchecked-hash .pyc files are always used.
python3 -m compileall -q -f -j 0 --invalidation-mode unchecked-hash \
    /usr/lib/python3.11 /usr/lib/python3/dist-packages /usr/local/lib/python3.11/dist-packages >/dev/null

rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    /var/cache/debconf/*-old /var/lib/dpkg/*-old /var/log/apt/* /var/log/*.log
