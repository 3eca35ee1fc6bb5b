#!/bin/sh
# Last step of the offline build, as root inside the image's root filesystem: no cluster of Debian's own
# (postgresql-common makes one when the package is installed), the entrypoint, the data and socket folders.
set -eu
if [ -d /etc/postgresql/15/main ]; then pg_dropcluster 15 main; fi
install -m 0755 /tmp/il-image/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
install -d -o postgres -g postgres -m 2775 /var/run/postgresql
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    /var/cache/debconf/*-old /var/lib/dpkg/*-old /var/log/apt/* /var/log/*.log /var/log/postgresql/*
