"""Host-side access to a sandbox workspace that never follows the agent's links.

Why: the workspace directory is written by untrusted code but read, copied,
chowned and deleted by the (often root) host process. Anything that walks it by
path name could be tricked by a symlink or hard link the agent planted into
reading or changing host files. So every operation here walks with directory
file descriptors, opens each component with ``O_NOFOLLOW``, refuses symlinks and
multiply-linked files, and never blocks on FIFOs.

Shared by every backend whose workspace is a host directory (bwrap, local,
docker's bind mount), together with :class:`HostWorkspaceSandbox`, their
common base class.

Workspace quota. A host directory has no size limit of its own, so when the
orchestrator is root and loop devices work (:func:`quota_support`), the
sandbox's host directory is instead the root of a private ext4 filesystem: a
sparse image of ``limits.workspace_mb`` next to it (``<host_dir>.img``),
loop-mounted ``nodev,nosuid`` over it. Filling the workspace then fails with
ENOSPC inside the sandbox and costs the host at most that much disk, and the
image is unmounted and deleted with the sandbox. The image has no journal (the
workspace does not outlive its run), so it starts at well under 1 MiB on disk
and mkfs + mount take tens of milliseconds. Elsewhere (not root, no loop
devices, or ``INTEGRITYLAB_WORKSPACE_QUOTA=off``) the workspace is a plain
directory and only single files are capped.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import (
    WORKSPACE,
    CollectedFile,
    CollectResult,
    Sandbox,
    SandboxError,
    SandboxSpec,
)
from sandboxes.process import ProcessTracker

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_DEPTH = 128  # deeper trees are skipped by collect (and removed with rm -rf)
COPY_CHUNK = 1024 * 1024


def workspace_parts(path: str, workspace: str = WORKSPACE) -> list[str]:
    """Split a sandbox path (relative, or absolute under ``workspace``) into safe components.

    Raises PermissionError for anything that would leave the workspace
    (absolute paths elsewhere, ``..`` components, NUL bytes) and
    IsADirectoryError for the workspace root itself.
    """
    if not isinstance(path, str) or "\x00" in path:
        raise PermissionError(f"invalid sandbox path {path!r}")
    if path.startswith("/"):
        if path == workspace or path.startswith(workspace.rstrip("/") + "/"):
            path = path[len(workspace) :]
        else:
            raise PermissionError(f"{path!r} is outside {workspace}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PermissionError(f"{path!r} contains '..'; paths must stay inside {workspace}")
    if not parts:
        raise IsADirectoryError(f"{path!r} names the workspace root, not a file")
    return parts


def _open_dir_at(parent_fd: int, name: str) -> int:
    """Open a subdirectory without following a symlink; PermissionError if it is one."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if _is_symlink_at(parent_fd, name):
            raise PermissionError(f"refusing to follow symlink {name!r} in the workspace") from exc
        raise


def _is_symlink_at(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _walk_to_parent(root: Path, parts: list[str], *, create: bool = False, owner: tuple[int, int] | None = None) -> int:
    """Return an fd for the directory holding ``parts[-1]``; every step refuses symlinks."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                nxt = _open_dir_at(fd, name)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                nxt = _open_dir_at(fd, name)
                if owner is not None:
                    os.fchown(nxt, *owner)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_file(root: Path, path: str, max_bytes: int | None = None) -> bytes:
    """Read a regular, singly-linked file under ``root`` (the host side of /workspace)."""
    parts = workspace_parts(path)
    dir_fd = _walk_to_parent(root, parts)
    try:
        try:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if _is_symlink_at(dir_fd, parts[-1]):
                raise PermissionError(f"refusing to read symlink {path!r}") from exc
            raise
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path!r} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        if st.st_nlink > 1:
            raise PermissionError(f"{path!r} is hard-linked; refusing to read it")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        got = 0
        while max_bytes is None or got < max_bytes:
            want = COPY_CHUNK if max_bytes is None else min(COPY_CHUNK, max_bytes - got)
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_file(root: Path, path: str, data: bytes, owner: tuple[int, int] | None = None) -> None:
    """Atomically create or replace a file under ``root``, creating parent directories.

    Written to a temporary name then renamed over the target, so an existing
    symlink or hard link at the target is replaced, never written through.
    ``owner`` (uid, gid) is applied to the file and any directories created.
    """
    parts = workspace_parts(path)
    dir_fd = _walk_to_parent(root, parts, create=True, owner=owner)
    try:
        tmp = f".il-write-{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while len(view):
                    view = view[os.write(fd, view) :]
                if owner is not None:
                    os.fchown(fd, *owner)
            finally:
                os.close(fd)
            os.rename(tmp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)


@dataclass
class _Entry:
    rel: str  # relative to the root, '/'-separated
    name: str
    dir_fd: int  # fd of the containing directory (valid only during iteration)
    st: os.stat_result


def _walk(root_fd: int, on_skip: dict[str, str] | None = None) -> Iterator[_Entry]:
    """Yield every entry below ``root_fd`` depth-first, descending only into real directories.

    Directories are yielded before their contents. Symlinked directories are
    yielded (as symlinks) but never entered. Directories deeper than
    MAX_DEPTH are recorded in ``on_skip`` and not entered.
    """
    stack: list[tuple[int, str, list[str], int]] = []
    names = sorted(os.listdir(root_fd))
    stack.append((root_fd, "", names, 0))
    try:
        while stack:
            fd, rel_dir, pending, depth = stack[-1]
            if not pending:
                stack.pop()
                if fd != root_fd:
                    os.close(fd)
                continue
            name = pending.pop(0)
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield _Entry(rel, name, fd, st)
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 >= MAX_DEPTH:
                    if on_skip is not None:
                        on_skip[rel] = f"directory nested deeper than {MAX_DEPTH} levels"
                    continue
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if on_skip is not None:
                        on_skip[rel] = f"cannot open directory: {exc.strerror}"
                    continue
                try:
                    sub_names = sorted(os.listdir(sub))
                except OSError as exc:
                    os.close(sub)
                    if on_skip is not None:
                        on_skip[rel] = f"cannot list directory: {exc.strerror}"
                    continue
                stack.append((sub, rel, sub_names, depth + 1))
    finally:
        for fd, _rel, _names, _depth in stack:
            if fd != root_fd:
                os.close(fd)


def unsafe_name_reason(name: str) -> str | None:
    """Why a single directory entry name should not be copied out, or None if it is fine."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "name contains control characters"
    if name in (".", "..") or "/" in name or "\\" in name:
        return "name is not a safe relative path component"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def collect_tree(root: Path, dest: Path) -> CollectResult:
    """Copy every regular, singly-linked file under ``root`` into ``dest``.

    Skipped (and listed with a reason): symlinks, hard-linked files, devices,
    FIFOs, sockets, unsafe names (and everything under an unsafe directory
    name), and files that change type between listing and opening.
    """
    result = CollectResult()
    dest.mkdir(parents=True, exist_ok=True)
    dest_real = Path(os.path.realpath(dest))
    root_fd = os.open(root, _DIR_FLAGS)
    skipped_dirs: list[str] = []
    try:
        for entry in _walk(root_fd, result.skipped):
            if any(entry.rel.startswith(d + "/") for d in skipped_dirs):
                continue
            mode = entry.st.st_mode
            reason = unsafe_name_reason(entry.name)
            if reason is not None:
                rel_display = entry.rel.encode("utf-8", "backslashreplace").decode("utf-8")
                result.skipped[rel_display] = reason
                if stat.S_ISDIR(mode):
                    skipped_dirs.append(entry.rel)
                continue
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                result.skipped[entry.rel] = _kind(mode)
                continue
            if entry.st.st_nlink > 1:
                result.skipped[entry.rel] = f"hard link ({entry.st.st_nlink} links)"
                continue
            target = dest_real.joinpath(*entry.rel.split("/"))
            try:
                size = _copy_one(entry, target, dest_real)
            except _Skip as why:
                result.skipped[entry.rel] = str(why)
                continue
            result.files.append(CollectedFile(path=entry.rel, host_path=target, size=size))
    finally:
        os.close(root_fd)
    return result


class _Skip(Exception):
    pass


def _copy_one(entry: _Entry, target: Path, dest_real: Path) -> int:
    try:
        src = os.open(entry.name, _READ_FLAGS, dir_fd=entry.dir_fd)
    except OSError as exc:
        raise _Skip(f"cannot open: {exc.strerror}") from exc
    try:
        st = os.fstat(src)
        same = (st.st_ino, st.st_dev) == (entry.st.st_ino, entry.st.st_dev)
        if not same or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise _Skip("file changed while collecting")
        target.parent.mkdir(parents=True, exist_ok=True)
        parent_real = Path(os.path.realpath(target.parent))
        if parent_real != dest_real and dest_real not in parent_real.parents:
            raise _Skip("destination would escape the collect directory")
        os.set_blocking(src, True)
        out = os.open(
            parent_real / target.name,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
        )
        size = 0
        try:
            while chunk := os.read(src, COPY_CHUNK):
                view = memoryview(chunk)
                while len(view):
                    view = view[os.write(out, view) :]
                size += len(chunk)
        finally:
            os.close(out)
        return size
    finally:
        os.close(src)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give the sandbox's host uid ownership of host-written entries under ``root``.

    Only real directories and singly-linked regular files are touched, never
    through a symlink, so a planted link cannot redirect the chown to a host file.
    """
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        st = os.fstat(root_fd)
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.fchown(root_fd, uid, gid)
        for entry in _walk(root_fd):
            mode = entry.st.st_mode
            if (entry.st.st_uid, entry.st.st_gid) == (uid, gid):
                continue
            if stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and entry.st.st_nlink == 1):
                os.chown(entry.name, uid, gid, dir_fd=entry.dir_fd, follow_symlinks=False)
    finally:
        os.close(root_fd)


def remove_tree(path: Path) -> None:
    """Delete ``path`` even if the agent made read-only directories in it.

    Directories get u+rwx first (via O_NOFOLLOW fds, so links are not
    followed); ``rm -rf`` is the fallback for trees too deep for rmtree.
    """
    if not os.path.lexists(path):
        return
    try:
        root_fd = os.open(path, _DIR_FLAGS)
    except OSError:
        root_fd = None
    if root_fd is not None:
        try:
            os.fchmod(root_fd, 0o700)
            for entry in _walk(root_fd):
                if stat.S_ISDIR(entry.st.st_mode) and (entry.st.st_mode & 0o700) != 0o700:
                    # fchmodat(AT_SYMLINK_NOFOLLOW): works on a mode-000 dir we cannot open
                    try:
                        os.chmod(
                            entry.name,
                            stat.S_IMODE(entry.st.st_mode) | 0o700,
                            dir_fd=entry.dir_fd,
                            follow_symlinks=False,
                        )
                    except (OSError, NotImplementedError):
                        continue
        except OSError:
            pass
        finally:
            os.close(root_fd)
    for attempt in range(3):
        # a retry covers processes that were still dying (and writing) during the first pass
        try:
            shutil.rmtree(path)
        except (OSError, RecursionError):
            subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False)  # noqa: S603,S607
        if not os.path.lexists(path):
            return
        time.sleep(0.1 * (attempt + 1))
    raise OSError(f"could not remove sandbox directory {path}")


def safe_label(run_id: str) -> str:
    """A run id made safe for use in a temp directory name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:40] or "run"


# ---- who owns a sandbox (so orphans of a dead orchestrator can be removed) --------------


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return "unknown"


def _start_ticks(pid: int) -> str | None:
    """Start time of ``pid`` (clock ticks since boot): tells a live owner from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return data[data.rindex(b")") + 2 :].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return None


def owner_label(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}|{_boot_id()}|{pid}|{_start_ticks(pid)}"


def owner_is_gone(label: str) -> bool:
    """True when ``label`` names a process of this host (this boot) that no longer runs.

    Labels of another host (a shared engine) are never judged here.
    """
    try:
        host, boot, pid, start = label.split("|")
    except ValueError:
        return False
    if host != socket.gethostname():
        return False
    if boot != _boot_id():
        return True  # the owner ran before the last reboot
    try:
        return _start_ticks(int(pid)) != start
    except ValueError:
        return False


# ---- workspace quota: a loop-mounted ext4 image per sandbox --------------------------------

QUOTA_ENV = "INTEGRITYLAB_WORKSPACE_QUOTA"  # "off"/"0"/"false"/"no" forces the fallback
OWNER_FILE = ".il-owner"  # in the mounted host_dir (root-owned, out of the sandbox's reach)
IMAGE_SUFFIX = ".img"
_QUOTA_TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")
_TOOL_DIRS = "/usr/sbin:/sbin:/usr/bin:/bin"


def _tool(name: str) -> str | None:
    return shutil.which(name, path=_TOOL_DIRS)


_quota_probe: tuple[bool, str] | None = None
_quota_lock = threading.Lock()


def quota_support() -> tuple[bool, str]:
    """Whether workspaces get a size quota on this host, and if not, why not."""
    global _quota_probe
    if os.environ.get(QUOTA_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return False, f"workspace quota disabled by {QUOTA_ENV}"
    if os.geteuid() != 0:
        return False, "workspace quota needs root (loop-mounted image); only single files are capped"
    with _quota_lock:
        if _quota_probe is None:
            missing = [t for t in _QUOTA_TOOLS if _tool(t) is None]
            if missing:
                _quota_probe = (False, f"workspace quota needs {', '.join(missing)} (util-linux, e2fsprogs)")
            else:
                try:
                    r = subprocess.run(
                        [str(_tool("losetup")), "-f"], capture_output=True, text=True, timeout=10, check=False
                    )
                    ok = r.returncode == 0 and r.stdout.strip().startswith("/dev/")
                    why = r.stderr.strip() or r.stdout.strip()
                except (OSError, subprocess.TimeoutExpired) as exc:
                    ok, why = False, str(exc)
                _quota_probe = (
                    (True, "loop-mounted ext4 image per workspace")
                    if ok
                    else (False, f"workspace quota needs loop devices (`losetup -f`: {why or 'failed'})")
                )
        return _quota_probe


def image_path(host_dir: Path) -> Path:
    return host_dir.with_name(host_dir.name + IMAGE_SUFFIX)


def _run_tool(argv: list[str]) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if r.returncode != 0:
        raise SandboxError(f"{' '.join(argv[:2])} failed (exit {r.returncode}): {r.stderr.strip()[:300]}")


def mount_quota_image(host_dir: Path, size_mb: int) -> Path:
    """Make ``host_dir`` the root of a fresh ext4 filesystem of ``size_mb`` (sparse image next to it).

    The mounted root is left root-owned, mode 0700; the caller sets its final mode.
    """
    image = image_path(host_dir)
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size_mb * 1024 * 1024)
    finally:
        os.close(fd)
    try:
        _run_tool([str(_tool("mkfs.ext4")), "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "root_owner=0:0", str(image)])
        _run_tool([str(_tool("mount")), "-t", "ext4", "-o", "loop,nodev,nosuid,noatime", str(image), str(host_dir)])
        try:
            os.chmod(host_dir, 0o700)
            os.rmdir(host_dir / "lost+found")
            with open(host_dir / OWNER_FILE, "x") as fh:
                fh.write(owner_label())
        except BaseException:
            unmount_below(host_dir)
            raise
    except BaseException:
        image.unlink(missing_ok=True)
        raise
    return image


def _unescape_mount(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, source) of every mount this process sees."""
    out = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) >= 5 and len(rest) >= 2:
                    out.append((_unescape_mount(fields[4]), rest[0], _unescape_mount(rest[1])))
    except OSError:
        pass
    return out


def unmount_below(path: Path) -> None:
    """Unmount whatever is mounted at or below ``path`` (deepest first; lazily if busy)."""
    base = os.path.abspath(path)
    points = sorted(
        {m for m, _t, _s in mounts() if m == base or m.startswith(base.rstrip("/") + "/")},
        key=len,
        reverse=True,
    )
    umount = _tool("umount") or "umount"
    for point in points:
        r = subprocess.run([umount, point], capture_output=True, check=False)
        if r.returncode != 0:
            # still in use (a dying process, another mount namespace): detach now, freed when released
            subprocess.run([umount, "-l", point], capture_output=True, check=False)


def remove_workspace_dir(host_dir: Path) -> None:
    """Remove a sandbox's host directory: unmount its quota image, delete the tree and the image."""
    unmount_below(host_dir)
    remove_tree(host_dir)
    image_path(host_dir).unlink(missing_ok=True)


def reap_stale_mounts(prefix: str = "il-") -> list[str]:
    """Best effort: remove quota-mounted sandbox dirs (``<prefix>*``) whose owning process is gone.

    Only mounts that look exactly like ours are touched: an ext4 filesystem on a
    loop device, mounted on a directory named ``<prefix>...`` with its image next
    to it and an owner label inside naming a dead process of this host.
    """
    if os.geteuid() != 0:
        return []
    reaped = []
    for point, fstype, source in mounts():
        p = Path(point)
        if fstype != "ext4" or not source.startswith("/dev/loop") or not p.name.startswith(prefix):
            continue
        if not image_path(p).is_file():
            continue
        try:
            label = (p / OWNER_FILE).read_text()[:512]
        except OSError:
            continue
        if not owner_is_gone(label):
            continue
        try:
            remove_workspace_dir(p)
            reaped.append(point)
        except OSError:
            continue
    return reaped


def _cleanup(tracker: ProcessTracker, host_dir: Path) -> None:
    """Last-resort cleanup (garbage collection / interpreter exit) of a forgotten sandbox."""
    tracker.kill_all()
    try:
        remove_workspace_dir(host_dir)
    except (OSError, SandboxError):
        pass


class HostWorkspaceSandbox(Sandbox):
    """Base for sandboxes whose /workspace is a host directory (bwrap, local).

    Owns the private temp directory, the host-side file operations and
    ``destroy``; subclasses only implement ``exec``. ``owner`` (host uid, gid)
    is applied to everything the host writes, so a sandbox running as another
    uid can modify it.
    """

    def __init__(
        self,
        spec: SandboxSpec,
        *,
        prefix: str,
        temp_root: Path | None = None,
        owner: tuple[int, int] | None = None,
        workspace_quota: bool = False,
    ) -> None:
        super().__init__(spec)
        self.owner = owner
        self._tracker = ProcessTracker()
        self._lock = threading.Lock()
        self._destroyed = False
        # mkdtemp: a fresh 0700 directory no other host user can enter. When the
        # sandbox runs as another uid it needs to traverse it (0711: search, no
        # listing) while the directory stays ours, so that uid cannot swap the
        # workspace for a symlink; the workspace itself is 0700 and belongs to it.
        self.host_dir = Path(tempfile.mkdtemp(prefix=f"{prefix}{safe_label(spec.run_id)}-", dir=temp_root))
        self.host_workspace = self.host_dir / "workspace"
        # quota_mb: the workspace's size limit (None: no quota, see quota_note)
        self.quota_mb: int | None = None
        self.quota_note = "no workspace quota requested"
        self.quota_image: Path | None = None
        try:
            if workspace_quota:
                ok, why = quota_support()
                if ok:
                    self.quota_image = mount_quota_image(self.host_dir, spec.limits.workspace_mb)
                    self.quota_mb = spec.limits.workspace_mb
                    why = f"{why} of {self.quota_mb} MiB"
                self.quota_note = why
            self.host_workspace.mkdir(mode=0o700)
            if owner is not None:
                os.chmod(self.host_dir, 0o711)
                os.chown(self.host_workspace, *owner)
        except BaseException:
            remove_workspace_dir(self.host_dir)
            raise
        self._finalizer = weakref.finalize(self, _cleanup, self._tracker, self.host_dir)

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    def _begin_exec(self, cmd: list[str], timeout: float | None) -> float:
        """What every backend's ``exec`` checks first; returns the timeout to apply."""
        self._check_live()
        if not cmd or not all(isinstance(a, str) and "\x00" not in a for a in cmd):
            raise ValueError("cmd must be a non-empty list of strings without NUL bytes")
        return self.spec.limits.command_timeout_s if timeout is None else timeout

    def _check_live(self) -> None:
        if self._destroyed:
            raise SandboxError("sandbox has been destroyed")

    def write_file(self, path: str, data: bytes) -> None:
        self._check_live()
        write_file(self.host_workspace, path, data, owner=self.owner)

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        self._check_live()
        return read_file(self.host_workspace, path, max_bytes)

    def collect(self, dest: Path) -> CollectResult:
        self._check_live()
        return collect_tree(self.host_workspace, Path(dest))

    def destroy(self) -> None:
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
        self._tracker.kill_all()
        self._finalizer.detach()
        remove_workspace_dir(self.host_dir)
