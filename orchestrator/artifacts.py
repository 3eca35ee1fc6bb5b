"""A content-addressed store for files collected from runs (``<data>/artifacts/sha256/ab/cdef…``)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def artifact_kind(name: str) -> str:
    """What a collected file is, by its path in the workspace."""
    lower = name.lower()
    if lower == "report/report.md":
        return "report"
    if lower.endswith(".pdf"):
        return "pdf"
    if lower.endswith(".tex"):
        return "tex"
    if lower.endswith((".png", ".svg", ".jpg", ".jpeg")):
        return "figure"
    if name == "manifest.json":
        return "manifest"
    return "file"


class ArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256 digest: {sha256!r}")
        return self.root / "sha256" / sha256[:2] / sha256[2:]

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_for(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        return digest

    def get(self, sha256: str) -> bytes:
        return self.path_for(sha256).read_bytes()
