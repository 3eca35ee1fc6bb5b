"""The bubblewrap backend against a real bwrap: isolation, limits and host-side file safety.

No mocks: every test builds real sandboxes. The module is skipped (with the
reason) only when bwrap cannot run here.
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

from sandboxes.base import SandboxError, SandboxLimits, SandboxSpec
from sandboxes.bwrap import INSTALL_HINT, BwrapBackend, BwrapSandbox
from sandboxes.registry import get_backend, pick_backend

PY = "/usr/bin/python3"


@pytest.fixture(scope="module")
def backend() -> BwrapBackend:
    b = BwrapBackend()
    ok, why = b.available()
    if not ok:
        pytest.skip(f"bwrap backend unavailable: {why}")
    return b


def _spec(**limits: object) -> SandboxSpec:
    return SandboxSpec(run_id=f"test-{uuid.uuid4().hex[:8]}", limits=SandboxLimits(**limits))


@pytest.fixture
def box(backend: BwrapBackend) -> Iterator[BwrapSandbox]:
    with backend.create(_spec(command_timeout_s=30)) as sb:
        yield sb  # type: ignore[misc]


def _py(box: BwrapSandbox, code: str, **kw: object):  # type: ignore[no-untyped-def]
    return box.exec([PY, "-c", textwrap.dedent(code)], **kw)  # type: ignore[arg-type]


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


# ---- registry -----------------------------------------------------------------


def test_registry_picks_bwrap(backend: BwrapBackend, monkeypatch) -> None:
    import sandboxes.registry as registry

    assert isinstance(get_backend("bwrap"), BwrapBackend)
    picked, why = pick_backend(None)  # Docker comes first where an engine and the image exist
    assert picked.isolated and picked.name in ("docker", "bwrap") and picked.name in why
    monkeypatch.setattr(registry, "AUTO_ORDER", ("bwrap",))
    picked, why = pick_backend(None)
    assert picked.name == "bwrap" and "bwrap" in why


def test_unavailable_without_bwrap_names_the_package() -> None:
    b = BwrapBackend()
    b.bwrap_path = None
    assert b.available() == (False, INSTALL_HINT)


# ---- exec basics ----------------------------------------------------------------


def test_exec_exit_code_stdout_stderr_stdin(box: BwrapSandbox) -> None:
    r = box.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out, r.truncated) == (3, "out\n", "err\n", False, False)
    assert not r.ok
    assert box.exec(["cat"], stdin="hello\n").stdout == "hello\n"
    assert box.exec(["wc", "-c"], stdin=b"\x00" * 300_000).stdout.strip() == "300000"
    assert box.exec(["cat"]).stdout == ""  # no stdin means /dev/null, not a hang
    missing = box.exec(["no-such-command"])
    assert missing.exit_code == 127 and "no-such-command" in missing.stderr
    box.exec(["mkdir", "sub"])
    assert box.exec(["pwd"], cwd="sub").stdout == "/workspace/sub\n"
    assert box.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert box.exec(["true"], cwd="/workspace/nope").exit_code == 1


def test_env_is_clean_and_configurable(backend: BwrapBackend) -> None:
    os.environ["IL_HOST_SECRET"] = "leaked"
    try:
        spec = _spec()
        spec.env["FROM_SPEC"] = "1"
        spec.env["IL_TOKEN"] = "tok-" + uuid.uuid4().hex
        with backend.create(spec) as sb:
            env = sb.exec(["env"], env={"FROM_CALL": "2", "LANG": "C"}).stdout.splitlines()
            # values travel via an fd, not bwrap's argv (readable by every host user,
            # and inside the sandbox as the cmdline of its pid 1)
            r = sb.exec(["sh", "-c", 'echo "$IL_TOKEN"; tr "\\0" " " < /proc/1/cmdline'])
    finally:
        del os.environ["IL_HOST_SECRET"]
    assert "FROM_SPEC=1" in env and "FROM_CALL=2" in env and "LANG=C" in env
    assert "HOME=/workspace" in env and "MPLBACKEND=Agg" in env
    assert not any(line.startswith("IL_HOST_SECRET") for line in env)
    value, cmdline = r.stdout.split("\n", 1)
    assert value == spec.env["IL_TOKEN"] and "bwrap" in cmdline and value not in cmdline


def test_python_numpy_and_matplotlib_png(box: BwrapSandbox) -> None:
    r = _py(
        box,
        """
        import numpy as np, matplotlib
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot(np.arange(10) ** 2)
        fig.savefig("/workspace/plot.png")
        print(np.arange(4).sum(), matplotlib.get_backend())
        """,
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == ["6", "agg"]
    assert box.read_file("plot.png")[:8] == b"\x89PNG\r\n\x1a\n"


# ---- privileges ---------------------------------------------------------------------


def test_unprivileged_uid_and_no_capabilities(box: BwrapSandbox) -> None:
    assert box.exec(["id", "-u"]).stdout.strip() == "1000"
    assert box.exec(["id", "-g"]).stdout.strip() == "1000"
    status = box.exec(["cat", "/proc/self/status"]).stdout
    caps = dict(line.split(":\t") for line in status.splitlines() if line.startswith("Cap"))
    assert int(caps["CapEff"], 16) == 0 and int(caps["CapPrm"], 16) == 0
    # no nested user namespaces (which would hand out capabilities again)
    assert box.exec(["unshare", "-U", "true"]).exit_code != 0


def test_no_fds_leak_into_sandbox(box: BwrapSandbox) -> None:
    r = _py(box, "import os; print(sorted(os.listdir('/proc/self/fd')))")
    assert json.loads(r.stdout.replace("'", '"')) == ["0", "1", "2", "3"]  # 3 = listdir's own fd


# ---- network ------------------------------------------------------------------------


def test_network_is_unreachable(box: BwrapSandbox) -> None:
    r = _py(
        box,
        """
        import json, socket
        out = {}
        for host, port in [("1.1.1.1", 53), ("127.0.0.1", 5432), ("127.0.0.1", 6379)]:
            s = socket.socket()
            s.settimeout(3)
            try:
                s.connect((host, port))
                out[f"{host}:{port}"] = "connected"
            except OSError as exc:
                out[f"{host}:{port}"] = type(exc).__name__
            finally:
                s.close()
        out["ifaces"] = [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]]
        print(json.dumps(out))
        """,
    )
    out = json.loads(r.stdout)
    assert out.pop("ifaces") == ["lo"]
    assert all(v != "connected" for v in out.values()), out


# ---- filesystem isolation ----------------------------------------------------------------


def test_host_files_are_invisible(backend: BwrapBackend, box: BwrapSandbox) -> None:
    rubric_dir = Path(tempfile.mkdtemp(prefix="il-rubric-"))
    rubric = rubric_dir / "rubric.txt"
    rubric.write_text("hidden rubric")
    rubric_dir.chmod(0o755)
    rubric.chmod(0o644)  # world-readable on the host: only the mount namespace hides it
    with backend.create(_spec()) as other:
        other.write_file("secret.txt", b"other run")
        probes = [
            "/etc/shadow",
            "/root",
            "/work",
            "/home",
            "/var",
            "/opt",
            "/srv",
            str(rubric),
            str(rubric_dir),
            str(other.host_workspace / "secret.txt"),
            str(other.host_dir),
            str(box.host_workspace),
        ]
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
        leaked = {p: v for p, v in res.items() if v.startswith(("READ", "LISTED"))}
        assert not leaked, leaked
        passwd = box.exec(["cat", "/etc/passwd"]).stdout
        assert "agent:x:1000:1000" in passwd and "root:" not in passwd
        assert box.exec(["ls", "/etc"]).stdout.split().count("shadow") == 0
    finally:
        rubric.unlink()
        rubric_dir.rmdir()


def test_writes_outside_workspace_and_tmp_fail(box: BwrapSandbox) -> None:
    for target in ["/x", "/etc/x", "/usr/x", "/bin/x", "/dev/x", "/proc/x", "/workspace/../x"]:
        r = box.exec(["sh", "-c", f"echo hi > {target}"])
        assert r.exit_code != 0, target
    assert box.exec(["sh", "-c", "echo hi > /tmp/t && cat /tmp/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /dev/shm/t && cat /dev/shm/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /workspace/w && cat /workspace/w"]).stdout == "hi\n"
    # /tmp is per exec; the workspace persists
    assert box.exec(["test", "-e", "/tmp/t"]).exit_code == 1
    assert box.exec(["test", "-e", "/workspace/w"]).exit_code == 0


def test_tmp_is_size_limited(backend: BwrapBackend) -> None:
    with backend.create(_spec(tmp_size_mb=4)) as sb:
        r = sb.exec(["sh", "-c", "head -c 8000000 /dev/zero > /tmp/big"])
        assert r.exit_code != 0 and "No space left" in r.stderr


def test_two_sandboxes_do_not_share_a_workspace(backend: BwrapBackend) -> None:
    with backend.create(_spec()) as a, backend.create(_spec()) as b:
        a.exec(["sh", "-c", "echo from-a > mine.txt"])
        assert b.exec(["ls", "-A", "/workspace"]).stdout == ""
        assert b.exec(["cat", str(a.host_workspace / "mine.txt")]).exit_code != 0
        assert a.read_file("mine.txt") == b"from-a\n"
        with pytest.raises(FileNotFoundError):
            b.read_file("mine.txt")


# ---- timeouts and limits --------------------------------------------------------------


def test_timeout_kills_sleep_and_keeps_output(box: BwrapSandbox) -> None:
    start = time.monotonic()
    r = box.exec(["sh", "-c", "echo before; sleep 100"], timeout=1)
    assert time.monotonic() - start < 5
    assert r.timed_out and r.exit_code is None and not r.ok
    assert r.stdout == "before\n"


def test_timeout_kills_sigterm_trapping_tree(box: BwrapSandbox) -> None:
    marker = f"il-marker-{uuid.uuid4().hex}"
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "os.fork(); os.fork()\n"
        "print('ready', flush=True)\n"
        "time.sleep(100)\n"
    )
    start = time.monotonic()
    r = box.exec([PY, "-c", code, marker], timeout=1.5)
    assert time.monotonic() - start < 5
    assert r.timed_out and "ready" in r.stdout
    deadline = time.monotonic() + 3
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []


def test_output_is_capped_without_buffering(backend: BwrapBackend) -> None:
    cap = 64 * 1024
    with backend.create(_spec(output_cap_bytes=cap)) as sb:
        tracemalloc.start()
        try:
            r = sb.exec(
                ["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' a; head -c 5000000 /dev/zero >&2"],
                timeout=30,
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


def test_fork_bomb_is_contained(backend: BwrapBackend) -> None:
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
        assert sb.exec(["echo", "alive"]).stdout == "alive\n"
        deadline = time.monotonic() + 5
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(marker) == []


def test_memory_hog_fails(backend: BwrapBackend) -> None:
    with backend.create(_spec(memory_mb=256)) as sb:
        r = _py(sb, "x = bytearray(1 << 30); print('allocated')")
    assert r.exit_code != 0 and "allocated" not in r.stdout
    assert "MemoryError" in r.stderr


def test_file_size_limit(backend: BwrapBackend) -> None:
    with backend.create(_spec(file_size_mb=1)) as sb:
        r = sb.exec(["sh", "-c", "head -c 2000000 /dev/zero > big"])
        assert r.exit_code != 0
        assert sb.exec(["stat", "-c", "%s", "big"]).stdout.strip() == str(1024 * 1024)


# ---- host-side files ----------------------------------------------------------------------


def test_write_read_round_trip(box: BwrapSandbox) -> None:
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


def test_read_and_write_refuse_escapes(box: BwrapSandbox, tmp_path: Path) -> None:
    host_target = tmp_path / "host.txt"
    host_target.write_text("host original")
    r = box.exec(
        [
            "sh",
            "-c",
            f"ln -s /etc/passwd link && ln -s / rootdir && ln -s {host_target} out.txt && mkfifo fifo",
        ]
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


def test_collect_copies_regular_files_only(box: BwrapSandbox, tmp_path: Path) -> None:
    host_secret = box.host_dir / "host-only.txt"  # on the same filesystem as the workspace
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
    os.link(host_secret, box.host_workspace / "planted")  # a hard link to a host file
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
    # the pre-exec ownership fix-up never chowns through a hard link to a host file
    owner = host_secret.stat().st_uid
    box.exec(["true"])
    assert host_secret.stat().st_uid == owner == os.getuid()


def test_destroy_removes_workspace(backend: BwrapBackend) -> None:
    sb = backend.create(_spec())
    r = sb.exec(["sh", "-c", "mkdir -p ro/sub && echo x > ro/sub/f && chmod 0500 ro/sub && chmod 0 ro && ln -s /usr l"])
    assert r.exit_code == 0, r.stderr
    host_dir = sb.host_dir
    assert host_dir.exists()
    sb.destroy()
    assert not host_dir.exists()
    sb.destroy()  # idempotent
    with pytest.raises(SandboxError):
        sb.exec(["true"])
    assert Path("/usr/bin").exists()  # the symlink was removed, not followed


def test_destroy_kills_running_exec(backend: BwrapBackend) -> None:
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
    assert not sb.host_dir.exists()
