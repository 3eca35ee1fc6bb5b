"""Docker backend: one long-lived, hardened container per sandbox; each ``exec`` is a Docker exec.

Why Docker: it is what most labs already run, it gives a real root filesystem
image (``integritylab/sandbox``: Python science stack + LaTeX) that does not
depend on the host's packages, and it enforces memory, CPU and pids limits with
cgroups. Images are built here without a registry (``integritylab images build
--offline``, see :mod:`sandboxes.imagebuild`).

The container (created by :meth:`DockerBackend.create`) runs ``sleep infinity``
under Docker's init (tini, ``init=True``, so zombies are reaped) with:

* ``network_mode="none"`` (only ``lo``), hostname ``sandbox``;
* user 1000:1000, ``cap_drop=["ALL"]``, ``no-new-privileges``, Docker's default
  seccomp profile;
* ``read_only=True`` root; a tmpfs ``/tmp`` of ``tmp_size_mb`` (``exec``, so
  compiled helpers run) and ``/dev/shm`` of at most 64 MiB, both counted
  against the memory limit;
* ``/workspace`` = a host directory bind-mount owned by uid 1000 (see below);
* ``mem_limit`` = ``memswap_limit`` = ``memory_mb`` (a cgroup limit on the
  whole sandbox; exceeding it OOM-kills a process, exit 137), ``nano_cpus`` =
  ``cpus`` (default 1 CPU), ``pids_limit`` = ``pids`` + 2 (init + keeper);
  rlimits ``fsize`` = ``file_size_mb``, ``cpu`` = ``cpu_seconds``, ``core`` = 0;
* labels ``integritylab.managed=1``, ``integritylab.run_id=<run_id>`` and the
  owning process (host, boot id, pid, start time) so that
  :meth:`DockerBackend.reap_orphans` can remove containers whose owner died;
* no logging (the keeper prints nothing; exec output is never logged by Docker).

Why a bind-mounted host directory rather than a volume: the host side of the
workspace is then an ordinary directory, so ``write_file``/``read_file``/
``collect``/``destroy`` are exactly the audited, link-refusing helpers of
:mod:`sandboxes.hostfs` that the bubblewrap backend uses (no tar archives from
``docker cp`` to parse, no extra exec per file), and collection cannot follow a
symlink or copy a hard-linked host file. The cost: the engine must run on this
host (checked at create time). The workspace's size is capped by
``workspace_mb`` when the orchestrator is root and loop devices work (the host
directory is then a loop-mounted ext4 image, see :mod:`sandboxes.hostfs`;
filling it fails with ENOSPC inside); otherwise it has no quota and only
single files are capped, by ``fsize``.

How ``exec`` is supervised. ``exec_create`` + a hijacked ``exec/start`` stream
(multiplexed stdout/stderr frames, demultiplexed here and capped with the same
marker as bwrap; stdin is written then half-closed). runc makes every exec's
process a session and process-group leader, so the exec's host pid (from
``exec_inspect``) is its process-group id. A pidfd on that pid tells us when the
main process exits; its group is then killed (nothing an exec started outlives
it, as with bwrap), and on timeout the group is SIGKILLed from the host
(``killpg``, after checking via ``/proc`` that the group's members belong to
this container; if the host process may not signal uid 1000, the kill is done
by a second exec inside the container). Processes that leave the group
(``setsid``) survive until the sandbox is destroyed, bounded by the pids limit.
"""

from __future__ import annotations

import errno
import os
import posixpath
import selectors
import signal
import socket
import struct
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import LogConfig, Mount, Ulimit

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
from sandboxes.hostfs import _boot_id, _start_ticks, owner_is_gone, owner_label  # noqa: F401 - re-exported
from sandboxes.process import BASE_ENV, READ_CHUNK, STDIN_CHUNK, _Capture, validate_env
from sandboxes.registry import register_backend

DEFAULT_IMAGE = "integritylab/sandbox:latest"
LABEL_MANAGED = "integritylab.managed"
LABEL_RUN_ID = "integritylab.run_id"
LABEL_OWNER = "integritylab.owner"
LABEL_WORKSPACE = "integritylab.workspace"
SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_USER = f"{SANDBOX_UID}:{SANDBOX_GID}"
KEEPER = ["sleep", "infinity"]
CONTAINER_PROCESS_OVERHEAD = 2  # docker-init + the keeper
SHM_MAX_MB = 64
WORKSPACE_PREFIX = "il-docker-"
API_TIMEOUT_S = 60
DRAIN_GRACE_S = 2.0
# how long to wait for an exec's process to appear / its exit code to be recorded
START_WAIT_S = 10.0
POLL_MAX_S = 0.01
INSTALL_HINT = (
    "start a Docker engine (apt-get install docker.io; dockerd &, as .ci/setup does) or use the bwrap backend"
)
_MIB = 1024 * 1024
_FRAME = struct.Struct(">BxxxL")


def build_hint(image: str) -> str:
    return (
        f"the sandbox image {image!r} is missing: build it with "
        "`integritylab images build --offline` (no registry needed) or `integritylab images build`"
    )


# owner labels (owner_label, owner_is_gone) live in sandboxes.hostfs, shared with bwrap


# ---- process groups on the host -------------------------------------------------------


def _stat_fields(pid: str | int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return data[data.rindex(b")") + 2 :].split()
    except (OSError, ValueError):
        return None


def _in_container(pid: str | int, container_id: str) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as fh:
            return container_id.encode() in fh.read()
    except OSError:
        return False


def group_members(pgid: int, container_id: str) -> list[int]:
    """Host pids in process group ``pgid`` that belong to the container (pid reuse cannot fool it)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is None or len(fields) < 4 or int(fields[2]) != pgid:
            continue
        if _in_container(name, container_id):
            found.append(int(name))
    return found


def _ns_pgid(pid: int) -> int | None:
    """The process group id as seen inside the container's pid namespace."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpgid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def _inner_cwd(cwd: str) -> str:
    if not isinstance(cwd, str) or "\x00" in cwd or not cwd:
        raise ValueError(f"invalid cwd {cwd!r}")
    if not cwd.startswith("/"):
        cwd = posixpath.join(WORKSPACE, cwd)
    return posixpath.normpath(cwd)


def _unix_socket_path(base_url: str | None) -> str | None:
    url = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if url.startswith("unix://"):
        return url[len("unix://") :]
    return None


def _remove_container(client: docker.DockerClient, container_id: str) -> None:
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except NotFound:
        pass
    except (APIError, DockerException, OSError):
        pass


# ---- backend ----------------------------------------------------------------------------------


@register_backend("docker")
class DockerBackend(SandboxBackend):
    """Makes :class:`DockerSandbox` instances on the local Docker engine.

    ``image``: the sandbox image (default ``integritylab/sandbox:latest``;
    ``SandboxSpec.image`` overrides it per sandbox). ``cpus``: CPUs per
    sandbox (``nano_cpus``). ``base_url``: the engine (default: ``DOCKER_HOST``
    or the local socket). Creating the backend removes orphaned sandbox
    containers (:meth:`reap_orphans`) when an engine answers.
    """

    isolated = True
    runs_images = True

    def __init__(
        self,
        image: str | None = None,
        cpus: float = 1.0,
        base_url: str | None = None,
        temp_root: str | Path | None = None,
    ) -> None:
        self.image = image or os.environ.get("INTEGRITYLAB_SANDBOX_IMAGE") or DEFAULT_IMAGE
        self.cpus = cpus
        self.base_url = base_url
        self.temp_root = Path(temp_root) if temp_root is not None else None
        self._client: docker.DockerClient | None = None
        self._client_lock = threading.Lock()
        try:
            self.reap_orphans()
        except (SandboxError, DockerException, OSError):
            pass  # no engine: available() says so

    # ---- engine ----

    def client(self) -> docker.DockerClient:
        """The engine client (created on first use). Raises SandboxUnavailable if none answers."""
        with self._client_lock:
            if self._client is None:
                try:
                    if self.base_url:
                        client = docker.DockerClient(base_url=self.base_url, version="auto", timeout=API_TIMEOUT_S)
                    else:
                        client = docker.from_env(version="auto", timeout=API_TIMEOUT_S)
                    client.ping()
                except (DockerException, OSError) as exc:
                    where = self.base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
                    raise SandboxUnavailable(f"no Docker engine answers at {where} ({exc}); {INSTALL_HINT}") from exc
                self._client = client
            return self._client

    def available(self) -> tuple[bool, str]:
        try:
            client = self.client()
            client.ping()
        except SandboxUnavailable as exc:
            return False, str(exc)
        except (DockerException, OSError) as exc:
            return False, f"the Docker engine does not answer ({exc}); {INSTALL_HINT}"
        try:
            client.images.get(self.image)
        except ImageNotFound:
            return False, build_hint(self.image)
        except (DockerException, OSError) as exc:
            return False, f"cannot inspect image {self.image!r}: {exc}"
        return True, f"Docker engine (API {client.api.api_version}), image {self.image}"

    def create(self, spec: SandboxSpec) -> DockerSandbox:
        client = self.client()
        image = spec.image or self.image
        try:
            client.images.get(image)
        except ImageNotFound as exc:
            raise SandboxUnavailable(build_hint(image)) from exc
        return DockerSandbox(
            spec,
            client=client,
            image=image,
            cpus=self.cpus,
            unix_socket=_unix_socket_path(self.base_url),
            temp_root=self.temp_root,
        )

    def managed_containers(self) -> list[dict[str, Any]]:
        """Summaries (id, names, labels, state) of every container this project manages on the engine."""
        return self.client().api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"})

    def reap_orphans(self) -> list[str]:
        """Remove managed containers whose owning process is gone; return their names.

        The owner is recorded in a label (host, boot id, pid, process start
        time), so a reused pid does not keep an orphan alive and containers of
        other hosts sharing the engine are left alone. The orphan's host
        workspace directory is removed too when it is one of ours.
        """
        client = self.client()
        reaped = []
        for summary in self.managed_containers():
            labels = summary.get("Labels") or {}
            if not owner_is_gone(labels.get(LABEL_OWNER, "")):
                continue
            _remove_container(client, summary["Id"])
            _remove_orphan_workspace(labels.get(LABEL_WORKSPACE))
            names = summary.get("Names") or [summary["Id"][:12]]
            reaped.append(names[0].lstrip("/"))
        return reaped


def _remove_orphan_workspace(path: str | None) -> None:
    """Delete a dead sandbox's host directory, but only if it looks exactly like one we made."""
    if not path:
        return
    p = Path(path)
    if not p.is_absolute() or not p.name.startswith(WORKSPACE_PREFIX) or ".." in p.parts:
        return
    if p.is_symlink() or not p.is_dir():
        return
    try:
        if p.stat().st_uid != os.geteuid():
            return
        hostfs.remove_workspace_dir(p)
    except (OSError, SandboxError):
        pass


# ---- sandbox ----------------------------------------------------------------------------------


class DockerSandbox(hostfs.HostWorkspaceSandbox):
    """One run's container and its bind-mounted workspace."""

    backend = "docker"

    def __init__(
        self,
        spec: SandboxSpec,
        *,
        client: docker.DockerClient,
        image: str,
        cpus: float = 1.0,
        unix_socket: str | None = None,
        temp_root: Path | None = None,
    ) -> None:
        self.is_root = os.geteuid() == 0
        owner = (SANDBOX_UID, SANDBOX_GID) if self.is_root else None
        super().__init__(spec, prefix=WORKSPACE_PREFIX, temp_root=temp_root, owner=owner, workspace_quota=True)
        if not self.is_root:
            # the host user cannot chown to 1000; the 0700 parent keeps other host users out
            os.chmod(self.host_workspace, 0o777)
        self.client = client
        self.image = image
        self.unix_socket = unix_socket
        self._closing = False
        self.name = f"il-{hostfs.safe_label(spec.run_id)}-{uuid.uuid4().hex[:8]}"
        self.container_id = ""
        try:
            self.container_id = self._start_container(cpus)
        except BaseException as exc:
            self._closing = True
            if self.container_id:
                _remove_container(client, self.container_id)
            super().destroy()
            if isinstance(exc, (SandboxError, KeyboardInterrupt, SystemExit)):
                raise
            raise SandboxError(f"cannot start the sandbox container: {exc}") from exc
        self._container_finalizer = weakref.finalize(self, _remove_container, client, self.container_id)

    @property
    def environment(self) -> tuple[str, str]:
        return f"docker:{getattr(self, 'image_id', '') or self.image}", f"the image {self.image}"

    def _start_container(self, cpus: float) -> str:
        limits = self.spec.limits
        mem = f"{limits.memory_mb}m"
        container = self.client.containers.create(
            self.image,
            KEEPER,
            name=self.name,
            init=True,
            user=SANDBOX_USER,
            hostname="sandbox",
            working_dir=WORKSPACE,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            tmpfs={"/tmp": f"size={limits.tmp_size_mb}m,exec,nosuid,nodev,mode=1777"},
            shm_size=f"{min(limits.tmp_size_mb, SHM_MAX_MB)}m",
            mem_limit=mem,
            memswap_limit=mem,
            nano_cpus=int(cpus * 1e9),
            pids_limit=limits.pids + CONTAINER_PROCESS_OVERHEAD,
            ulimits=[
                Ulimit(name="fsize", soft=limits.file_size_mb * _MIB, hard=limits.file_size_mb * _MIB),
                Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds),
                Ulimit(name="core", soft=0, hard=0),
            ],
            oom_score_adj=500,  # the host's OOM killer picks sandbox processes first
            mounts=[Mount(target=WORKSPACE, source=str(self.host_workspace), type="bind", read_only=False)]
            + ([Mount(target=GATEWAY_SOCKET, source=str(self.spec.gateway_socket), type="bind", read_only=False)]
               if self.spec.gateway_socket else []),
            log_config=LogConfig(type="none"),
            labels={
                LABEL_MANAGED: "1",
                LABEL_RUN_ID: self.spec.run_id,
                LABEL_OWNER: owner_label(),
                LABEL_WORKSPACE: str(self.host_dir),
            },
        )
        self.container_id = container.id
        self.image_id = str(container.attrs.get("Image", ""))
        container.start()
        container.reload()
        init_pid = container.attrs["State"]["Pid"]
        if not init_pid or not _in_container(init_pid, container.id):
            raise SandboxUnavailable(
                "the Docker engine does not run on this host (its processes are not visible here);"
                " the docker backend needs a local engine for the bind-mounted workspace and exec kills"
            )
        return container.id

    # ---- exec ---------------------------------------------------------------------

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
        workdir = _inner_cwd(cwd)
        full_env = validate_env({**BASE_ENV, **self.spec.env, **(env or {})})
        if isinstance(stdin, str):
            stdin = stdin.encode("utf-8")
        start = time.monotonic()
        try:
            exec_id = self.client.api.exec_create(
                self.container_id,
                cmd,
                stdout=True,
                stderr=True,
                stdin=stdin is not None,
                user=SANDBOX_USER,
                environment=full_env,
                workdir=workdir,
            )["Id"]
            sock, early = self._start_exec(exec_id)
        except (APIError, DockerException, OSError) as exc:
            self._raise_if_destroyed()
            raise SandboxError(f"cannot start a Docker exec: {exc}") from exc
        run = _ExecRun(self, exec_id, sock, early, stdin, limits.output_cap_bytes)
        try:
            run.supervise(start + timeout)
        except (APIError, DockerException, OSError) as exc:
            self._raise_if_destroyed()
            raise SandboxError(f"Docker exec failed: {exc}") from exc
        finally:
            run.close()
        self._raise_if_destroyed()
        stdout, stderr = run.stdout.text(), run.stderr.text()
        exit_code = None if run.timed_out else run.exit_code
        if exit_code is not None and not run.pid and stdout.startswith(_START_FAILURE):
            # runc could not start the command; Docker sends its message on stdout
            exit_code = _start_failure_code(stdout, exit_code)
            stdout, stderr = "", stdout.replace("\r\n", "\n") + stderr
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout,
            stderr=stderr,
            timed_out=run.timed_out,
            truncated=bool(run.stdout.dropped or run.stderr.dropped),
            duration_s=time.monotonic() - start,
        )

    def _raise_if_destroyed(self) -> None:
        if self._closing or self.destroyed:
            raise SandboxError("the sandbox was destroyed while the command was running")

    def _start_exec(self, exec_id: str) -> tuple[socket.socket, bytes]:
        """Start the exec and return the raw multiplexed stream (and any bytes already read).

        On a unix socket the HTTP upgrade is done by hand so no stream bytes can
        hide in an HTTP client's read buffer; otherwise docker-py's socket is used.
        """
        if self.unix_socket is None:
            raw = self.client.api.exec_start(exec_id, socket=True)
            return getattr(raw, "_sock", raw), b""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(API_TIMEOUT_S)
            sock.connect(self.unix_socket)
            body = b'{"Detach":false,"Tty":false}'
            head = (
                f"POST /v{self.client.api.api_version}/exec/{exec_id}/start HTTP/1.1\r\n"
                "Host: docker\r\nContent-Type: application/json\r\n"
                "Connection: Upgrade\r\nUpgrade: tcp\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            sock.sendall(head + body)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = sock.recv(4096)
                if not chunk:
                    raise SandboxError("the Docker engine closed the exec stream before answering")
                buf += chunk
                if len(buf) > 65536:
                    raise SandboxError("oversized HTTP response from the Docker engine")
            header, rest = buf.split(b"\r\n\r\n", 1)
            status = header.split(b"\r\n", 1)[0].split()
            code = int(status[1]) if len(status) > 1 and status[1].isdigit() else 0
            if code not in (101, 200):
                sock.settimeout(2)
                try:
                    while chunk := sock.recv(65536):
                        rest += chunk
                except OSError:
                    pass
                raise SandboxError(f"Docker refused to start the exec (HTTP {code}): {rest[:500]!r}")
            sock.settimeout(None)
            return sock, rest
        except BaseException:
            sock.close()
            raise

    # ---- process-group kills ----

    def kill_group(self, pgid: int, leader_alive: bool) -> None:
        """SIGKILL the exec's process group (see the module doc for why this is safe)."""
        if not leader_alive:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                pass
            if not group_members(pgid, self.container_id):
                return
        try:
            os.killpg(pgid, signal.SIGKILL)
            return
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        # not allowed to signal uid 1000 from here: kill from inside the container
        members = group_members(pgid, self.container_id)
        ns_pgid = _ns_pgid(members[0]) if members else None
        if ns_pgid and ns_pgid > 1:
            try:
                self.client.api.exec_start(
                    self.client.api.exec_create(
                        self.container_id, ["kill", "-KILL", "--", f"-{ns_pgid}"], user=SANDBOX_USER
                    )["Id"]
                )
            except (APIError, DockerException, OSError):
                pass

    # ---- lifecycle ----

    def destroy(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if self.container_id:
            if not self.is_root and not self.destroyed:
                # files the sandbox made belong to uid 1000: let it delete them
                try:
                    self.client.api.exec_start(
                        self.client.api.exec_create(
                            self.container_id,
                            ["sh", "-c", "chmod -R u+rwX /workspace; rm -rf /workspace/* /workspace/.[!.]*"],
                            user=SANDBOX_USER,
                        )["Id"]
                    )
                except (APIError, DockerException, OSError):
                    pass
            self._container_finalizer.detach()
            _remove_container(self.client, self.container_id)
        super().destroy()

    def container_exists(self) -> bool:
        try:
            self.client.api.inspect_container(self.container_id)
        except NotFound:
            return False
        return True


_START_FAILURE = "OCI runtime exec failed"


def _start_failure_code(text: str, exit_code: int) -> int:
    """runc could not start the command: report it like a shell would (127/126/1)."""
    if "chdir to cwd" in text:
        return 1
    if "executable file not found" in text or "no such file or directory" in text:
        return 127
    if "permission denied" in text:
        return 126
    return exit_code


class _ExecRun:
    """The supervision loop of one exec: demultiplex, cap, feed stdin, watch the pid, enforce the deadline."""

    def __init__(
        self,
        box: DockerSandbox,
        exec_id: str,
        sock: socket.socket,
        early: bytes,
        stdin: bytes | None,
        cap: int,
    ) -> None:
        self.box = box
        self.exec_id = exec_id
        self.sock = sock
        self.stdin = memoryview(stdin) if stdin is not None else None
        self.stdout = _Capture(cap)
        self.stderr = _Capture(cap)
        self.timed_out = False
        self.exit_code: int | None = None
        self.pid = 0
        self.pidfd: int | None = None
        self._header = b""
        self._remaining = 0
        self._target: _Capture | None = None
        self._feed(early)

    # frames: 8-byte header (stream, 0, 0, 0, big-endian length) + payload, parsed incrementally
    def _feed(self, data: bytes) -> None:
        view = memoryview(data)
        while len(view):
            if self._remaining:
                take = view[: self._remaining]
                if self._target is not None:
                    self._target.feed(bytes(take))
                self._remaining -= len(take)
                view = view[len(take) :]
                continue
            need = _FRAME.size - len(self._header)
            self._header += bytes(view[:need])
            view = view[need:]
            if len(self._header) == _FRAME.size:
                stream, size = _FRAME.unpack(self._header)
                self._header = b""
                self._remaining = size
                self._target = self.stderr if stream == 2 else self.stdout

    def _find_pid(self, deadline: float) -> None:
        """Wait until Docker reports the exec's host pid (= its process group) and watch it with a pidfd.

        Docker records the pid only once runc has started the process, which
        for a short command can be after it already exited: then no pidfd is
        opened, but the pid still names the group whose leftovers are killed.
        """
        api = self.box.client.api
        delay = 0.001
        limit = min(deadline, time.monotonic() + START_WAIT_S)
        while True:
            info = api.exec_inspect(self.exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                self.exit_code = int(info["ExitCode"])
            if info.get("Pid"):
                self.pid = int(info["Pid"])
                break
            if self.exit_code is not None or time.monotonic() >= limit:
                return  # it never started (runc error) or we stop waiting
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)
        if self.exit_code is not None:
            return
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:
            return
        if _in_container(self.pid, self.box.container_id):
            self.pidfd = pidfd
        else:
            os.close(pidfd)  # it exited in between and the pid may already be reused

    def supervise(self, deadline: float) -> None:
        self._find_pid(deadline)
        sel = selectors.DefaultSelector()
        sock = self.sock
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if self.stdin is not None else 0))
        if self.pidfd is not None:
            sel.register(self.pidfd, selectors.EVENT_READ)
        if self.stdin is not None and not len(self.stdin):
            self._close_stdin(sel)
        drain_until: float | None = None
        if self.pid and self.pidfd is None:
            # the main process is already gone: kill what it left behind, then drain
            self.box.kill_group(self.pid, leader_alive=False)
            drain_until = time.monotonic() + DRAIN_GRACE_S
        sock_open = True
        try:
            while True:
                now = time.monotonic()
                if drain_until is None and now >= deadline:
                    self.timed_out = True
                    if self.pid:
                        self.box.kill_group(self.pid, leader_alive=self.pidfd is not None)
                    drain_until = now + DRAIN_GRACE_S
                if not sock_open or (drain_until is not None and now >= drain_until):
                    break
                wait = max(0.0, (drain_until if drain_until is not None else deadline) - now)
                for key, mask in sel.select(timeout=wait):
                    if key.fd == self.pidfd:
                        sel.unregister(self.pidfd)
                        os.close(self.pidfd)
                        self.pidfd = None
                        # the main process exited: nothing it started outlives it
                        self.box.kill_group(self.pid, leader_alive=False)
                        if drain_until is None:
                            drain_until = time.monotonic() + DRAIN_GRACE_S
                        continue
                    if mask & selectors.EVENT_WRITE and self.stdin is not None:
                        try:
                            n = sock.send(self.stdin[:STDIN_CHUNK])
                        except BlockingIOError:
                            n = 0
                        except OSError:
                            n = len(self.stdin)
                        self.stdin = self.stdin[n:]
                        if not len(self.stdin):
                            self._close_stdin(sel)
                    if mask & selectors.EVENT_READ:
                        try:
                            data = sock.recv(READ_CHUNK)
                        except BlockingIOError:
                            continue
                        except OSError as exc:
                            if exc.errno not in (errno.ECONNRESET, errno.EPIPE):
                                raise
                            data = b""
                        if data:
                            self._feed(data)
                        else:
                            sock_open = False
                            break
        finally:
            sel.close()
        if self.timed_out:
            return
        if self.pidfd is not None:
            # the stream ended while the main process still runs (it closed its outputs)
            if not _wait_fd(self.pidfd, deadline - time.monotonic()):
                self.timed_out = True
                self.box.kill_group(self.pid, leader_alive=True)
                return
        if self.pid:
            self.box.kill_group(self.pid, leader_alive=False)
        self._collect_exit_code(deadline)

    def _close_stdin(self, sel: selectors.BaseSelector) -> None:
        self.stdin = None
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sel.modify(self.sock, selectors.EVENT_READ)

    def _collect_exit_code(self, deadline: float) -> None:
        if self.exit_code is not None:
            return
        api = self.box.client.api
        delay = 0.001
        limit = max(deadline, time.monotonic()) + DRAIN_GRACE_S
        while True:
            info = api.exec_inspect(self.exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                self.exit_code = int(info["ExitCode"])
                return
            if time.monotonic() >= limit:
                self.timed_out = True
                if self.pid:
                    self.box.kill_group(self.pid, leader_alive=False)
                return
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _wait_fd(fd: int, timeout: float) -> bool:
    sel = selectors.DefaultSelector()
    try:
        sel.register(fd, selectors.EVENT_READ)
        return bool(sel.select(timeout=max(0.0, timeout)))
    finally:
        sel.close()


__all__: list[str] = [
    "DEFAULT_IMAGE",
    "LABEL_MANAGED",
    "LABEL_OWNER",
    "LABEL_RUN_ID",
    "SANDBOX_UID",
    "DockerBackend",
    "DockerSandbox",
    "build_hint",
    "group_members",
    "owner_is_gone",
    "owner_label",
]
