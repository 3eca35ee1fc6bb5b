"""Where a scenario folder keeps its files, and how workspace paths resolve without escaping.

A listed path must stay inside the scenario's ``workspace/`` folder (symlinks
included) and never name a rubric, or a run could leak the judges' checklist
or read files from elsewhere on disk.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath

SCENARIO_FILE = "scenario.yaml"
RUBRIC_FILE = "rubric.yaml"
WORKSPACE_DIR = "workspace"

# Build droppings that never enter a workspace and should not count as unlisted files.
IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store"})


def normalize_workspace_path(path: str) -> str:
    """Canonical spelling of a workspace path, so ``./a`` and ``a`` count as one."""
    return posixpath.normpath(path.replace("\\", "/")) if path else ""


def is_rubric_name(name: str) -> bool:
    """Any file named like a rubric stays out of workspaces, whatever its case or extension."""
    return name.lower().startswith("rubric")


def is_inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or below it (both already resolved)."""
    return path == folder or path.is_relative_to(folder)


def real_workspace(directory: Path) -> Path:
    """The workspace folder by its real parent, not resolved itself: a symlinked
    ``workspace/`` pointing elsewhere must count as escaping."""
    return directory.resolve() / WORKSPACE_DIR


def resolve_source(directory: Path, rel: str) -> tuple[Path | None, str | None]:
    """The real file behind ``workspace/<rel>``, or the reason it cannot be used."""
    if not rel or rel.startswith(("/", "\\")) or PurePosixPath(rel).is_absolute():
        return None, f"{rel!r} must be a path relative to the scenario's workspace/ folder"
    try:
        base = real_workspace(directory)
        real = (base / rel).resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        return None, f"cannot resolve workspace/{rel}: {exc}"
    if not is_inside(real, base) or real == base:
        return None, f"workspace/{rel} escapes the scenario's workspace/ folder"
    if not real.exists():
        return None, f"missing file workspace/{rel}"
    if not real.is_file():
        return None, f"workspace/{rel} is not a regular file"
    return real, None


def workspace_entries(directory: Path) -> list[Path]:
    """Every file and symlink under ``workspace/`` (symlinks are not followed)."""
    workspace = directory / WORKSPACE_DIR
    if not workspace.is_dir():
        return []
    entries: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(workspace, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        here = Path(dirpath)
        entries.extend(here / d for d in dirnames if (here / d).is_symlink())
        entries.extend(here / f for f in sorted(filenames) if f not in IGNORED_NAMES)
    return entries


def real_dir(directory: Path) -> Path:
    """A folder's identity, so two spellings of one folder compare equal."""
    try:
        return directory.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(directory))
