# The integritylab service image: the API, the Celery worker, beat, the one-shot migration and Flower
# all run from it with different commands (see docker-compose.yml and the README's "Service" section).
#
# Normal build (needs a registry for the python base image):  docker compose build  (or: docker build .)
# No registry (mmdebstrap + docker import):   integritylab images build --offline --only service
# Both install the Debian packages of sandboxes/images/service/debian-packages.txt and this project
# with its "service" extra into the virtualenv /opt/integritylab; the offline build also applies this
# file's final-stage ENV, WORKDIR, EXPOSE, VOLUME, ENTRYPOINT, CMD and LABEL lines.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

COPY sandboxes/images/service/debian-packages.txt /tmp/debian-packages.txt
RUN apt-get update \
 && grep -v -e '^#' -e '^$' /tmp/debian-packages.txt | DEBIAN_FRONTEND=noninteractive xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/debian-packages.txt

COPY . /tmp/integritylab-src
RUN python3 -m venv /opt/integritylab \
 && /opt/integritylab/bin/pip install --no-cache-dir --disable-pip-version-check '/tmp/integritylab-src[service]' \
 && rm -rf /tmp/integritylab-src \
 && install -d -m 0755 /data

ENV PATH=/opt/integritylab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV LANG=C.UTF-8
ENV PYTHONUNBUFFERED=1
ENV INTEGRITYLAB_DATA_DIR=/data
LABEL org.opencontainers.image.title=integritylab
LABEL org.opencontainers.image.description="integritylab service: API, Celery worker, beat, migrations, Flower"
WORKDIR /data
VOLUME /data
EXPOSE 8000 5555
ENTRYPOINT ["integritylab"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
