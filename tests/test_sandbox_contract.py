"""The ``Sandbox`` contract (sandboxes/base.py), tested once against every isolating backend.

Each test runs against a real bwrap and a real Docker engine (the ``backend``
fixture is parametrized over both), in the manner of Inspect AI's sandbox
conformance checks: what every backend must do is asserted here, and only what
is truly backend-specific lives in tests/test_sandbox_bwrap.py and
tests/test_sandbox_docker.py. Where the backends legitimately differ (bwrap
rebuilds ``/tmp`` per exec, Docker keeps the container's), a test branches on
``backend.name`` for that assertion alone.

No mocks. A backend that cannot run here is skipped with the reason, except
Docker on CI (``CI=true``), where a missing engine or image is a failure: the
same rules as the backend files (tests/test_sandbox_bwrap.py skips on CI too).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import textwrap
import threading
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes.base import ExecResult, Sandbox, SandboxBackend, SandboxError, SandboxLimits, SandboxSpec
from sandboxes.bwrap import BwrapBackend
# the containment suite's host-side check that no process of an attempt survives (host /proc scan)
from sandboxes.containment import _wait_gone
from sandboxes.docker import DockerBackend

BACKENDS: dict[str, type[SandboxBackend]] = {"bwrap": BwrapBackend, "docker": DockerBackend}
# bwrap runs the host's python3; the Docker image has its own on PATH
PYTHON = {"bwrap": "/usr/bin/python3", "docker": "python3"}
ON_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    name: str = request.param
    b = BACKENDS[name]()
    ok, why = b.available()
    if not ok:
        if name == "docker" and ON_CI:
            pytest.fail(f"CI=true but the docker backend is unavailable: {why}")
        pytest.skip(f"{name} backend unavailable: {why}")
    return b


def _spec(**limits: object) -> SandboxSpec:
    return SandboxSpec(run_id=f"test-{uuid.uuid4().hex[:8]}", limits=SandboxLimits(**limits))


@pytest.fixture
def box(backend: SandboxBackend) -> Iterator[Sandbox]:
    with backend.create(_spec(command_timeout_s=30)) as sb:
        yield sb


def _py(box: Sandbox, code: str, **kw: object) -> ExecResult:
    return box.exec([PYTHON[box.backend], "-c", textwrap.dedent(code)], **kw)  # type: ignore[arg-type]


# ---- exec basics ----------------------------------------------------------------------------


def test_exec_exit_code_stdout_stderr_stdin(box: Sandbox) -> None:
    r = box.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out, r.truncated) == (3, "out\n", "err\n", False, False)
    assert not r.ok
    assert box.exec(["cat"], stdin="hello\n").stdout == "hello\n"
    assert box.exec(["wc", "-c"], stdin=b"\x00" * 300_000).stdout.strip() == "300000"
    assert box.exec(["cat"]).stdout == ""  # no stdin means /dev/null, not a hang
    assert box.exec(["cat"], stdin="").stdout == ""
    missing = box.exec(["no-such-command"])
    assert missing.exit_code == 127 and "no-such-command" in missing.stderr and missing.stdout == ""
    assert box.exec(["/etc/passwd"]).exit_code == 126
    box.exec(["mkdir", "sub"])
    assert box.exec(["pwd"], cwd="sub").stdout == "/workspace/sub\n"
    assert box.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert box.exec(["true"], cwd="/workspace/nope").exit_code == 1
    killed = box.exec(["sh", "-c", "kill -9 $$"])
    assert killed.exit_code == 137 and not killed.timed_out


def test_env_is_clean_and_configurable(backend: SandboxBackend) -> None:
    os.environ["IL_HOST_SECRET"] = "leaked"
    try:
        spec = _spec()
        spec.env["FROM_SPEC"] = "1"
        spec.env["IL_TOKEN"] = "tok-" + uuid.uuid4().hex
        with backend.create(spec) as sb:
            env = sb.exec(["env"], env={"FROM_CALL": "2", "LANG": "C"}).stdout.splitlines()
            # values never travel on a command line (readable by every host user, and inside
            # the sandbox as the cmdline of its pid 1: bwrap's own, Docker's init)
            r = sb.exec(["sh", "-c", 'echo "$IL_TOKEN"; tr "\\0" " " < /proc/1/cmdline'])
            ps = sb.exec(["ps", "-eo", "args"]).stdout
    finally:
        del os.environ["IL_HOST_SECRET"]
    assert "FROM_SPEC=1" in env and "FROM_CALL=2" in env and "LANG=C" in env
    assert "HOME=/workspace" in env and "MPLBACKEND=Agg" in env
    assert not any(line.startswith("IL_HOST_SECRET") for line in env)
    value, cmdline = r.stdout.split("\n", 1)
    assert value == spec.env["IL_TOKEN"] and value not in cmdline
    assert "FROM_SPEC" not in ps and value not in ps
    if backend.name == "bwrap":
        assert "bwrap" in cmdline  # pid 1 is bwrap itself, whose argv carried the command


def test_python_numpy_and_matplotlib_png(box: Sandbox) -> None:
    r = _py(
        box,
        """
        import numpy as np, matplotlib
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot(np.arange(10) ** 2)
        fig.savefig("/workspace/plot.png")
        print(np.arange(4).sum(), matplotlib.get_backend().lower())
        """,
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == ["6", "agg"]
    assert box.read_file("plot.png")[:8] == b"\x89PNG\r\n\x1a\n"
    if box.backend == "docker":  # bwrap's HOME=/workspace gets matplotlib's .cache and .config
        # nothing but the plot landed in the workspace (the image points caches at /tmp)
        assert box.exec(["ls", "-A", "/workspace"]).stdout.split() == ["plot.png"]


# ---- privileges -----------------------------------------------------------------------------


def test_unprivileged_uid_and_no_capabilities(box: Sandbox) -> None:
    assert box.exec(["id", "-u"]).stdout.strip() == "1000"
    assert box.exec(["id", "-g"]).stdout.strip() == "1000"
    status = box.exec(["cat", "/proc/self/status"]).stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0 and int(fields["CapBnd"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1"
    if box.backend == "docker":  # Docker's default seccomp profile (bwrap installs no filter)
        assert fields["Seccomp"].strip() == "2"
    # no nested user namespaces (which would hand out capabilities again)
    assert box.exec(["unshare", "-U", "true"]).exit_code != 0


def test_no_fds_leak_into_sandbox(box: Sandbox) -> None:
    r = _py(box, "import os; print(sorted(os.listdir('/proc/self/fd')))")
    assert json.loads(r.stdout.replace("'", '"')) == ["0", "1", "2", "3"]  # 3 = listdir's own fd


# ---- network ----------------------------------------------------------------------------------


def test_network_is_unreachable(box: Sandbox) -> None:
    r = _py(
        box,
        """
        import json, socket
        out = {}
        for host, port in [("1.1.1.1", 53), ("127.0.0.1", 5432), ("127.0.0.1", 6379), ("172.17.0.1", 2375)]:
            s = socket.socket()
            s.settimeout(3)
            try:
                s.connect((host, port))
                out[f"{host}:{port}"] = "connected"
            except OSError as exc:
                out[f"{host}:{port}"] = type(exc).__name__
            finally:
                s.close()
        try:
            socket.getaddrinfo("deb.debian.org", 80)
            out["dns"] = "resolved"
        except OSError as exc:
            out["dns"] = type(exc).__name__
        out["ifaces"] = [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]]
        print(json.dumps(out))
        """,
    )
    out = json.loads(r.stdout)
    assert out.pop("ifaces") == ["lo"]
    assert all(v not in ("connected", "resolved") for v in out.values()), out


# ---- filesystem isolation ---------------------------------------------------------------------


def test_host_files_are_invisible(backend: SandboxBackend, box: Sandbox) -> None:
    rubric_dir = Path(tempfile.mkdtemp(prefix="il-rubric-"))
    rubric = rubric_dir / "rubric.txt"
    rubric.write_text("hidden rubric")
    rubric_dir.chmod(0o755)
    rubric.chmod(0o644)  # world-readable on the host: only the sandbox's own filesystem hides it
    with backend.create(_spec()) as other:
        other.write_file("secret.txt", b"other run")
        probes = [
            "/etc/shadow",
            "/root",
            "/work",
            "/home",
            str(rubric),
            str(rubric_dir),
            str(other.host_workspace / "secret.txt"),  # type: ignore[attr-defined]
            str(other.host_dir),  # type: ignore[attr-defined]
            str(box.host_workspace),  # type: ignore[attr-defined]
            "/var/run/docker.sock",
        ]
        if backend.name == "bwrap":  # bwrap mounts only /usr and a synthetic /etc; the image has its own /var
            probes += ["/var", "/opt", "/srv"]
        r = _py(
            box,
            f"""
            import json, os
            res = {{}}
            for p in {probes!r}:
                try:
                    if os.path.isdir(p):
                        res[p] = "LISTED " + repr(os.listdir(p))
                    else:
                        res[p] = "READ " + open(p).read(100)
                except OSError as exc:
                    res[p] = type(exc).__name__
            print(json.dumps(res))
            """,
        )
    try:
        res = json.loads(r.stdout)
        # bwrap shows none of these at all; the image has empty /home, /opt and /srv of its own
        empty_dir_ok = ("LISTED []",) if backend.name == "docker" else ()
        leaked = {p: v for p, v in res.items() if v.startswith(("READ", "LISTED")) and v not in empty_dir_ok}
        assert not leaked, leaked
        if backend.name == "bwrap":  # a synthetic /etc (the image's is Debian's own, root and shadow included)
            passwd = box.exec(["cat", "/etc/passwd"]).stdout
            assert "agent:x:1000:1000" in passwd and "root:" not in passwd
            assert box.exec(["ls", "/etc"]).stdout.split().count("shadow") == 0
    finally:
        rubric.unlink()
        rubric_dir.rmdir()


def test_writes_outside_workspace_and_tmp_fail(backend: SandboxBackend, box: Sandbox) -> None:
    for target in ["/x", "/etc/x", "/usr/x", "/bin/x", "/dev/x", "/proc/x", "/workspace/../x", "/var/tmp/x", "/run/x"]:
        r = box.exec(["sh", "-c", f"echo hi > {target}"])
        assert r.exit_code != 0, target
    assert box.exec(["sh", "-c", "echo hi > /tmp/t && cat /tmp/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /dev/shm/t && cat /dev/shm/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /workspace/w && cat /workspace/w"]).stdout == "hi\n"
    assert box.exec(["test", "-e", "/workspace/w"]).exit_code == 0  # the workspace persists
    # /tmp: bwrap mounts a fresh one per exec; Docker's belongs to the container and persists
    assert box.exec(["test", "-e", "/tmp/t"]).exit_code == {"bwrap": 1, "docker": 0}[backend.name]
    # and /tmp is executable (compiled helpers, pip --target builds)
    r = box.exec(["sh", "-c", "cp /bin/true /tmp/t2 && /tmp/t2 && echo ran"])
    assert r.stdout == "ran\n", r.stderr


def test_tmp_is_size_limited(backend: SandboxBackend) -> None:
    with backend.create(_spec(tmp_size_mb=4)) as sb:
        r = sb.exec(["sh", "-c", "head -c 8000000 /dev/zero > /tmp/big"])
        assert r.exit_code != 0 and "No space left" in r.stderr


def test_two_sandboxes_do_not_share_a_workspace(backend: SandboxBackend) -> None:
    with backend.create(_spec()) as a, backend.create(_spec()) as b:
        a.exec(["sh", "-c", "echo from-a > mine.txt"])
        assert b.exec(["ls", "-A", "/workspace"]).stdout == ""
        assert b.exec(["cat", str(a.host_workspace / "mine.txt")]).exit_code != 0  # type: ignore[attr-defined]
        assert a.read_file("mine.txt") == b"from-a\n"
        with pytest.raises(FileNotFoundError):
            b.read_file("mine.txt")


# ---- timeouts and limits ----------------------------------------------------------------------


def test_timeout_kills_sleep_and_keeps_output(box: Sandbox) -> None:
    start = time.monotonic()
    r = box.exec(["sh", "-c", "echo before; sleep 100"], timeout=1)
    assert time.monotonic() - start < 5
    assert r.timed_out and r.exit_code is None and not r.ok
    assert r.stdout == "before\n"
    assert "sleep 100" not in box.exec(["ps", "-eo", "args"]).stdout


def test_timeout_kills_sigterm_trapping_tree(box: Sandbox) -> None:
    marker = f"il-marker-{uuid.uuid4().hex}"
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "os.fork(); os.fork()\n"
        "print('ready', flush=True)\n"
        "time.sleep(100)\n"
    )
    start = time.monotonic()
    r = box.exec([PYTHON[box.backend], "-c", code, marker], timeout=1.5)
    assert time.monotonic() - start < 5
    assert r.timed_out and "ready" in r.stdout
    assert _wait_gone(marker, 5) == []


def test_background_processes_do_not_outlive_their_exec(box: Sandbox) -> None:
    marker = f"il-bg-{uuid.uuid4().hex}"
    start = time.monotonic()
    # the forked subshells keep the marker in their command line
    r = box.exec(["sh", "-c", f"(sleep 100; : {marker}) & (sleep 100; : {marker}) >/dev/null 2>&1 & echo started"])
    assert r.exit_code == 0 and r.stdout == "started\n"
    assert time.monotonic() - start < 30  # not the 100 s the children sleep
    assert _wait_gone(marker, 3) == []
    assert "sleep 100" not in box.exec(["ps", "-eo", "args"]).stdout


def test_output_is_capped_without_buffering(backend: SandboxBackend) -> None:
    cap = 64 * 1024
    with backend.create(_spec(output_cap_bytes=cap)) as sb:
        tracemalloc.start()
        try:
            r = sb.exec(
                ["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' a; head -c 5000000 /dev/zero >&2"],
                timeout=60,
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert r.exit_code == 0 and r.truncated
    assert r.stdout.startswith("a" * cap)
    assert f"[... output truncated by sandbox: {100_000_000 - cap} bytes dropped ...]" in r.stdout
    assert len(r.stdout) < cap + 200 and len(r.stderr) < cap + 200
    assert "bytes dropped" in r.stderr
    assert peak < 10 * 1024 * 1024, peak


def test_fork_bomb_is_contained(backend: SandboxBackend) -> None:
    pids = 48
    with backend.create(_spec(pids=pids)) as sb:
        # deterministic count: fork until the kernel refuses
        r = _py(
            sb,
            """
            import os, time
            n = 0
            while True:
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:
                    time.sleep(30)
                    os._exit(0)
                n += 1
            print(n)
            """,
            timeout=20,
        )
        assert r.exit_code == 0, r.stderr
        assert 0 < int(r.stdout) <= pids
        # the classic bomb: runs until the timeout, then everything is gone
        marker = f"il-bomb-{uuid.uuid4().hex}"
        start = time.monotonic()
        bomb = sb.exec(["bash", "-c", f":(){{ :|:& }};:; sleep 30 # {marker}"], timeout=3)
        assert bomb.timed_out and time.monotonic() - start < 8
        # the host and the sandbox are still healthy
        assert subprocess.run(["true"], check=False).returncode == 0
        if sb.backend == "docker":  # the container's pids cgroup may still count the bomb: let it settle
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and sb.exec(["echo", "alive"]).stdout != "alive\n":
                time.sleep(0.2)
        assert sb.exec(["echo", "alive"]).stdout == "alive\n"
        assert _wait_gone(marker, 5) == []


def test_memory_hog_fails(backend: SandboxBackend) -> None:
    with backend.create(_spec(memory_mb=256)) as sb:
        r = _py(sb, "x = bytearray(1 << 30); print('allocated')")
        assert r.exit_code != 0 and "allocated" not in r.stdout
        if backend.name == "bwrap":  # RLIMIT_AS refuses the allocation
            assert "MemoryError" in r.stderr
        else:  # the memory cgroup OOM-kills it (or the allocation fails first)
            assert r.exit_code == 137 or "MemoryError" in r.stderr
        assert sb.exec(["echo", "alive"]).stdout == "alive\n"


def test_file_size_limit(backend: SandboxBackend) -> None:
    with backend.create(_spec(file_size_mb=1)) as sb:
        r = sb.exec(["sh", "-c", "head -c 2000000 /dev/zero > big"])
        assert r.exit_code != 0
        assert sb.exec(["stat", "-c", "%s", "big"]).stdout.strip() == str(1024 * 1024)


# ---- host-side files ----------------------------------------------------------------------------


def test_write_read_round_trip(box: Sandbox) -> None:
    box.write_file("data/in/x.csv", b"a,b\n1,2\n")
    box.write_file("/workspace/top.txt", b"top")
    assert box.read_file("data/in/x.csv") == b"a,b\n1,2\n"
    assert box.read_file("/workspace/data/in/x.csv", max_bytes=3) == b"a,b"
    assert box.read_file("top.txt") == b"top"
    # the sandbox user owns what the host wrote and can modify it
    r = box.exec(["sh", "-c", "stat -c %u data/in/x.csv && echo 3,4 >> data/in/x.csv && echo z > data/in/new"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "1000\n"
    assert box.read_file("data/in/x.csv") == b"a,b\n1,2\n3,4\n"
    box.write_file("data/in/x.csv", b"replaced")
    assert box.read_file("data/in/x.csv") == b"replaced"
    with pytest.raises(FileNotFoundError):
        box.read_file("nope.txt")
    with pytest.raises(IsADirectoryError):
        box.read_file("data")


def test_read_and_write_refuse_escapes(box: Sandbox, tmp_path: Path) -> None:
    host_target = tmp_path / "host.txt"
    host_target.write_text("host original")
    r = box.exec(
        ["sh", "-c", f"ln -s /etc/passwd link && ln -s / rootdir && ln -s {host_target} out.txt && mkfifo fifo"]
    )
    assert r.exit_code == 0, r.stderr
    for bad in ["../x", "/workspace/../etc/passwd", "/etc/passwd", "a/../../x"]:
        with pytest.raises(PermissionError):
            box.read_file(bad)
        with pytest.raises(PermissionError):
            box.write_file(bad, b"x")
    with pytest.raises(PermissionError):
        box.read_file("link")
    with pytest.raises(PermissionError):
        box.read_file("rootdir/etc/passwd")
    with pytest.raises(PermissionError):
        box.write_file("rootdir/tmp/evil", b"x")
    start = time.monotonic()
    with pytest.raises(PermissionError):
        box.read_file("fifo")  # must not block waiting for a writer
    assert time.monotonic() - start < 10  # it would block forever; the bound only catches that
    # writing to a name that is a symlink replaces the link, never the host file it names
    box.write_file("out.txt", b"new")
    assert host_target.read_text() == "host original"
    assert box.read_file("out.txt") == b"new"


def test_collect_copies_regular_files_only(box: Sandbox, tmp_path: Path) -> None:
    host_secret = box.host_dir / "host-only.txt"  # type: ignore[attr-defined]  # same filesystem as the workspace
    host_secret.write_text("host secret")
    r = box.exec(
        [
            "sh",
            "-c",
            "mkdir -p results/deep && echo 1 > results/a.txt && echo 2 > results/deep/b.txt"
            " && ln -s /etc/passwd results/passwd-link && ln -s /root results/dirlink"
            " && echo h > h1 && ln h1 h2 && mkfifo fifo && touch \"$(printf 'bad\\nname')\"",
        ]
    )
    assert r.exit_code == 0, r.stderr
    os.link(host_secret, box.host_workspace / "planted")  # type: ignore[attr-defined]  # a hard link to a host file
    dest = tmp_path / "collected"
    result = box.collect(dest)
    assert sorted(f.path for f in result.files) == ["results/a.txt", "results/deep/b.txt"]
    assert (dest / "results/deep/b.txt").read_text() == "2\n"
    assert {f.path: f.size for f in result.files}["results/a.txt"] == 2
    for path in ["results/passwd-link", "results/dirlink", "h1", "h2", "planted", "fifo"]:
        assert path in result.skipped, (path, result.skipped)
    assert "symlink" in result.skipped["results/passwd-link"]
    assert "hard link" in result.skipped["planted"]
    assert any("bad" in p for p in result.skipped)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
    assert copied == ["results/a.txt", "results/deep/b.txt"]
    # an exec's ownership fix-up (where a backend has one) never chowns through a hard link to a host file
    owner = host_secret.stat().st_uid
    box.exec(["true"])
    assert host_secret.stat().st_uid == owner == os.getuid()


# ---- lifecycle ------------------------------------------------------------------------------------


def test_destroy_removes_workspace(backend: SandboxBackend) -> None:
    sb = backend.create(_spec())
    r = sb.exec(["sh", "-c", "mkdir -p ro/sub && echo x > ro/sub/f && chmod 0500 ro/sub && chmod 0 ro && ln -s /usr l"])
    assert r.exit_code == 0, r.stderr
    host_dir = sb.host_dir  # type: ignore[attr-defined]
    assert host_dir.exists()
    sb.destroy()
    assert not host_dir.exists()
    sb.destroy()  # idempotent
    with pytest.raises(SandboxError):
        sb.exec(["true"])
    assert Path("/usr/bin").exists()  # the symlink was removed, not followed


def test_destroy_kills_running_exec(backend: SandboxBackend) -> None:
    sb = backend.create(_spec())
    errors: list[BaseException] = []

    def run() -> None:
        try:
            sb.exec(["sleep", "100"], timeout=60)
        except SandboxError as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)
    start = time.monotonic()
    sb.destroy()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - start < 5
    assert errors and "destroyed" in str(errors[0])
    assert not sb.host_dir.exists()  # type: ignore[attr-defined]
