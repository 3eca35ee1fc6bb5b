#!/bin/sh
# Last step of the offline build of the service image, as root inside its root filesystem (chroot):
# this project and its dependencies, from the wheels the host downloaded into /tmp/il-wheels
# (the project's wheel and exactly what pip resolved for it), into the virtualenv the root
# Dockerfile also uses. The build removes /tmp/il-* afterwards.
set -eu

python3 -m venv /opt/integritylab
/opt/integritylab/bin/pip install --no-index --no-deps --no-compile --disable-pip-version-check -q /tmp/il-wheels/*.whl
/opt/integritylab/bin/pip check
/opt/integritylab/bin/integritylab --help >/dev/null
install -d -m 0755 /data

# Bytecode: file mtimes in the image may be clamped, which would make timestamp-checked .pyc files
# look stale on every import of every container start; unchecked-hash .pyc files are always used.
python3 -m compileall -q -f -j 0 --invalidation-mode unchecked-hash \
    /usr/lib/python3.11 /usr/lib/python3/dist-packages /opt/integritylab/lib/python3.11/site-packages >/dev/null \
  || echo "finalize: compileall could not compile some files (they are compiled when imported, if ever)"

rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    /var/cache/debconf/*-old /var/lib/dpkg/*-old /var/log/apt/* /var/log/*.log /root/.cache
