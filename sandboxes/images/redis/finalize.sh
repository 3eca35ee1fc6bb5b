#!/bin/sh
# Last step of the offline build, as root inside the image's root filesystem: the entrypoint, /data.
set -eu
install -m 0755 /tmp/il-image/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
install -d -o redis -g redis -m 0750 /data
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    /var/cache/debconf/*-old /var/lib/dpkg/*-old /var/log/apt/* /var/log/*.log
