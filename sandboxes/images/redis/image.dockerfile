# Redis from Debian bookworm's redis-server, for docker-compose.yml on a machine without a registry
# (INTEGRITYLAB_REDIS_IMAGE=integritylab/redis:latest; elsewhere the compose file uses the upstream redis:7).
# It takes what the upstream image takes: `redis-server [config] [--options]` runs as the redis user
# in /data (append-only file there), with protected mode off; redis-cli answers the healthcheck.
#
# Not a Dockerfile to build: the image configuration (Dockerfile syntax) that the offline build
# (`integritylab images build --offline --only redis`: mmdebstrap with debian-packages.txt and
# dpkg-excludes, then finalize.sh, then `docker import`) applies with --change, plus its LABELs.
# On a machine with a registry the compose file uses the upstream redis:7 instead; there is no
# registry build of this one.

ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV LANG=C.UTF-8
LABEL org.opencontainers.image.title=integritylab-redis
LABEL org.opencontainers.image.description="Debian bookworm redis-server, entrypoint like the upstream redis image"
WORKDIR /data
VOLUME /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
