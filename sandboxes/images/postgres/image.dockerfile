# PostgreSQL 15 from Debian bookworm, for docker-compose.yml on a machine without a registry
# (INTEGRITYLAB_POSTGRES_IMAGE=integritylab/postgres:latest; elsewhere the compose file uses the upstream
# postgres:16). It takes what the upstream image takes for a first start: POSTGRES_PASSWORD (required,
# or POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER, POSTGRES_DB, POSTGRES_INITDB_ARGS, PGDATA
# (default /var/lib/postgresql/data); `postgres [-c name=value ...]` runs the server as the postgres user,
# listening on every address; pg_isready (on PATH) answers the healthcheck over the local socket.
#
# Not a Dockerfile to build: the image configuration (Dockerfile syntax) that the offline build
# (`integritylab images build --offline --only postgres`: mmdebstrap with debian-packages.txt and
# dpkg-excludes, then finalize.sh, then `docker import`) applies with --change, plus its LABELs.
# On a machine with a registry the compose file uses the upstream postgres:16 instead; there is no
# registry build of this one.

ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV LANG=C.UTF-8
ENV PGDATA=/var/lib/postgresql/data
LABEL org.opencontainers.image.title=integritylab-postgres
LABEL org.opencontainers.image.description="Debian bookworm PostgreSQL 15, entrypoint like the upstream postgres image"
VOLUME /var/lib/postgresql/data
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
