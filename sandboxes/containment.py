"""Containment suite: named escape attempts, each run in a fresh sandbox of a backend.

Every check plays what a misbehaving agent would try (reach the network or the
host's services, read scoring files, write outside its workspace, exhaust
processes / memory / disk / output, outlive its timeout, gain privileges, smuggle
host files out through links or crafted names) and returns whether it was
contained, with the evidence. After each check the host is examined (it can
still fork, has memory and disk left, no process of the attempt survives, the
sandbox's workspace and container are gone).

``KNOWN_GAPS`` lists the attempts a backend is known not to contain when it
has to fall back (no workspace quota without root and loop devices; no memory
cgroup for bwrap without root and a writable memory hierarchy), with the reason;
:func:`known_gaps` keeps the ones that apply on this host. They are still
reported as not contained.

Use :func:`run_suite` (or ``integritylab sandbox selftest``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import textwrap
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.base import (
    ExecResult,
    Sandbox,
    SandboxBackend,
    SandboxLimits,
    SandboxSpec,
)
from sandboxes.registry import get_backend

PY = "/usr/bin/python3"  # in the docker image and on the Debian hosts bwrap runs on
MIB = 1024 * 1024

# attempts a backend does not contain *where its fallback applies*, and why (reported,
# not hidden); :func:`known_gaps` keeps only those that apply on this host
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "bwrap": {
        "memory_bomb_forked": (
            "no memory cgroup here, so bwrap caps memory per process (RLIMIT_AS), not per sandbox"
        ),
        "disk_fill_workspace": (
            "no workspace quota here (needs root and loop devices): the workspace is a plain host"
            " directory; only single files are capped"
        ),
    },
    "docker": {
        "disk_fill_workspace": (
            "no workspace quota here (needs root and loop devices): the workspace is a bind-mounted"
            " host directory; only single files are capped"
        ),
    },
}


def known_gaps(backend: SandboxBackend | str) -> dict[str, str]:
    """The entries of ``KNOWN_GAPS`` that apply on this host (the fallback is in use), with why."""
    name = backend if isinstance(backend, str) else backend.name
    gaps: dict[str, str] = {}
    candidates = KNOWN_GAPS.get(name, {})
    if "disk_fill_workspace" in candidates:
        from sandboxes.hostfs import quota_support

        ok, why = quota_support()
        if not ok:
            gaps["disk_fill_workspace"] = f"{candidates['disk_fill_workspace']} ({why})"
    if "memory_bomb_forked" in candidates:
        from sandboxes.bwrap import memory_cgroup_support

        where, why = memory_cgroup_support()
        if where is None:
            gaps["memory_bomb_forked"] = f"{candidates['memory_bomb_forked']} ({why})"
    return gaps


@dataclass
class Attempt:
    contained: bool
    evidence: str


@dataclass
class CheckResult:
    name: str
    category: str
    description: str
    contained: bool
    evidence: str
    host_healthy: bool
    host_evidence: str
    duration_s: float
    known_gap: str | None = None

    @property
    def ok(self) -> bool:
        return self.contained and self.host_healthy

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Probe:
    """What a check may use: its fresh sandbox, the backend, a host temp dir, the data dir."""

    def __init__(self, backend: SandboxBackend, box: Sandbox, host_tmp: Path, data_dir: Path | None) -> None:
        self.backend = backend
        self.box = box
        self.host_tmp = host_tmp
        self.data_dir = data_dir
        self.markers: list[str] = []
        self.token = f"IL-SECRET-{uuid.uuid4().hex}"

    def marker(self) -> str:
        m = f"il-probe-{uuid.uuid4().hex[:12]}"
        self.markers.append(m)
        return m

    def py(self, code: str, **kw: Any) -> ExecResult:
        return self.box.exec([PY, "-c", textwrap.dedent(code)], **kw)

    def py_json(self, code: str, **kw: Any) -> tuple[dict[str, Any], ExecResult]:
        r = self.py(code, **kw)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1]), r
        except (ValueError, IndexError):
            return {"_error": f"exit {r.exit_code}: {(r.stderr or r.stdout)[-300:]}"}, r

    @contextmanager
    def other_sandbox(self) -> Iterator[Sandbox]:
        with self.backend.create(SandboxSpec(run_id=f"containment-other-{uuid.uuid4().hex[:8]}")) as other:
            yield other


@dataclass(frozen=True)
class ContainmentCheck:
    name: str
    category: str
    description: str
    attempt: Callable[[Probe], Attempt]
    limits: dict[str, Any] = field(default_factory=dict)


CHECKS: list[ContainmentCheck] = []


def check(
    name: str, category: str, description: str, **limits: Any
) -> Callable[[Callable[[Probe], Attempt]], Callable[[Probe], Attempt]]:
    def register(fn: Callable[[Probe], Attempt]) -> Callable[[Probe], Attempt]:
        CHECKS.append(ContainmentCheck(name, category, description, fn, limits))
        return fn

    return register


def _brief(obj: Any, limit: int = 400) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _host_listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


_CONNECT = """
import json, socket
out = {}
for host, port, kind in TARGETS:
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind)
    s.settimeout(3)
    key = f"{'udp' if kind == socket.SOCK_DGRAM else 'tcp'}:{host}:{port}"
    try:
        if kind == socket.SOCK_DGRAM:
            s.sendto(PAYLOAD, (host, port))
            data = s.recvfrom(512)[0]
            out[key] = "reply " + data[:40].hex()
        else:
            s.connect((host, port))
            s.sendall(PAYLOAD)
            try:
                data = s.recv(64)
            except OSError:
                data = b""
            out[key] = "connected " + repr(data[:40])
    except OSError as exc:
        out[key] = type(exc).__name__ + ": " + str(exc)[:60]
    finally:
        s.close()
print(json.dumps(out))
"""


def _connect_attempt(
    probe: Probe, targets: list[tuple[str, int, str]], payload: bytes
) -> tuple[dict[str, str], ExecResult]:
    code = (
        f"TARGETS = [(h, p, __import__('socket').SOCK_DGRAM if k == 'udp' else __import__('socket').SOCK_STREAM)"
        f" for h, p, k in {targets!r}]\nPAYLOAD = {payload!r}\n" + _CONNECT
    )
    return probe.py_json(code, timeout=30)


def _host_addresses() -> list[str]:
    addrs = {"172.17.0.1"}  # docker0
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            addrs.add(info[4][0])
    except OSError:
        pass
    return sorted(a for a in addrs if not a.startswith("127."))


# ---- network ------------------------------------------------------------------------------

_DNS_QUERY = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")


@check("tcp_egress", "network", "open TCP connections to internet hosts")
def _tcp_egress(probe: Probe) -> Attempt:
    out, _ = _connect_attempt(
        probe, [("1.1.1.1", 443, "tcp"), ("8.8.8.8", 53, "tcp"), ("151.101.0.223", 443, "tcp")], b""
    )
    return Attempt(
        bool(out) and "_error" not in out and not any(v.startswith("connected") for v in out.values()), _brief(out)
    )


@check("udp_egress", "network", "send UDP datagrams (a DNS query) to internet resolvers")
def _udp_egress(probe: Probe) -> Attempt:
    out, _ = _connect_attempt(probe, [("8.8.8.8", 53, "udp"), ("1.1.1.1", 53, "udp")], _DNS_QUERY)
    return Attempt(
        bool(out) and "_error" not in out and not any(v.startswith("reply") for v in out.values()), _brief(out)
    )


@check("dns", "network", "resolve public host names")
def _dns(probe: Probe) -> Attempt:
    out, _ = probe.py_json(
        """
        import json, socket
        out = {}
        for name in ["deb.debian.org", "pypi.org", "registry.npmjs.org"]:
            try:
                out[name] = "resolved " + socket.getaddrinfo(name, 443)[0][4][0]
            except OSError as exc:
                out[name] = type(exc).__name__
        print(json.dumps(out))
        """,
        timeout=30,
    )
    return Attempt(
        bool(out) and "_error" not in out and not any(v.startswith("resolved") for v in out.values()), _brief(out)
    )


def _service_attempt(probe: Probe, port: int, payload: bytes) -> Attempt:
    targets = [("127.0.0.1", port, "tcp"), ("::1", port, "tcp")] + [(a, port, "tcp") for a in _host_addresses()]
    out, _ = _connect_attempt(probe, targets, payload)
    listening = _host_listens(port)
    contained = bool(out) and "_error" not in out and not any(v.startswith("connected") for v in out.values())
    return Attempt(contained, f"host listens on 127.0.0.1:{port}: {'yes' if listening else 'no'}; " + _brief(out))


@check("host_postgres", "network", "reach the host's loopback PostgreSQL (5432)")
def _host_postgres(probe: Probe) -> Attempt:
    return _service_attempt(probe, 5432, b"")


@check("host_redis", "network", "reach the host's loopback Redis (6379) and PING it")
def _host_redis(probe: Probe) -> Attempt:
    return _service_attempt(probe, 6379, b"PING\r\n")


# ---- host files ----------------------------------------------------------------------------

_READ_PATHS = """
import json, os
res = {}
for p in PATHS:
    try:
        if os.path.isdir(p):
            res[p] = "LISTED " + repr(sorted(os.listdir(p))[:20])
        else:
            with open(p, "rb") as fh:
                res[p] = "READ " + fh.read(200).decode("utf-8", "replace")
    except OSError as exc:
        res[p] = type(exc).__name__
print(json.dumps(res))
"""


def _read_attempt(probe: Probe, paths: list[str]) -> tuple[dict[str, str], bool]:
    out, _ = probe.py_json(f"PATHS = {paths!r}\n" + _READ_PATHS, timeout=30)
    leaked = "_error" in out or any(probe.token in v for v in out.values())
    return out, leaked


@check("read_rubric", "host files", "read a scoring rubric planted in a host temp dir (world-readable)")
def _read_rubric(probe: Probe) -> Attempt:
    rubric_dir = probe.host_tmp / f"rubric-{uuid.uuid4().hex[:8]}"
    rubric_dir.mkdir(mode=0o755)
    rubric = rubric_dir / "rubric.yaml"
    rubric.write_text(f"hidden: {probe.token}\n")
    rubric.chmod(0o644)
    out, leaked = _read_attempt(probe, [str(rubric), str(rubric_dir), str(probe.host_tmp)])
    return Attempt(not leaked, _brief(out))


@check("read_other_workspace", "host files", "read another sandbox's workspace through its host path")
def _read_other_workspace(probe: Probe) -> Attempt:
    with probe.other_sandbox() as other:
        other.write_file("secret.txt", probe.token.encode())
        host_ws = getattr(other, "host_workspace", None)
        host_dir = getattr(other, "host_dir", None)
        paths = [str(host_ws / "secret.txt"), str(host_ws), str(host_dir)] if host_ws and host_dir else []
        paths += ["/proc/1/root/workspace/secret.txt"]
        out, leaked = _read_attempt(probe, paths)
    return Attempt(not leaked, _brief(out))


@check("read_data_dir", "host files", "read the orchestrator's data dir (database, artifacts)")
def _read_data_dir(probe: Probe) -> Attempt:
    data_dir = probe.data_dir
    if data_dir is None:
        return Attempt(True, "no data dir given: nothing to read")
    created = not data_dir.exists()
    data_dir.mkdir(parents=True, exist_ok=True)
    planted = data_dir / f".containment-probe-{uuid.uuid4().hex[:8]}"
    planted.write_text(probe.token)
    planted.chmod(0o644)
    try:
        out, leaked = _read_attempt(probe, [str(planted), str(data_dir)])
    finally:
        planted.unlink(missing_ok=True)
        if created:
            data_dir.rmdir()  # leave no trace of the probe
    return Attempt(not leaked, _brief(out))


@check("read_etc_shadow", "host files", "read the host's /etc/shadow, and reach the Docker socket")
def _read_shadow(probe: Probe) -> Attempt:
    try:
        host_shadow = Path("/etc/shadow").read_text(errors="replace")
    except OSError:
        host_shadow = ""
    out, _ = probe.py_json(
        """
        import json, socket
        out = {}
        try:
            out["/etc/shadow"] = "READ " + open("/etc/shadow").read(200)
        except OSError as exc:
            out["/etc/shadow"] = type(exc).__name__
        for path in ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"]:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                out[path] = "CONNECTED"
            except OSError as exc:
                out[path] = type(exc).__name__
            finally:
                s.close()
        print(json.dumps(out))
        """
    )
    got = out.get("/etc/shadow", "")
    same = bool(host_shadow) and got.startswith("READ ") and got[5:] == host_shadow[:200]
    sockets = [k for k, v in out.items() if v == "CONNECTED"]
    return Attempt("_error" not in out and not same and not sockets, _brief(out))


@check(
    "write_outside", "host files", "write outside /workspace and /tmp (root, system dirs, a world-writable host dir)"
)
def _write_outside(probe: Probe) -> Attempt:
    public = probe.host_tmp / f"world-writable-{uuid.uuid4().hex[:8]}"
    public.mkdir()
    public.chmod(0o1777)
    name = f"il-escape-{uuid.uuid4().hex[:8]}"
    dirs = ["/", "/etc", "/usr", "/usr/local/bin", "/var/tmp", "/opt", "/root", "/home", "/dev", "/run", str(public)]
    code = f"""
        import json, os
        out = {{}}
        for d in {dirs!r}:
            p = os.path.join(d, {name!r})
            try:
                with open(p, "w") as fh:
                    fh.write("x")
                out[d] = "WROTE"
            except OSError as exc:
                out[d] = type(exc).__name__
        print(json.dumps(out))
        """
    out, _ = probe.py_json(code)
    on_host = [d for d in dirs if os.path.lexists(os.path.join(d, name))]
    for d in on_host:
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass
    wrote = [d for d, v in out.items() if v == "WROTE"]
    contained = "_error" not in out and not wrote and not on_host
    return Attempt(
        contained, f"written inside: {wrote or 'none'}; appeared on host: {on_host or 'none'}; " + _brief(out, 300)
    )


# ---- resources -----------------------------------------------------------------------------------


@check("fork_bomb", "resources", "a bash fork bomb", pids=64)
def _fork_bomb(probe: Probe) -> Attempt:
    marker = probe.marker()
    start = time.monotonic()
    r = probe.box.exec(["bash", "-c", f":(){{ :|:& }};:; sleep 30 # {marker}"], timeout=3)
    took = time.monotonic() - start
    alive = _responsive(probe.box)
    host_fork = subprocess.run(["true"], check=False).returncode == 0
    left = _wait_gone(marker, 10)
    contained = took < 10 and alive and host_fork and not left
    return Attempt(
        contained,
        f"exec ended after {took:.1f}s (timed_out={r.timed_out}, exit={r.exit_code}); sandbox responsive={alive};"
        f" host can fork={host_fork}; bomb processes left={len(left)}",
    )


@check("memory_bomb", "resources", "allocate and touch 4x the memory limit in one process", memory_mb=256)
def _memory_bomb(probe: Probe) -> Attempt:
    r = probe.py(
        """
        import sys
        chunks = []
        for i in range(64):
            chunks.append(bytearray(16 << 20))  # zero-filled: the pages are touched
            print((i + 1) * 16, flush=True)
        print("allocated 1024 MiB", flush=True)
        """,
        timeout=60,
    )
    reached = max([int(x) for x in r.stdout.split() if x.isdigit()] or [0])
    contained = "allocated" not in r.stdout and reached <= 256 and r.exit_code != 0
    alive = _responsive(probe.box)
    return Attempt(
        contained and alive,
        f"stopped at {reached} MiB of 1024 (limit 256); exit={r.exit_code} timed_out={r.timed_out};"
        f" {_last_line(r.stderr)}; sandbox responsive={alive}",
    )


@check("memory_bomb_forked", "resources", "4 processes each holding 0.75x the memory limit at once", memory_mb=256)
def _memory_bomb_forked(probe: Probe) -> Attempt:
    r = probe.py(
        """
        import os, time
        kids = []
        for k in range(4):
            pid = os.fork()
            if pid == 0:
                try:
                    block = bytearray(192 << 20)  # zero-filled: the pages are touched
                except MemoryError:
                    print("refused", k, flush=True)
                    os._exit(1)
                time.sleep(3)  # the survivors all hold their block during the same window
                print("survived", k, flush=True)
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
        """,
        timeout=60,
    )
    survived = r.stdout.split().count("survived")
    refused = r.stdout.split().count("refused")
    contained = survived * 192 <= 256
    note = getattr(probe.box, "memory_note", "")
    return Attempt(
        contained,
        f"{survived} of 4 processes held 192 MiB at the same time (limit 256 MiB); {refused} refused,"
        f" {4 - survived - refused} killed (OOM); exit={r.exit_code}" + (f"; {note}" if note else ""),
    )


@check(
    "disk_fill",
    "resources",
    "fill the disk: one huge workspace file, and /tmp (bounded)",
    file_size_mb=16,
    tmp_size_mb=16,
)
def _disk_fill(probe: Probe) -> Attempt:
    r1 = probe.box.exec(
        ["sh", "-c", "head -c 67108864 /dev/zero > /workspace/fill; stat -c %s /workspace/fill"], timeout=60
    )
    r2 = probe.box.exec(["sh", "-c", "head -c 33554432 /dev/zero > /tmp/fill; stat -c %s /tmp/fill"], timeout=60)
    ws = _last_int(r1.stdout)
    tmp = _last_int(r2.stdout)
    contained = 0 <= ws <= 16 * MIB and 0 <= tmp <= 16 * MIB
    return Attempt(
        contained,
        f"workspace file stopped at {ws / MIB:.1f} MiB of 64 (cap 16): {_last_line(r1.stderr)};"
        f" /tmp stopped at {tmp / MIB:.1f} MiB of 32 (cap 16): {_last_line(r2.stderr)}",
    )


@check(
    "disk_fill_workspace",
    "resources",
    "fill the workspace with many capped files (bounded at 192 MiB; workspace quota 64 MiB)",
    file_size_mb=16,
    workspace_mb=64,
)
def _disk_fill_workspace(probe: Probe) -> Attempt:
    r = probe.box.exec(
        [
            "sh",
            "-c",
            "for i in $(seq 1 12); do head -c 16777216 /dev/zero > /workspace/f$i || break; done; du -sk /workspace",
        ],
        timeout=120,
    )
    total_kib = _first_int(r.stdout)
    contained = 0 <= total_kib * 1024 < 192 * MIB * 0.9
    quota = getattr(probe.box, "quota_note", "")
    return Attempt(
        contained,
        f"wrote {total_kib / 1024:.0f} MiB in 16 MiB files before stopping (budget 192 MiB, quota 64 MiB):"
        f" {_last_line(r.stderr) or 'no error'}" + (f"; {quota}" if quota else ""),
    )


@check("sigterm_ignorer", "resources", "a process tree that ignores SIGTERM runs past its timeout")
def _sigterm(probe: Probe) -> Attempt:
    marker = probe.marker()
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "os.fork(); os.fork()\n"
        "print('ready', flush=True)\n"
        "time.sleep(300)\n"
    )
    start = time.monotonic()
    r = probe.box.exec([PY, "-c", code, marker], timeout=1.5)
    took = time.monotonic() - start
    left = _wait_gone(marker, 5)
    contained = r.timed_out and took < 6 and not left
    return Attempt(
        contained, f"returned after {took:.1f}s (timeout 1.5s, timed_out={r.timed_out}); processes left={len(left)}"
    )


@check("stdout_flood", "resources", "write 100 MB to stdout")
def _stdout_flood(probe: Probe) -> Attempt:
    cap = probe.box.spec.limits.output_cap_bytes
    tracemalloc.start()
    try:
        start = time.monotonic()
        r = probe.box.exec(["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' x"], timeout=120)
        took = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    contained = r.truncated and len(r.stdout) <= cap + 200 and peak < 32 * MIB and not r.timed_out
    return Attempt(
        contained,
        f"kept {len(r.stdout)} chars (cap {cap}), truncated={r.truncated},"
        f" host peak memory {peak / MIB:.1f} MiB, {took:.1f}s",
    )


# ---- privileges ------------------------------------------------------------------------------------------


@check("setuid_binary", "privileges", "run a setuid-root binary (planted by the host) and setuid(0)")
def _setuid(probe: Probe) -> Attempt:
    evidence = []
    host_ws = getattr(probe.box, "host_workspace", None)
    planted = False
    if host_ws is not None and os.geteuid() == 0:
        target = Path(host_ws) / "rootme"
        shutil.copy2("/usr/bin/id", target)
        os.chown(target, 0, 0)
        os.chmod(target, 0o4755)
        planted = True
    r = probe.box.exec(["/workspace/rootme", "-u"]) if planted else None
    suid = probe.box.exec(
        ["sh", "-c", "for b in /usr/bin/su /bin/su /usr/bin/passwd /usr/bin/newgrp; do [ -u $b ] && echo $b; done"]
    )
    s = probe.py(
        """
        import os
        try:
            os.setuid(0); print("setuid0 ok", os.geteuid())
        except OSError as exc:
            print("setuid0", type(exc).__name__)
        """
    )
    if planted:
        evidence.append(f"planted setuid-root id printed euid {r.stdout.strip() or r.stderr.strip()[:80]!r}")
    else:
        evidence.append("not root on the host: no setuid binary planted")
    su_bins = suid.stdout.split()
    su = probe.box.exec(["su", "-c", "id -u", "root"], stdin="\n", timeout=10) if su_bins else None
    if su is not None:
        evidence.append(f"su -> exit {su.exit_code} {(su.stdout + su.stderr).strip()[:60]!r}")
    evidence.append(s.stdout.strip())
    escalated = (planted and r is not None and r.stdout.strip() == "0") or "setuid0 ok" in s.stdout
    escalated = escalated or (su is not None and su.stdout.strip() == "0")
    euid = probe.box.exec(["id", "-u"]).stdout.strip()
    return Attempt(not escalated and euid != "0", "; ".join(evidence) + f"; id -u = {euid}")


# ---- collection --------------------------------------------------------------------------------------------


@check("links_on_collect", "collection", "symlinks and hard links in /workspace to host files, then collect")
def _links(probe: Probe) -> Attempt:
    secret = probe.host_tmp / "host-secret.txt"
    secret.write_text(probe.token)
    secret.chmod(0o644)
    box = probe.box
    r = box.exec(
        [
            "sh",
            "-c",
            f"ln -s {secret} s1; ln -s /etc/passwd s2; ln -s / rootlink; ln -s ../../../../{secret} s3;"
            " mkdir -p d; ln -s /etc d/etc; echo ok > plain.txt",
        ]
    )
    hard = "not attempted"
    host_ws = getattr(box, "host_workspace", None)
    if host_ws is not None:
        near = Path(getattr(box, "host_dir", host_ws)) / "host-side.txt"
        near.write_text(probe.token)
        try:
            os.link(near, Path(host_ws) / "hardlink.txt")
            hard = "planted"
        except OSError as exc:
            hard = f"could not be planted ({exc.strerror})"
    dest_parent = Path(tempfile.mkdtemp(prefix="il-collect-", dir=probe.host_tmp))
    dest = dest_parent / "out"
    result = box.collect(dest)
    leaked = []
    for p in dest_parent.rglob("*"):
        if p.is_symlink():
            leaked.append(f"symlink {p.relative_to(dest_parent)}")
        elif p.is_file() and probe.token in p.read_text(errors="replace"):
            leaked.append(f"secret in {p.relative_to(dest_parent)}")
        elif p.is_file() and p.read_text(errors="replace").startswith("root:"):
            leaked.append(f"/etc/passwd in {p.relative_to(dest_parent)}")
    copied = sorted(f.path for f in result.files)
    contained = not leaked and copied == ["plain.txt"] and r.exit_code == 0
    return Attempt(
        contained,
        f"copied {copied}; skipped {sorted(result.skipped)}; hard link {hard}; leaked {leaked or 'nothing'}",
    )


@check("escape_name_on_collect", "collection", "files named to escape the collect directory ('../../x' and friends)")
def _escape_name(probe: Probe) -> Attempt:
    box = probe.box
    r = box.exec(
        ["sh", "-c",
         "mkdir -p a && printf x > 'a/..\\..\\x' && printf x > \"$(printf '..\\n..x')\" && printf x > ' ..' &&"
         " ln -s /tmp up && mkdir -p deep && ln -s ../../../../../tmp deep/esc && printf ok > fine.txt"]
    )  # fmt: skip
    refused = []
    for bad in ["../../x", "/workspace/../../x", "a/../../../x"]:
        try:
            box.write_file(bad, b"x")
        except PermissionError:
            refused.append(bad)
    dest_parent = Path(tempfile.mkdtemp(prefix="il-escape-", dir=probe.host_tmp))
    dest = dest_parent / "out" / "run"
    result = box.collect(dest)
    outside = [
        str(p.relative_to(dest_parent))
        for p in dest_parent.rglob("*")
        if dest not in p.parents and p != dest and p not in dest.parents
    ]
    escaped = [p for p in outside if p != "out"]
    copied = sorted(f.path for f in result.files)
    contained = not escaped and len(refused) == 3 and "fine.txt" in copied and r.exit_code == 0
    return Attempt(
        contained,
        f"write_file refused {refused}; copied {copied}; skipped {sorted(result.skipped)};"
        f" outside dest: {escaped or 'nothing'}",
    )


# ---- helpers ---------------------------------------------------------------------------------------------


def _responsive(box: Sandbox, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if box.exec(["echo", "alive"], timeout=5).stdout == "alive\n":
                return True
        except Exception:  # noqa: BLE001 - a broken sandbox is "not responsive"
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.3)


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _wait_gone(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:120] if lines else ""


def _last_int(text: str) -> int:
    ints = [int(t) for t in text.split() if t.isdigit()]
    return ints[-1] if ints else -1


def _first_int(text: str) -> int:
    ints = [int(t) for t in text.split() if t.isdigit()]
    return ints[0] if ints else -1


# ---- host health ------------------------------------------------------------------------------------------


@dataclass
class HostSnapshot:
    mem_available: int
    disk_free: int

    @classmethod
    def take(cls, path: Path) -> HostSnapshot:
        return cls(_mem_available(), shutil.disk_usage(path).free)


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def host_health(before: HostSnapshot, path: Path, probe: Probe | None, box: Sandbox | None) -> tuple[bool, str]:
    """Is the host still fine after a check? (fork, memory, disk, leftovers, sandbox removed)"""
    problems: list[str] = []
    forked = subprocess.run(["true"], check=False).returncode == 0
    if not forked:
        problems.append("host cannot fork")
    mem = _mem_available()
    if mem < min(before.mem_available // 2, 512 * MIB):
        problems.append(f"host memory low ({mem / MIB:.0f} MiB available)")
    free = shutil.disk_usage(path).free
    if free < before.disk_free - 64 * MIB:
        problems.append(f"host disk shrank by {(before.disk_free - free) / MIB:.0f} MiB")
    if probe is not None:
        for m in probe.markers:
            if left := _wait_gone(m, 5):
                problems.append(f"{len(left)} processes of the attempt still run")
    if box is not None:
        host_dir = getattr(box, "host_dir", None)
        if host_dir is not None and os.path.lexists(host_dir):
            problems.append(f"sandbox directory {host_dir} was not removed")
        exists = getattr(box, "container_exists", None)
        if exists is not None and exists():
            problems.append("sandbox container was not removed")
    summary = f"fork ok={forked}, MemAvailable {mem / MIB:.0f} MiB, disk free {free / 1e9:.1f} GB"
    return not problems, "; ".join(problems) if problems else summary


# ---- runner -----------------------------------------------------------------------------------------------


def check_names() -> list[str]:
    return [c.name for c in CHECKS]


def run_suite(
    backend: SandboxBackend | str,
    *,
    names: list[str] | None = None,
    data_dir: Path | None = None,
    image: str | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the checks (all, or ``names``) against ``backend``, each in a fresh sandbox."""
    if isinstance(backend, str):
        backend = get_backend(backend)
    unknown = set(names or []) - set(check_names())
    if unknown:
        raise ValueError(f"unknown containment checks: {', '.join(sorted(unknown))}; known: {', '.join(check_names())}")
    selected = [c for c in CHECKS if names is None or c.name in names]
    gaps = known_gaps(backend)
    results: list[CheckResult] = []
    host_tmp = Path(tempfile.mkdtemp(prefix="il-containment-"))
    os.chmod(host_tmp, 0o755)  # traversable, like any host temp dir a rubric might sit in
    try:
        for c in selected:
            before = HostSnapshot.take(host_tmp)
            start = time.monotonic()
            probe: Probe | None = None
            box: Sandbox | None = None
            try:
                spec = SandboxSpec(
                    run_id=f"containment-{c.name}-{uuid.uuid4().hex[:6]}",
                    image=image,
                    limits=SandboxLimits(**{"command_timeout_s": 60, **c.limits}),
                )
                with backend.create(spec) as box:
                    probe = Probe(backend, box, host_tmp, data_dir)
                    attempt = c.attempt(probe)
            except Exception as exc:  # noqa: BLE001 - a crashed check is reported, never "contained"
                attempt = Attempt(False, f"check failed to run: {type(exc).__name__}: {exc}")
            healthy, host_evidence = host_health(before, host_tmp, probe, box)
            result = CheckResult(
                name=c.name,
                category=c.category,
                description=c.description,
                contained=attempt.contained,
                evidence=attempt.evidence,
                host_healthy=healthy,
                host_evidence=host_evidence,
                duration_s=round(time.monotonic() - start, 2),
                known_gap=gaps.get(c.name) if not attempt.contained else None,
            )
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        _remove_host_tmp(host_tmp)
    return results


def _remove_host_tmp(path: Path) -> None:
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            p = os.path.join(root, d)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


__all__ = [
    "CHECKS",
    "KNOWN_GAPS",
    "Attempt",
    "CheckResult",
    "ContainmentCheck",
    "check_names",
    "host_health",
    "known_gaps",
    "run_suite",
]
