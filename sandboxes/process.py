"""One process runner shared by the sandbox backends.

Why it exists: every backend must give the same ``ExecResult`` semantics — a
hard wall-clock timeout that kills the whole process tree, stdout/stderr capped
without ever buffering the excess, and stdin fed without deadlocking — and that
logic is subtle enough that it should exist exactly once.

The runner is single-threaded: one ``selectors`` loop reads both pipes, writes
stdin and watches a pidfd for the child's exit, so nothing can block on a full
pipe and no helper threads are left behind when a child misbehaves.
"""

from __future__ import annotations

import errno
import os
import resource
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

READ_CHUNK = 64 * 1024
# after a kill (or after the main process exited) keep draining the pipes this long
# for output already written, then give up on descendants that escaped the group
DRAIN_GRACE_S = 2.0
STDIN_CHUNK = 64 * 1024


# The environment every backend starts a command with (before spec.env and the
# call's env). Thread pools are capped because every thread counts against the
# pids limit (RLIMIT_NPROC counts tasks) and BLAS pools otherwise size
# themselves to the host's core count.
_THREADS = str(min(4, os.cpu_count() or 1))
BASE_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/workspace",
    "LANG": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
    "TMPDIR": "/tmp",
    "OMP_NUM_THREADS": _THREADS,
    "OPENBLAS_NUM_THREADS": _THREADS,
    "MKL_NUM_THREADS": _THREADS,
    # pip: no prompts, one quick retry against a network that is not there (it fails in seconds, saying why),
    # and an attempt at all on Debian's externally managed Python (it falls back to a --user install)
    "PIP_NO_INPUT": "1",
    "PIP_RETRIES": "1",  # one retry, so pip prints why it failed (its warning names the DNS failure)
    "PIP_TIMEOUT": "5",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
}


def validate_env(env: Mapping[str, str]) -> dict[str, str]:
    """Reject names/values that exec or bwrap would mangle, so failures are explicit."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
            raise ValueError(f"invalid environment variable name {key!r}")
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError(f"invalid value for environment variable {key!r}")
        out[key] = value
    return out


def truncation_marker(dropped: int) -> str:
    return f"\n[... output truncated by sandbox: {dropped} bytes dropped ...]\n"


class _Capture:
    """Keeps the first ``cap`` bytes of a stream and only counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += data[:room]
            data = data[room:]
        self.dropped += len(data)

    def text(self) -> str:
        out = self.buf.decode("utf-8", errors="replace")
        if self.dropped:
            out += truncation_marker(self.dropped)
        return out


@dataclass
class ProcessOutcome:
    """What happened to one command. ``returncode`` is None when we killed it on timeout."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_s: float
    raw_returncode: int | None = None  # Popen's value (negative = signal), for callers that care


class ProcessTracker:
    """The live process groups one sandbox started, so ``destroy`` can kill them.

    Needed because ``exec`` may run in another thread while ``destroy`` is called.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group led by ``proc`` (it was started with a new session).

    Only called while ``proc`` is unreaped, so its pid (= pgid) cannot have been reused.
    """
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _rlimit_preexec(rlimits: Mapping[int, int], cgroup_procs_fds: Sequence[int] = ()) -> Callable[[], None]:
    """Build the ``preexec_fn`` that joins cgroups and lowers rlimits in the child.

    Popen's child runs setgroups/setgid/setuid *before* preexec_fn, so the limits
    are set by the already-unprivileged user (lowering is always allowed) and
    RLIMIT_NPROC applies to the target uid. Each of ``cgroup_procs_fds`` is a
    ``cgroup.procs`` file the (root) parent opened for writing (one per cgroup v1
    hierarchy, e.g. memory and pids): writing "0" to it moves the child into that
    cgroup before it execs, so everything it starts is
    accounted there (the kernel checks the opener's permission, and a process may
    always move itself). Everything is precomputed so the child only makes a
    write and setrlimit calls between fork and exec.
    """
    items = [(res, (val, val)) for res, val in rlimits.items()]
    setrlimit = resource.setrlimit
    write = os.write

    fds = tuple(cgroup_procs_fds)

    def apply() -> None:
        for fd in fds:
            write(fd, b"0")
        for res, pair in items:
            setrlimit(res, pair)

    return apply


def run_process(
    argv: list[str],
    *,
    timeout: float,
    output_cap: int,
    stdin: str | bytes | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    rlimits: Mapping[int, int] | None = None,
    user: int | None = None,
    group: int | None = None,
    pass_fds: Iterable[int] = (),
    tracker: ProcessTracker | None = None,
    after_spawn: Callable[[], None] | None = None,
    cgroup_procs_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv`` in a new session with a hard timeout and capped output.

    On timeout the process group is SIGKILLed, ``timed_out`` is set and
    ``returncode`` is None. When the main process exits, any processes left in
    its group are killed too (a sandbox exec does not outlive its command).
    A child killed by signal N reports ``128 + N`` like a shell would.
    ``after_spawn`` runs in the parent right after the fork (e.g. to close fds
    that only the child needed). ``cgroup_procs_fds``: join those cgroups before exec
    (see :func:`_rlimit_preexec`). Raises ``OSError`` if ``argv[0]`` cannot be
    started and ``subprocess.SubprocessError`` if the cgroup cannot be joined.
    """
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    start = time.monotonic()
    proc: subprocess.Popen[bytes] = subprocess.Popen(  # noqa: S603 - argv is built by the backend
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        user=user,
        group=group,
        extra_groups=[] if user is not None else None,  # drop root's supplementary groups
        preexec_fn=_rlimit_preexec(rlimits or {}, cgroup_procs_fds) if rlimits or cgroup_procs_fds else None,
    )
    if tracker is not None:
        tracker.add(proc)
    try:
        if after_spawn is not None:
            after_spawn()
        return _supervise(proc, start, timeout, output_cap, stdin)
    finally:
        if tracker is not None:
            tracker.discard(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def _supervise(
    proc: subprocess.Popen[bytes],
    start: float,
    timeout: float,
    output_cap: int,
    stdin: bytes | None,
) -> ProcessOutcome:
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout.fileno(): _Capture(output_cap), proc.stderr.fileno(): _Capture(output_cap)}
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    sel = selectors.DefaultSelector()
    pidfd: int | None = None
    try:
        for fd in captures:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        stdin_fd: int | None = None
        stdin_view = memoryview(stdin) if stdin is not None else None
        if proc.stdin is not None:
            stdin_fd = proc.stdin.fileno()
            if stdin_view is not None and len(stdin_view):
                os.set_blocking(stdin_fd, False)
                sel.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
                stdin_fd = None
        try:
            pidfd = os.pidfd_open(proc.pid)
            sel.register(pidfd, selectors.EVENT_READ)
        except (AttributeError, OSError):
            pidfd = None  # old kernel: fall back to polling below

        deadline = start + timeout
        timed_out = False
        drain_until: float | None = None  # set once the process is dead or killed
        while True:
            now = time.monotonic()
            if drain_until is None and now >= deadline:
                kill_group(proc)
                timed_out = True
                drain_until = now + DRAIN_GRACE_S
            if drain_until is None and pidfd is None and proc.poll() is not None:
                drain_until = now + DRAIN_GRACE_S
            readers_left = any(fd in captures for fd in sel.get_map())
            if not readers_left and (drain_until is not None or stdin_fd is None and pidfd is None):
                break
            if drain_until is not None and now >= drain_until:
                break
            limit = drain_until if drain_until is not None else deadline
            wait = max(0.0, limit - now)
            if pidfd is None:
                wait = min(wait, 0.05)
            for key, _mask in sel.select(timeout=wait):
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(fd)
                    # main process exited: kill leftovers in its group before reaping
                    kill_group(proc)
                    if drain_until is None:
                        drain_until = time.monotonic() + DRAIN_GRACE_S
                elif fd == stdin_fd:
                    assert stdin_view is not None
                    try:
                        n = os.write(fd, stdin_view[:STDIN_CHUNK])
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, OSError):
                        n = len(stdin_view)  # reader is gone: drop the rest
                    stdin_view = stdin_view[n:]
                    if not len(stdin_view):
                        sel.unregister(fd)
                        assert proc.stdin is not None
                        try:
                            proc.stdin.close()
                        except OSError:
                            pass
                        stdin_fd = None
                else:
                    try:
                        data = os.read(fd, READ_CHUNK)
                    except BlockingIOError:
                        continue
                    except OSError as exc:
                        if exc.errno != errno.EIO:
                            raise
                        data = b""
                    if data:
                        captures[fd].feed(data)
                    else:
                        sel.unregister(fd)
        # pipes are closed (or we gave up on them): the process must still end by the deadline
        if not timed_out:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill_group(proc)
                timed_out = True
        raw = proc.wait()
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    duration = time.monotonic() - start
    out, err = captures[out_fd], captures[err_fd]
    code: int | None
    if timed_out:
        code = None
    elif raw < 0:
        code = 128 - raw
    else:
        code = raw
    return ProcessOutcome(
        returncode=code,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=bool(out.dropped or err.dropped),
        duration_s=duration,
        raw_returncode=raw,
    )
