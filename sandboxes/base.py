"""The ``Sandbox`` interface every backend implements.

Required of every backend: ``exec``, ``read_file``, ``write_file``, ``collect``
and ``destroy``. A sandbox is created by its backend's ``create`` from a
:class:`SandboxSpec` and owns one writable ``/workspace`` for one run. Nothing
else on the host is visible inside it; the hidden rubric never enters it.

Limits every backend honours (or documents why it cannot):

* ``exec`` never blocks longer than its timeout (+ a short grace period to
  kill): on timeout the whole process tree is killed and ``timed_out`` is set;
  output captured up to then is kept.
* stdout and stderr are each capped at ``limits.output_cap_bytes``; the excess is
  dropped (never buffered in memory) and ``truncated`` is set.
* ``read_file``/``write_file`` take paths relative to ``/workspace`` (or
  absolute under it) and refuse anything that resolves outside it, including via
  symlinks.
* ``collect`` copies regular files only: symlinks, hard-linked files, devices
  and anything whose name would escape the destination are skipped and listed.
"""

from __future__ import annotations

import abc
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

WORKSPACE = "/workspace"
#: where a run's model gateway socket (``SandboxSpec.gateway_socket``) appears inside the sandbox
GATEWAY_SOCKET = "/run/integritylab/gateway.sock"


class SandboxError(RuntimeError):
    """A failure of the sandbox layer itself (not of the command run inside it)."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this host; the message says what to install or start."""


class SandboxLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_mb: int = Field(default=1024, gt=0)
    pids: int = Field(default=256, gt=0)
    file_size_mb: int = Field(default=256, gt=0)
    cpu_seconds: int = Field(default=600, gt=0)
    tmp_size_mb: int = Field(default=256, gt=0)
    # size quota of /workspace where the backend can enforce one (see sandboxes.hostfs)
    workspace_mb: int = Field(default=1024, gt=0)
    command_timeout_s: float = Field(default=60.0, gt=0)
    output_cap_bytes: int = Field(default=256 * 1024, gt=0)


class SandboxSpec(BaseModel):
    """What to create: the run it belongs to, an image (backend-specific), and limits."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    image: str | None = None
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    env: dict[str, str] = Field(default_factory=dict)
    # host path of the run's model gateway Unix socket, bind-mounted read-write at GATEWAY_SOCKET
    gateway_socket: Path | None = None


class ExecResult(BaseModel):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass
class CollectedFile:
    path: str  # relative to /workspace
    host_path: Path
    size: int


@dataclass
class CollectResult:
    files: list[CollectedFile] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why


class Sandbox(abc.ABC):
    """One isolated workspace for one run. Use as a context manager to always destroy it."""

    backend: str = "abstract"

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        _LIVE.add(self)

    @property
    def environment(self) -> tuple[str, str]:
        """(cache key, description) of the system files this sandbox runs: equal keys, equal environments.

        The environment fingerprint (:mod:`sandboxes.fingerprint`) is measured once per key and process.
        """
        return self.backend, f"the {self.backend} backend"

    @abc.abstractmethod
    def exec(
        self,
        cmd: list[str],
        *,
        timeout: float | None = None,
        stdin: str | bytes | None = None,
        cwd: str = WORKSPACE,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run ``cmd`` inside the sandbox. Raises :class:`SandboxError` only for sandbox failures."""

    @abc.abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file under /workspace (parents created)."""

    @abc.abstractmethod
    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a regular file under /workspace. Raises FileNotFoundError / PermissionError."""

    @abc.abstractmethod
    def collect(self, dest: Path) -> CollectResult:
        """Copy every regular file of /workspace into ``dest`` (see module doc for what is skipped)."""

    @abc.abstractmethod
    def destroy(self) -> None:
        """Kill anything still running and remove the workspace. Idempotent."""

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()


_LIVE: weakref.WeakSet[Sandbox] = weakref.WeakSet()


def live_sandboxes() -> list[Sandbox]:
    """Every sandbox of this process not yet garbage-collected (destroyed ones too: ``destroy`` is idempotent).

    For a forced exit: destroying them all leaves no container or sandbox process behind.
    """
    return list(_LIVE)


class SandboxBackend(abc.ABC):
    """A way of making sandboxes. Registered by name in :mod:`sandboxes.registry`."""

    name: str = "abstract"
    isolated: bool = True
    #: whether ``SandboxSpec.image`` selects the root filesystem (agents that need their own image need this)
    runs_images: bool = False

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether this backend can run here, and if not, what to install or start."""

    @abc.abstractmethod
    def create(self, spec: SandboxSpec) -> Sandbox:
        """Make a fresh sandbox with an empty /workspace."""
