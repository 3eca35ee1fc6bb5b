"""An environment's fingerprint: Python, packages with versions, tools and OS, measured inside a sandbox.

Why: two runs of one scenario can only be compared when they met the same
environment. The fingerprint is measured from inside (what the agent's code
meets), not read from a build label, so it is the same check for every backend,
and its digest is what runs record and what ``sandbox selftest`` prints.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from pydantic import BaseModel

from sandboxes.base import Sandbox, SandboxError

# what agents reach for (docs/sandbox-environment.md); the fingerprint lists those present
TOOLS = ("bash", "sh", "python", "python3", "pip", "git", "curl", "wget", "jq", "rg", "unzip", "zip",
         "tar", "gzip", "sed", "awk", "grep", "find", "ps", "pdflatex", "latexmk")

_PROBE = f"""
import json, platform, shutil
from importlib import metadata
packages = {{}}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        packages[name.lower().replace("_", "-")] = dist.version
release = {{}}
try:
    for line in open("/etc/os-release"):
        key, _, value = line.strip().partition("=")
        release[key] = value.strip('"')
except OSError:
    pass
print(json.dumps({{
    "python": platform.python_version(),
    "os": release.get("PRETTY_NAME", ""),
    "packages": dict(sorted(packages.items())),
    "tools": [t for t in {TOOLS!r} if shutil.which(t)],
}}))
"""


class EnvironmentFingerprint(BaseModel):
    """What a sandbox's code meets; ``digest`` is over everything else, so equal digests mean equal environments."""

    python: str
    os: str
    packages: dict[str, str]
    tools: list[str]
    digest: str = ""

    def model_post_init(self, _context: object) -> None:
        if not self.digest:
            self.digest = fingerprint_digest(self)

    def differences(self, other: EnvironmentFingerprint) -> list[str]:
        """What differs, one line each ("scipy: 1.16.3 vs missing"), for error messages and reports."""
        out: list[str] = []
        for field in ("python", "os"):
            if getattr(self, field) != getattr(other, field):
                out.append(f"{field}: {getattr(self, field)} vs {getattr(other, field)}")
        for name in sorted(set(self.packages) | set(other.packages)):
            mine, theirs = self.packages.get(name, "missing"), other.packages.get(name, "missing")
            if mine != theirs:
                out.append(f"{name}: {mine} vs {theirs}")
        for tool in sorted(set(self.tools) ^ set(other.tools)):
            out.append(f"tool {tool}: {'present' if tool in self.tools else 'missing'} vs "
                       f"{'present' if tool in other.tools else 'missing'}")
        return out


def fingerprint_digest(fp: EnvironmentFingerprint) -> str:
    body = json.dumps({"python": fp.python, "os": fp.os, "packages": fp.packages, "tools": sorted(fp.tools)},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def measure(box: Sandbox, timeout: float = 60.0) -> EnvironmentFingerprint:
    """Run the probe in ``box`` (python3, stdlib only); SandboxError says what the sandbox answered instead."""
    result = box.exec(["python3", "-I", "-c", _PROBE], timeout=timeout)
    if not result.ok:
        raise SandboxError(f"the environment probe failed in the sandbox (exit {result.exit_code}): "
                           f"{(result.stderr or result.stdout).strip()[-300:]}")
    try:
        return EnvironmentFingerprint.model_validate(json.loads(result.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError) as exc:
        raise SandboxError(f"the environment probe printed no fingerprint: {result.stdout[-300:]!r}") from exc


_measured: dict[str, EnvironmentFingerprint] = {}
_measured_lock = threading.Lock()


def run_environment(box: Sandbox) -> dict[str, Any]:
    """What a run records about its environment: the fingerprint (measured once per environment and
    process) and where the system files came from; a probe that fails is recorded as such, not raised."""
    key, where = box.environment
    with _measured_lock:
        known = _measured.get(key)
    record: dict[str, Any] = {"backend": box.backend, "where": where}
    if known is None:
        try:
            known = measure(box)
        except SandboxError as exc:
            return {**record, "error": str(exc)[:500]}
        with _measured_lock:
            _measured[key] = known
    return {**record, **known.model_dump()}


__all__ = ["TOOLS", "EnvironmentFingerprint", "fingerprint_digest", "measure", "run_environment"]
