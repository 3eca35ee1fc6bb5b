"""Bubblewrap backend: each ``exec`` is one fresh, unprivileged ``bwrap`` sandbox.

Why bubblewrap: it needs no daemon and no root, starts in milliseconds and
gives us every namespace (no network, own pids, own mounts) on a stock Debian
host. The only persistent state is the workspace directory on the host, which
is bind-mounted at ``/workspace``; everything else a command sees is rebuilt per
exec: a read-only ``/usr`` (plus the ``/bin``-style links) and ``/etc``
taken from the sandbox image's root filesystem (:mod:`sandboxes.rootfs`, so the
Python, packages and tools are the Docker sandbox's; where it is not prepared, the
host's ``/usr`` and an allowlist of its ``/etc``, and the run says so), synthetic
``passwd``/``group``/``hosts``, fresh ``/proc`` and ``/dev``, and size-capped
tmpfs ``/tmp`` and ``/dev/shm``.

Privilege model. Inside, the command runs as uid/gid 1000 with no
capabilities and cannot create further user namespaces. When the host process
is root, bwrap itself is started as an unprivileged host uid
(:data:`SANDBOX_HOST_UID`, ``nobody`` by default) so that host files owned by
root appear as "nobody" inside and stay protected by ordinary permissions; the
workspace is chowned to that uid. When the host process is not root, bwrap
runs as the current user.

Limits are set on bwrap before it execs (inherited by everything in the
sandbox):

* a memory cgroup per sandbox, ``integritylab/<host dir name>`` (cgroup v1:
  ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` =
  ``memory_mb``; cgroup v2: ``memory.max`` = ``memory_mb``, ``memory.swap.max``
  = 0), when the orchestrator is root and a writable memory hierarchy exists
  (:func:`memory_cgroup_support`). bwrap joins it between fork and exec, so the
  limit is a total over every process of every exec of the sandbox (as with
  Docker's ``mem_limit``); exceeding it OOM-kills a process in the sandbox. The
  cgroup is removed on destroy. Without it (not root, no writable memory
  cgroup, or ``INTEGRITYLAB_BWRAP_CGROUP=off``) only the per-process
  RLIMIT_AS below applies.
* ``RLIMIT_AS = memory_mb`` per process (address space, not RSS; Debian's
  python3 importing numpy+pandas+matplotlib peaks at ~450 MiB of address
  space with BLAS threads capped at 4, so the 1 GiB default is enough). On its
  own it is not a total: N processes may each use up to the limit.
* a pids cgroup per sandbox (:func:`pids_cgroup_support`; v1: its own
  ``integritylab/<host dir name>`` under ``/sys/fs/cgroup/pids``, v2: the
  memory cgroup's directory): ``pids.max`` = ``pids`` + bwrap's own processes,
  a total over every exec of the sandbox, exactly as Docker's ``pids_limit``.
  Same conditions as the memory cgroup (root, a writable hierarchy, not
  switched off by ``INTEGRITYLAB_BWRAP_CGROUP``).
* ``RLIMIT_NPROC = pids`` + bwrap's own processes + the tasks the host uid
  already has, always (the only cap when there is no pids cgroup). The kernel
  counts NPROC per *host* uid, so concurrent sandboxes share one budget and it
  moves as other tasks of that uid come and go; the pre-existing count keeps
  one sandbox's processes from starving the next one at start-up, but a fork
  bomb in one sandbox can still make fork fail in another sandbox running at
  the same time (never on the host).
* ``RLIMIT_FSIZE``, ``RLIMIT_CPU`` (per process), ``RLIMIT_CORE = 0``.
* ``/tmp`` is a tmpfs of ``tmp_size_mb``; ``/dev/shm`` one of at most 64 MiB.
  The workspace is capped at ``workspace_mb`` when it can be a loop-mounted
  image (root, loop devices: see :mod:`sandboxes.hostfs`); otherwise it has no
  quota and only single files are capped by ``file_size_mb``.
"""

from __future__ import annotations

import json
import os
import posixpath
import resource
import shutil
import signal
import subprocess
import threading
import time
import weakref
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from sandboxes import hostfs
from sandboxes.base import (
    GATEWAY_SOCKET,
    WORKSPACE,
    ExecResult,
    SandboxBackend,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
)
from sandboxes.process import BASE_ENV, run_process, validate_env
from sandboxes.registry import register_backend
from sandboxes.rootfs import BwrapRoot, bwrap_root

BWRAP_CANDIDATES = ("/usr/bin/bwrap", "/usr/local/bin/bwrap")
INSTALL_HINT = "install bubblewrap: apt-get install bubblewrap"

# host uid/gid bwrap runs as when the orchestrator is root (65534 = nobody)
SANDBOX_HOST_UID = 65534
SANDBOX_HOST_GID = 65534
# uid/gid the command sees inside the sandbox
SANDBOX_UID = 1000
SANDBOX_GID = 1000
# outer bwrap + its pid-1 reaper inside the pid namespace (+1 slack)
BWRAP_PROCESS_OVERHEAD = 3
SHM_MAX_MB = 64

SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32")
ETC_ALLOWLIST = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/matplotlibrc",
    "/etc/fonts",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/mime.types",
)
SYNTHETIC_ETC: dict[str, str] = {
    "/etc/passwd": (
        f"agent:x:{SANDBOX_UID}:{SANDBOX_GID}:agent:{WORKSPACE}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "/etc/group": f"agent:x:{SANDBOX_GID}:\nnogroup:x:65534:\n",
    "/etc/hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "/etc/hostname": "sandbox\n",
    # only local files: there is no network, so DNS lookups would just time out
    "/etc/nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
}
# the image's account databases stay out (passwd and group are synthetic; shadow files are not needed)
HIDDEN_IMAGE_ETC = frozenset({"shadow", "gshadow", "shadow-", "gshadow-", "passwd-", "group-", "subuid", "subgid"})
# environment of the bwrap process itself (the command's env is passed via --args)
_BWRAP_PROCESS_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
_MIB = 1024 * 1024


# ---- memory cgroup per sandbox ------------------------------------------------------------

CGROUP_ENV = "INTEGRITYLAB_BWRAP_CGROUP"  # "off"/"0"/"false"/"no" forces the RLIMIT_AS-only fallback
CGROUP_PARENT = "integritylab"
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")
CGROUP_V1_PIDS = Path("/sys/fs/cgroup/pids")
CGROUP_V2_ROOT = Path("/sys/fs/cgroup")
CGROUP_RMDIR_WAIT_S = 5.0


def _fs_type(path: Path) -> str | None:
    best: tuple[int, str] | None = None
    target = str(path)
    for point, fstype, _src in hostfs.mounts():
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), fstype)
    return best[1] if best else None


def memory_cgroup_support() -> tuple[tuple[str, Path] | None, str]:
    """Where per-sandbox memory cgroups can be made: (("v1"|"v2", parent dir), why) or (None, why not)."""
    if os.environ.get(CGROUP_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return None, f"memory cgroup disabled by {CGROUP_ENV}; memory is capped per process (RLIMIT_AS) only"
    if os.geteuid() != 0:
        return None, "a memory cgroup needs root; memory is capped per process (RLIMIT_AS) only"
    if _fs_type(CGROUP_V1_MEMORY) == "cgroup" and (CGROUP_V1_MEMORY / "memory.limit_in_bytes").exists():
        parent = CGROUP_V1_MEMORY / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            return None, f"cannot create memory cgroup {parent}: {exc.strerror}; RLIMIT_AS only"
        return ("v1", parent), f"cgroup v1 memory cgroup under {parent}"
    if _fs_type(CGROUP_V2_ROOT) == "cgroup2":
        try:
            controllers = (CGROUP_V2_ROOT / "cgroup.controllers").read_text().split()
        except OSError:
            controllers = []
        if "memory" not in controllers:
            return None, "the cgroup v2 hierarchy has no memory controller; RLIMIT_AS only"
        parent = CGROUP_V2_ROOT / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
            for d in (CGROUP_V2_ROOT, parent):
                if "memory" not in (d / "cgroup.subtree_control").read_text().split():
                    (d / "cgroup.subtree_control").write_text("+memory")
        except OSError as exc:
            return None, f"cannot enable the memory controller for {parent}: {exc.strerror}; RLIMIT_AS only"
        return ("v2", parent), f"cgroup v2 memory cgroup under {parent}"
    return None, "no cgroup memory hierarchy at /sys/fs/cgroup; memory is capped per process (RLIMIT_AS) only"


def pids_cgroup_support() -> tuple[tuple[str, Path] | None, str]:
    """Where per-sandbox pids cgroups can be made: (("v1"|"v2", parent dir), why) or (None, why not).

    RLIMIT_NPROC counts every task of the host uid, so its budget moves when
    other processes of that uid come and go; a pids cgroup counts exactly the
    sandbox's own tasks, as Docker's ``pids_limit`` does.
    """
    if os.environ.get(CGROUP_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return None, f"pids cgroup disabled by {CGROUP_ENV}; processes are capped by RLIMIT_NPROC only"
    if os.geteuid() != 0:
        return None, "a pids cgroup needs root; processes are capped by RLIMIT_NPROC only"
    if _fs_type(CGROUP_V1_PIDS) == "cgroup" and (CGROUP_V1_PIDS / "cgroup.procs").exists():
        parent = CGROUP_V1_PIDS / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            return None, f"cannot create pids cgroup {parent}: {exc.strerror}; RLIMIT_NPROC only"
        return ("v1", parent), f"cgroup v1 pids cgroup under {parent}"
    if _fs_type(CGROUP_V2_ROOT) == "cgroup2":
        try:
            controllers = (CGROUP_V2_ROOT / "cgroup.controllers").read_text().split()
        except OSError:
            controllers = []
        if "pids" not in controllers:
            return None, "the cgroup v2 hierarchy has no pids controller; RLIMIT_NPROC only"
        parent = CGROUP_V2_ROOT / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
            for d in (CGROUP_V2_ROOT, parent):
                if "pids" not in (d / "cgroup.subtree_control").read_text().split():
                    (d / "cgroup.subtree_control").write_text("+pids")
        except OSError as exc:
            return None, f"cannot enable the pids controller for {parent}: {exc.strerror}; RLIMIT_NPROC only"
        return ("v2", parent), f"cgroup v2 pids cgroup under {parent}"
    return None, "no cgroup pids hierarchy at /sys/fs/cgroup; processes are capped by RLIMIT_NPROC only"


class PidsLimit:
    """One sandbox's task limit in a pids cgroup, shared by every exec of the sandbox.

    On cgroup v2 the memory and pids controllers share one directory, so the
    limit is written into the sandbox's memory cgroup when there is one; on v1
    it is a directory of its own that each exec joins as well.
    """

    def __init__(self, path: Path, max_tasks: int, *, owns_dir: bool) -> None:
        self.path = path
        self.owns_dir = owns_dir
        if owns_dir:
            path.mkdir(mode=0o755)
        try:
            (path / "pids.max").write_text(str(max_tasks))
        except BaseException:
            self.remove()
            raise

    def open_procs(self) -> int | None:
        """An fd on ``cgroup.procs`` to join, or None when the memory cgroup's join covers it."""
        if not self.owns_dir:
            return None
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def remove(self) -> None:
        if self.owns_dir:
            remove_cgroup(self.path)


class MemoryCgroup:
    """One sandbox's memory cgroup: every process of every exec is accounted in it."""

    def __init__(self, version: str, path: Path, memory_mb: int) -> None:
        self.version = version
        self.path = path
        path.mkdir(mode=0o755)
        limit = str(memory_mb * _MIB)
        try:
            if version == "v1":
                (path / "memory.limit_in_bytes").write_text(limit)
                memsw = path / "memory.memsw.limit_in_bytes"
                if memsw.exists():  # swap accounting on: memory+swap is capped too
                    memsw.write_text(limit)
            else:
                (path / "memory.max").write_text(limit)
                swap = path / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
        except BaseException:
            self.remove()
            raise

    def open_procs(self) -> int:
        """An fd on ``cgroup.procs`` (opened as root) for the child to join with before exec."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def peak_note(self) -> str:
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        try:
            return f"peak {int((self.path / name).read_text()) // _MIB} MiB"
        except (OSError, ValueError):
            return ""

    def remove(self) -> None:
        """Kill what is left in the cgroup and remove it (idempotent, best effort)."""
        remove_cgroup(self.path)


def remove_cgroup(path: Path) -> bool:
    deadline = time.monotonic() + CGROUP_RMDIR_WAIT_S
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            pass
        try:
            pids = [int(x) for x in (path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:  # only sandbox processes are ever in this cgroup
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def reap_stale_cgroups(parent: Path, temp_dir: Path) -> None:
    """Best effort: remove empty sandbox cgroups whose host directory is gone (a dead owner's)."""
    try:
        children = [c for c in parent.iterdir() if c.is_dir()]
    except OSError:
        return
    for child in children:
        if (temp_dir / child.name).exists():
            continue
        try:
            if (child / "cgroup.procs").read_text().strip():
                continue
            child.rmdir()
        except OSError:
            continue


def find_bwrap() -> str | None:
    """Locate bwrap at a fixed system path first, so a writable PATH entry cannot substitute it."""
    for candidate in BWRAP_CANDIDATES:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bwrap")


@lru_cache(maxsize=4)
def _static_mount_args(root: str | None = None) -> tuple[str, ...]:
    """Mount arguments for the system directories, computed once per process and root.

    ``root`` None: the host's ``/usr``, ``/bin``-style links and the /etc allowlist.
    Otherwise the sandbox image's root filesystem (:mod:`sandboxes.rootfs`): its
    ``/usr``, links and its ``/etc`` (the image's, not the host's) but for the
    account databases, which are synthetic here as on the host root.
    """
    if root is not None:
        base = Path(root)
        args = ["--ro-bind", str(base / "usr"), "/usr"]
        for path in SYSTEM_DIRS:
            inner = base / path.lstrip("/")
            if inner.is_symlink():
                args += ["--symlink", os.readlink(inner), path]
            elif inner.is_dir():
                args += ["--ro-bind", str(inner), path]
        args += ["--perms", "0755", "--dir", "/etc"]
        for entry in sorted((base / "etc").iterdir()):
            if entry.name in HIDDEN_IMAGE_ETC or f"/etc/{entry.name}" in SYNTHETIC_ETC:
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry), f"/etc/{entry.name}"]
            else:
                args += ["--ro-bind", str(entry), f"/etc/{entry.name}"]
        return tuple(args)
    args = ["--ro-bind", "/usr", "/usr", "--perms", "0755", "--dir", "/etc"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_ALLOWLIST:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return tuple(args)


def count_tasks(uid: int) -> int:
    """Tasks (threads included) the host currently runs as ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            total += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return total


def _parse_status(raw: bytes) -> list[dict[str, object]]:
    """Parse bwrap's --json-status-fd stream (concatenated JSON objects)."""
    text = raw.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    docs: list[dict[str, object]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while len(view):
        view = view[os.write(fd, view) :]


def _read_nonblocking(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@register_backend("bwrap")
class BwrapBackend(SandboxBackend):
    """Makes :class:`BwrapSandbox` instances.

    ``host_uid``/``host_gid``: the host ids bwrap runs as. Default: 65534 when
    the orchestrator is root, the current user otherwise. Setting them without
    being root is an error (we could not switch to them).
    """

    isolated = True
    _probe_cache: ClassVar[dict[tuple[object, ...], tuple[bool, str]]] = {}
    _probe_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        bwrap_path: str | None = None,
        host_uid: int | None = None,
        host_gid: int | None = None,
        temp_root: str | Path | None = None,
    ) -> None:
        self.bwrap_path = bwrap_path or find_bwrap()
        self.is_root = os.geteuid() == 0
        if self.is_root:
            self.host_uid: int | None = SANDBOX_HOST_UID if host_uid is None else host_uid
            self.host_gid: int | None = SANDBOX_HOST_GID if host_gid is None else host_gid
        else:
            self.host_uid = host_uid
            self.host_gid = host_gid
        self.temp_root = Path(temp_root) if temp_root is not None else None
        self._reap_stale()

    def _reap_stale(self) -> None:
        """Best effort: unmount and remove quota images and cgroups a dead orchestrator left behind."""
        if not self.is_root:
            return
        try:
            hostfs.reap_stale_mounts("il-")
            import tempfile

            temp_dir = self.temp_root or Path(tempfile.gettempdir())
            for where, _why in (memory_cgroup_support(), pids_cgroup_support()):
                if where is not None:
                    reap_stale_cgroups(where[1], temp_dir)
        except (OSError, SandboxError):
            pass

    def available(self) -> tuple[bool, str]:
        if not self.bwrap_path:
            return False, INSTALL_HINT
        if not self.is_root and (self.host_uid is not None or self.host_gid is not None):
            return False, "host_uid/host_gid can only be set when the orchestrator runs as root"
        try:
            root = bwrap_root()
        except SandboxUnavailable as exc:
            return False, str(exc)
        key = (self.bwrap_path, self.host_uid, self.host_gid, self.temp_root, root.path)
        with self._probe_lock:
            if key not in self._probe_cache:
                self._probe_cache[key] = self._probe(root)
            return self._probe_cache[key]

    def _probe(self, root: BwrapRoot) -> tuple[bool, str]:
        """Run ``true`` in a real sandbox with the exact flags exec uses."""
        try:
            with self._make(SandboxSpec(run_id="probe"), root) as box:
                result = box.exec(["true"], timeout=30)
        except (SandboxError, OSError) as exc:
            return False, f"bubblewrap cannot create a sandbox here: {exc}"
        if not result.ok:
            detail = result.stderr.strip() or f"exit code {result.exit_code}"
            return False, f"bubblewrap cannot create a sandbox here: {detail}"
        return True, f"bubblewrap at {self.bwrap_path} over {root.note}"

    def create(self, spec: SandboxSpec) -> BwrapSandbox:
        ok, why = self.available()
        if not ok:
            raise SandboxUnavailable(why)
        return self._make(spec)

    def _make(self, spec: SandboxSpec, root: BwrapRoot | None = None) -> BwrapSandbox:
        assert self.bwrap_path is not None
        root = root or bwrap_root()
        host_ids: tuple[int, int] | None = None
        if self.host_uid is not None:
            host_ids = (self.host_uid, self.host_uid if self.host_gid is None else self.host_gid)
        return BwrapSandbox(spec, bwrap_path=self.bwrap_path, host_ids=host_ids, temp_root=self.temp_root,
                            root=root)


class BwrapSandbox(hostfs.HostWorkspaceSandbox):
    """One run's workspace; every ``exec`` is a separate bwrap invocation over it.

    ``host_ids``: (uid, gid) on the host that bwrap runs as and that owns the
    workspace; None means "the current user" (non-root orchestrator).
    """

    backend = "bwrap"

    def __init__(
        self,
        spec: SandboxSpec,
        *,
        bwrap_path: str,
        host_ids: tuple[int, int] | None,
        temp_root: Path | None = None,
        root: BwrapRoot | None = None,
    ) -> None:
        super().__init__(spec, prefix="il-", temp_root=temp_root, owner=host_ids, workspace_quota=True)
        self.bwrap_path = bwrap_path
        self.root = None if root is None else root.path  # None: the host's /usr and /etc
        self.root_note = "the host's /usr and /etc" if root is None else root.note
        self.host_ids = host_ids
        self.cgroup: MemoryCgroup | None = None
        where, self.memory_note = memory_cgroup_support()
        if where is not None:
            version, parent = where
            try:
                self.cgroup = MemoryCgroup(version, parent / self.host_dir.name, spec.limits.memory_mb)
            except OSError as exc:
                hostfs.HostWorkspaceSandbox.destroy(self)
                raise SandboxError(f"cannot create the sandbox's memory cgroup: {exc}") from exc
            self.memory_note += f": {spec.limits.memory_mb} MiB for the whole sandbox"
            self._cgroup_finalizer = weakref.finalize(self, remove_cgroup, self.cgroup.path)
        self.pids_limit: PidsLimit | None = None
        pids_where, self.pids_note = pids_cgroup_support()
        if pids_where is not None:
            self._make_pids_limit(*pids_where)

    @property
    def environment(self) -> tuple[str, str]:
        return f"bwrap:{self.root or 'host'}", self.root_note

    def _make_pids_limit(self, version: str, parent: Path) -> None:
        """Cap the sandbox's tasks in a pids cgroup (see :func:`pids_cgroup_support`)."""
        max_tasks = self.spec.limits.pids + BWRAP_PROCESS_OVERHEAD
        shared = version == "v2" and self.cgroup is not None and self.cgroup.version == "v2"
        path = self.cgroup.path if shared and self.cgroup is not None else parent / self.host_dir.name
        try:
            self.pids_limit = PidsLimit(path, max_tasks, owns_dir=not shared)
        except OSError as exc:
            self.destroy()
            raise SandboxError(f"cannot create the sandbox's pids cgroup: {exc}") from exc
        self.pids_note += f": {max_tasks} tasks for the whole sandbox"
        if not shared:
            self._pids_finalizer = weakref.finalize(self, remove_cgroup, path)

    def destroy(self) -> None:
        super().destroy()
        if self.cgroup is not None:
            self._cgroup_finalizer.detach()
            self.cgroup.remove()
        pids_limit = getattr(self, "pids_limit", None)
        if pids_limit is not None and pids_limit.owns_dir:
            self._pids_finalizer.detach()
            pids_limit.remove()

    # ---- exec -------------------------------------------------------------

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
        inner_cwd = self._inner_cwd(cwd)
        full_env = validate_env({**BASE_ENV, **self.spec.env, **(env or {})})
        if self.host_ids is not None:
            # files the host wrote (or anything not yet owned) must belong to the sandbox uid
            hostfs.chown_tree(self.host_workspace, *self.host_ids)

        child_fds: list[int] = []
        status_r: int | None = None
        try:
            data_args: list[str] = []
            for path, content in SYNTHETIC_ETC.items():
                r, w = os.pipe()
                child_fds.append(r)
                try:
                    os.write(w, content.encode())  # far below the pipe buffer size
                finally:
                    os.close(w)
                data_args += ["--perms", "0644", "--ro-bind-data", str(r), path]
            # the environment goes through --args so values never show in host `ps`
            env_fd = os.memfd_create("il-bwrap-env")
            child_fds.append(env_fd)
            env_args = ["--clearenv"]
            for key, value in full_env.items():
                env_args += ["--setenv", key, value]
            _write_all(env_fd, b"".join(a.encode() + b"\0" for a in env_args))
            os.lseek(env_fd, 0, os.SEEK_SET)
            status_r, status_w = os.pipe()
            child_fds.append(status_w)
            argv = self._argv(cmd, inner_cwd, env_fd, status_w, data_args)

            def close_child_fds() -> None:
                while child_fds:
                    os.close(child_fds.pop())

            run_uid = self.host_ids[0] if self.host_ids is not None else os.getuid()
            cgroup_fds = self._open_cgroup_procs()
            # not in pass_fds: the child writes it before exec and close_fds/O_CLOEXEC drop it
            try:
                outcome = run_process(
                    argv,
                    timeout=timeout,
                    output_cap=limits.output_cap_bytes,
                    stdin=stdin,
                    cwd="/",
                    env=_BWRAP_PROCESS_ENV,
                    rlimits=self._rlimits(run_uid),
                    user=self.host_ids[0] if self.host_ids is not None else None,
                    group=self.host_ids[1] if self.host_ids is not None else None,
                    pass_fds=list(child_fds),
                    tracker=self._tracker,
                    after_spawn=close_child_fds,
                    cgroup_procs_fds=cgroup_fds,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise SandboxError(f"cannot start bwrap: {exc}") from exc
            finally:
                for fd in cgroup_fds:
                    os.close(fd)
            statuses = _parse_status(_read_nonblocking(status_r))
        finally:
            for fd in child_fds:
                os.close(fd)
            if status_r is not None:
                os.close(status_r)

        exit_code = outcome.returncode
        ran = any("exit-code" in doc for doc in statuses)
        if not outcome.timed_out and not ran:
            if self.destroyed:
                raise SandboxError("the sandbox was destroyed while the command was running")
            exit_code = self._setup_failure_code(outcome.stderr, outcome.raw_returncode)
        return ExecResult(
            exit_code=exit_code,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated,
            duration_s=outcome.duration_s,
        )

    @staticmethod
    def _setup_failure_code(stderr: str, returncode: int | None) -> int:
        """bwrap exited without running the command: a caller error or a sandbox failure?

        A missing/non-executable command or working directory is reported like a
        shell would (127/126/1) so agent loops can show it; anything else means
        the sandbox itself could not be built and raises.
        """
        if "bwrap: execvp " in stderr:
            return 126 if "Permission denied" in stderr else 127
        if "bwrap: Can't chdir to " in stderr:
            return 1
        if returncode is not None and returncode < 0:
            raise SandboxError(f"bwrap was killed by signal {-returncode} (outside the sandbox)")
        raise SandboxError(f"bwrap failed to set up the sandbox (exit {returncode}): {stderr.strip()}")

    @staticmethod
    def _inner_cwd(cwd: str) -> str:
        if not isinstance(cwd, str) or "\x00" in cwd or not cwd:
            raise ValueError(f"invalid cwd {cwd!r}")
        if not cwd.startswith("/"):
            cwd = posixpath.join(WORKSPACE, cwd)
        return posixpath.normpath(cwd)

    def _open_cgroup_procs(self) -> list[int]:
        """Open the ``cgroup.procs`` of every cgroup an exec joins (memory, and pids on v1)."""
        fds: list[int] = []
        try:
            if self.cgroup is not None:
                fds.append(self.cgroup.open_procs())
            if self.pids_limit is not None:
                fd = self.pids_limit.open_procs()
                if fd is not None:
                    fds.append(fd)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            if self.destroyed:
                raise SandboxError("sandbox has been destroyed") from exc
            raise SandboxError(f"cannot join the sandbox's cgroups: {exc}") from exc
        return fds

    def _rlimits(self, run_uid: int) -> dict[int, int]:
        limits = self.spec.limits
        nproc = limits.pids + BWRAP_PROCESS_OVERHEAD + count_tasks(run_uid)
        return {
            resource.RLIMIT_AS: limits.memory_mb * _MIB,
            resource.RLIMIT_NPROC: nproc,
            resource.RLIMIT_FSIZE: limits.file_size_mb * _MIB,
            resource.RLIMIT_CPU: limits.cpu_seconds,
            resource.RLIMIT_CORE: 0,
        }

    def _argv(
        self,
        cmd: list[str],
        cwd: str,
        env_fd: int,
        status_fd: int,
        data_args: list[str],
    ) -> list[str]:
        limits = self.spec.limits
        tmp_bytes = limits.tmp_size_mb * _MIB
        shm_bytes = min(limits.tmp_size_mb, SHM_MAX_MB) * _MIB
        argv = [
            self.bwrap_path,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_GID),
            "--hostname", "sandbox",
            "--die-with-parent",
            "--new-session",
            "--json-status-fd", str(status_fd),
            "--args", str(env_fd),
        ]  # fmt: skip
        argv += _static_mount_args(None if self.root is None else str(self.root))
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(shm_bytes), "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev",
            "--size", str(tmp_bytes), "--tmpfs", "/tmp",
            *data_args,
            "--bind", str(self.host_workspace), WORKSPACE,
            *(["--bind", str(self.spec.gateway_socket), GATEWAY_SOCKET] if self.spec.gateway_socket else []),
            "--remount-ro", "/",
            "--chdir", cwd,
            "--",
            *cmd,
        ]  # fmt: skip
        return argv


__all__: list[str] = [
    "BwrapBackend",
    "BwrapSandbox",
    "MemoryCgroup",
    "memory_cgroup_support",
    "SANDBOX_HOST_UID",
    "SANDBOX_HOST_GID",
    "SANDBOX_UID",
    "SANDBOX_GID",
    "count_tasks",
    "find_bwrap",
]
