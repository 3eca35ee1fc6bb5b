# The integritylab service image: the API, the Celery worker, beat, the one-shot migration and Flower
# all run from it with different commands (see docker-compose.yml and the README's "Service" section).
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    INTEGRITYLAB_DATA_DIR=/data

# bubblewrap and Debian's scientific Python: the sandbox backend for a worker that has no Docker engine
# (the compose file gives the worker the host's engine instead, through /var/run/docker.sock)
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap python3 python3-numpy python3-pandas python3-matplotlib \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY orchestrator ./orchestrator
COPY agents ./agents
COPY sandboxes ./sandboxes
COPY scenarios ./scenarios
COPY judges ./judges
COPY annotation ./annotation
RUN pip install '.[service]'

VOLUME /data
EXPOSE 8000 5555
ENTRYPOINT ["integritylab"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
