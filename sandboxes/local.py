"""The ``local`` backend: plain host subprocesses in a temporary directory.

WARNING: this gives NO isolation. Commands run as the orchestrator's own user
with full access to the host filesystem and network; only the working
directory, environment, timeout, output caps and a few rlimits are managed.
It exists for development on machines without bubblewrap or Docker and is
never picked automatically (see :data:`sandboxes.registry.AUTO_ORDER`).

Path convention: ``/workspace`` (and anything under it) in ``cwd`` maps to the
sandbox's temporary directory, and ``HOME`` points there; a command that
spells out ``/workspace/...`` in its own arguments still means the host path.
"""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

from sandboxes import hostfs
from sandboxes.base import WORKSPACE, ExecResult, SandboxBackend, SandboxSpec
from sandboxes.process import BASE_ENV, run_process, validate_env
from sandboxes.registry import register_backend

_MIB = 1024 * 1024


@register_backend("local")
class LocalBackend(SandboxBackend):
    """Unisolated subprocess backend, for development only."""

    isolated = False

    def __init__(self, temp_root: str | Path | None = None) -> None:
        self.temp_root = Path(temp_root) if temp_root is not None else None

    def available(self) -> tuple[bool, str]:
        return True, "runs commands directly on the host with NO isolation (development only)"

    def create(self, spec: SandboxSpec) -> LocalSandbox:
        return LocalSandbox(spec, temp_root=self.temp_root)


class LocalSandbox(hostfs.HostWorkspaceSandbox):
    """A temporary host directory standing in for /workspace. Not a security boundary."""

    backend = "local"

    def __init__(self, spec: SandboxSpec, *, temp_root: Path | None = None) -> None:
        super().__init__(spec, prefix="il-local-", temp_root=temp_root)
        # per-sandbox TMPDIR so temporary files go away with the sandbox
        self.host_tmp = self.host_dir / "tmp"
        self.host_tmp.mkdir(mode=0o700)

    def _host_cwd(self, cwd: str) -> str:
        """Map a sandbox cwd to the host: /workspace[/...] and relative paths go to the temp dir."""
        if not isinstance(cwd, str) or not cwd or "\x00" in cwd:
            raise ValueError(f"invalid cwd {cwd!r}")
        if cwd.startswith("/") and not (cwd == WORKSPACE or cwd.startswith(WORKSPACE + "/")):
            return cwd
        try:
            parts = hostfs.workspace_parts(cwd)
        except IsADirectoryError:
            return str(self.host_workspace)
        return str(self.host_workspace.joinpath(*parts))

    def exec(
        self,
        cmd: list[str],
        *,
        timeout: float | None = None,
        stdin: str | bytes | None = None,
        cwd: str = WORKSPACE,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        timeout = self._begin_exec(cmd, timeout)
        limits = self.spec.limits
        host_cwd = self._host_cwd(cwd)
        base = {
            **BASE_ENV,
            "PATH": os.environ.get("PATH", BASE_ENV["PATH"]),
            "HOME": str(self.host_workspace),
            "TMPDIR": str(self.host_tmp),
        }
        full_env = validate_env({**base, **self.spec.env, **(env or {})})
        # no RLIMIT_NPROC: it counts every process of the (shared, real) host user
        rlimits = {
            resource.RLIMIT_AS: limits.memory_mb * _MIB,
            resource.RLIMIT_FSIZE: limits.file_size_mb * _MIB,
            resource.RLIMIT_CPU: limits.cpu_seconds,
            resource.RLIMIT_CORE: 0,
        }
        if "/" not in cmd[0] and shutil.which(cmd[0], path=full_env.get("PATH", "")) is None:
            # checked up front: execvp reports EACCES if any PATH entry is unreadable
            return ExecResult(exit_code=127, stdout="", stderr=f"local: {cmd[0]}: command not found\n")
        try:
            outcome = run_process(
                cmd,
                timeout=timeout,
                output_cap=limits.output_cap_bytes,
                stdin=stdin,
                cwd=host_cwd,
                env=full_env,
                rlimits=rlimits,
                tracker=self._tracker,
            )
        except OSError as exc:
            # same conventions as a shell (and the bwrap backend): report, don't raise
            if exc.filename == host_cwd:
                code, what = 1, f"cannot change directory to {cwd}"
            else:
                code = 126 if isinstance(exc, PermissionError) else 127
                what = f"cannot execute {cmd[0]}"
            return ExecResult(exit_code=code, stdout="", stderr=f"local: {what}: {exc.strerror}\n")
        return ExecResult(
            exit_code=outcome.returncode,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated,
            duration_s=outcome.duration_s,
        )
