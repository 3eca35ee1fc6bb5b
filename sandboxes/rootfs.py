"""The sandbox image's root filesystem as a plain directory, so bubblewrap runs what Docker runs.

Why: a verdict must not depend on the backend. Over the host's ``/usr`` a
bubblewrap run met the host's Debian Python (no scipy, no scikit-learn), while a
Docker run met the image's pinned wheels. Over this directory both backends run
the same Python, the same packages at the same versions and the same tools.

Where the directory comes from (:func:`prepare_rootfs`):

* ``docker-export`` — the files of ``integritylab/sandbox:latest``, when a Docker
  engine holds that image built from the current definition (exactly the image;
  ~15 s for ~1 GB);
* ``mmdebstrap`` — otherwise the image's own offline recipe written as a
  directory (:func:`sandboxes.imagebuild.sandbox_rootfs_directory`), which needs
  no Docker engine: the Debian mirror and PyPI only.

Reuse. It lives at ``<parent>/sandbox-<inputs hash[:12]>`` (the image
definition's :func:`~sandboxes.imagebuild.inputs_hash`), with a marker file
written last, so a half-written directory is never used; a changed definition
means a new directory, and preparing it removes the older ones. ``<parent>``:
``INTEGRITYLAB_ROOTFS_DIR``, else ``/var/cache/integritylab/rootfs`` when root
(bwrap then runs as ``nobody``, who cannot traverse root's 0700 home), else the
user's cache directory.

Which root bubblewrap uses is :func:`bwrap_root`: ``INTEGRITYLAB_BWRAP_ROOT`` =
``auto`` (default: the prepared directory, else the host's, saying so), ``image``
(the prepared directory or nothing) or ``host``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from sandboxes.base import SandboxUnavailable

ROOTFS_DIR_ENV = "INTEGRITYLAB_ROOTFS_DIR"
ROOT_CHOICE_ENV = "INTEGRITYLAB_BWRAP_ROOT"
ROOT_CHOICES = ("auto", "image", "host")
MARKER = ".integritylab-rootfs.json"
IMAGE_NAME = "sandbox"
PREPARE_HINT = "integritylab sandbox prepare"
Log = Callable[[str], None]


class RootfsError(RuntimeError):
    """Preparing the directory failed; the message names the step."""


class RootfsInfo(BaseModel):
    """What the marker file records about a prepared root filesystem."""

    path: str
    image: str = IMAGE_NAME
    inputs_hash: str
    source: str  # "docker-export" | "mmdebstrap"
    image_id: str = ""
    size_bytes: int = 0
    seconds: float = 0.0
    created: str = ""


@dataclass(frozen=True)
class BwrapRoot:
    """The root a bubblewrap sandbox mounts its system directories from, and why."""

    path: Path | None  # None: the host's own /usr, /etc
    note: str

    @property
    def kind(self) -> str:
        return "host" if self.path is None else "image"


def rootfs_parent() -> Path:
    env = os.environ.get(ROOTFS_DIR_ENV)
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/integritylab/rootfs")
    from sandboxes.imagebuild import cache_dir

    return cache_dir() / "rootfs"


@lru_cache(maxsize=1)
def wanted_hash() -> str:
    """The sandbox image definition's inputs hash (computed once per process: it reads ~5 small files)."""
    from sandboxes.imagebuild import IMAGES, inputs_hash

    return inputs_hash(IMAGES[IMAGE_NAME])


def rootfs_path(digest: str | None = None) -> Path:
    return rootfs_parent() / f"{IMAGE_NAME}-{(digest or wanted_hash())[:12]}"


def current_rootfs() -> RootfsInfo | None:
    """The prepared directory for the current image definition, or None if there is none (yet)."""
    try:
        path = rootfs_path()
        raw = (path / MARKER).read_text()
    except (OSError, RuntimeError):
        return None
    try:
        info = RootfsInfo.model_validate_json(raw)
    except ValueError:
        return None
    return info if info.inputs_hash == wanted_hash() else None


def bwrap_root() -> BwrapRoot:
    """The root the bubblewrap backend should use now (see the module docstring)."""
    choice = (os.environ.get(ROOT_CHOICE_ENV) or "auto").strip().lower()
    if choice not in ROOT_CHOICES:
        raise SandboxUnavailable(f"{ROOT_CHOICE_ENV}={choice!r}: expected one of {', '.join(ROOT_CHOICES)}")
    if choice == "host":
        return BwrapRoot(None, f"the host's /usr and /etc ({ROOT_CHOICE_ENV}=host)")
    info = current_rootfs()
    if info is not None:
        return BwrapRoot(Path(info.path), f"the sandbox image's root filesystem ({info.source}, {info.inputs_hash[:12]})")
    missing = f"the sandbox image's root filesystem is not prepared at {rootfs_path()}: run `{PREPARE_HINT}`"
    if choice == "image":
        raise SandboxUnavailable(missing)
    return BwrapRoot(None, f"the host's /usr and /etc, not the Docker image's ({missing})")


def _export_from_docker(target: Path, log: Log) -> str | None:
    """Unpack the current sandbox image into ``target``; None when no engine holds a current image."""
    try:
        import docker  # noqa: F401 - the SDK is a dependency; an engine may still be absent

        from sandboxes.imagebuild import IMAGES, LABEL_INPUTS, ImageBuildError, engine, image_labels
    except ImportError:
        return None
    try:
        client = engine()
    except ImageBuildError as exc:
        log(f"no Docker engine ({exc}); writing the root filesystem with mmdebstrap instead")
        return None
    image = IMAGES[IMAGE_NAME]
    labels = image_labels(client, image.ref)
    if labels is None or labels.get(LABEL_INPUTS) != wanted_hash():
        log(f"{image.ref} is missing or not built from the current definition; using mmdebstrap instead "
            "(or run `integritylab images build` first)")
        return None
    container = client.containers.create(image.ref, command=["true"])
    try:
        log(f"exporting {image.ref} ({container.image.short_id}) into {target}")
        target.mkdir(parents=True)
        tar = subprocess.Popen(
            ["tar", "-x", "--numeric-owner", "-C", str(target)], stdin=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert tar.stdin is not None
        try:
            for chunk in container.export(chunk_size=1 << 20):
                tar.stdin.write(chunk)
        finally:
            tar.stdin.close()
            stderr = tar.stderr.read().decode(errors="replace") if tar.stderr else ""
            code = tar.wait()
        if code != 0:
            raise RootfsError(f"tar could not unpack the exported image into {target}: {stderr.strip()[-400:]}")
        return str(container.image.id)
    finally:
        container.remove(force=True)


def _finish_tree(target: Path) -> None:
    """Docker's own marker file is not part of the image's environment."""
    (target / ".dockerenv").unlink(missing_ok=True)


def _tree_size(target: Path) -> int:
    out = subprocess.run(["du", "-sb", str(target)], capture_output=True, text=True, check=False)
    try:
        return int(out.stdout.split()[0])
    except (IndexError, ValueError):
        return 0


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False)


def prepare_rootfs(*, source: str = "auto", force: bool = False,
                   log: Log = lambda _m: None) -> tuple[RootfsInfo, str]:
    """Make sure the directory for the current definition exists; returns it and "reused" or "prepared".

    ``source``: ``auto`` (export from Docker when it holds the current image, else
    mmdebstrap), ``docker`` or ``mmdebstrap``.
    """
    if source not in ("auto", "docker", "mmdebstrap"):
        raise RootfsError(f"unknown source {source!r}: expected auto, docker or mmdebstrap")
    current = current_rootfs()
    if current is not None and not force:
        log(f"{current.path}: current ({current.source}, {current.inputs_hash[:12]}), reusing")
        return current, "reused"
    digest = wanted_hash()
    final = rootfs_path(digest)
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    os.chmod(parent, 0o755)  # bwrap may run as another uid: it must traverse to the tree
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=parent))
    staging.rmdir()  # mmdebstrap and the export both want to create the directory themselves
    t0 = time.monotonic()
    try:
        image_id = _export_from_docker(staging, log) if source in ("auto", "docker") else None
        if image_id is None:
            if source == "docker":
                raise RootfsError("no Docker engine holds a current integritylab/sandbox image "
                                  "(run `integritylab images build` first, or use --from mmdebstrap)")
            from sandboxes.imagebuild import ImageBuildError, sandbox_rootfs_directory

            try:
                sandbox_rootfs_directory(staging, log)
            except ImageBuildError as exc:
                raise RootfsError(str(exc)) from exc
        _finish_tree(staging)
        os.chmod(staging, 0o755)
        info = RootfsInfo(
            path=str(final), inputs_hash=digest, source="docker-export" if image_id else "mmdebstrap",
            image_id=image_id or "", size_bytes=_tree_size(staging), seconds=round(time.monotonic() - t0, 1),
            created=time.strftime("%Y-%m-%d %H:%M:%S"),
        )
        (staging / MARKER).write_text(info.model_dump_json(indent=1))
        if final.exists():
            _remove_tree(final)
        staging.rename(final)
    except BaseException:
        _remove_tree(staging)
        raise
    for old in parent.glob(f"{IMAGE_NAME}-*"):
        if old != final and (old / MARKER).exists():
            log(f"removing the outdated {old}")
            _remove_tree(old)
    log(f"{final}: {info.size_bytes / 1e6:.0f} MB from {info.source} in {info.seconds:.0f} s")
    return info, "prepared"


def describe() -> dict[str, object]:
    """For ``sandbox prepare --check`` and docs: where the directory is, whether it is current."""
    info = current_rootfs()
    return {"path": str(rootfs_path()), "current": info is not None,
            **(json.loads(info.model_dump_json()) if info else {})}


__all__ = ["BwrapRoot", "RootfsError", "RootfsInfo", "bwrap_root", "current_rootfs", "prepare_rootfs", "rootfs_path"]
