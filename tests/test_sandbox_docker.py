"""The Docker backend against a real engine and the real sandbox image.

No mocks: every test builds real containers. Skipped (with the reason) only
when no engine can run here; on CI (``CI=true``) a missing engine or image is a
failure, not a skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes.base import SandboxError, SandboxLimits, SandboxSpec, SandboxUnavailable
from sandboxes.docker import (
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN_ID,
    DockerBackend,
    DockerSandbox,
    owner_is_gone,
    owner_label,
)
from sandboxes.registry import get_backend

PY = "python3"
ON_CI = os.environ.get("CI", "").lower() == "true"


def _docker_backend_or_skip() -> DockerBackend:
    backend = DockerBackend()
    ok, why = backend.available()
    if not ok:
        if ON_CI:
            pytest.fail(f"CI=true but the docker backend is unavailable: {why}")
        pytest.skip(f"docker backend unavailable: {why}")
    return backend


@pytest.fixture(scope="module")
def backend() -> DockerBackend:
    return _docker_backend_or_skip()


def _spec(**limits: object) -> SandboxSpec:
    return SandboxSpec(run_id=f"test-{uuid.uuid4().hex[:8]}", limits=SandboxLimits(**limits))


@pytest.fixture
def box(backend: DockerBackend) -> Iterator[DockerSandbox]:
    with backend.create(_spec(command_timeout_s=30)) as sb:
        yield sb  # type: ignore[misc]


def _py(box: DockerSandbox, code: str, **kw: object):  # type: ignore[no-untyped-def]
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


def _wait_gone(marker: str, seconds: float = 5) -> list[int]:
    deadline = time.monotonic() + seconds
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _processes_with(marker)


# ---- registry and availability ----------------------------------------------------------


def test_registry_knows_docker(backend: DockerBackend) -> None:
    b = get_backend("docker")
    assert isinstance(b, DockerBackend) and b.isolated and b.name == "docker"


def test_unavailable_without_engine_says_what_to_start() -> None:
    ok, why = DockerBackend(base_url="unix:///nonexistent/docker.sock").available()
    assert not ok and "no Docker engine answers" in why and "dockerd" in why


def test_unavailable_without_image_says_how_to_build(backend: DockerBackend) -> None:
    ok, why = DockerBackend(image="integritylab/no-such-image:nope").available()
    assert not ok and "integritylab images build --offline" in why
    with pytest.raises(SandboxUnavailable, match="images build"):
        backend.create(SandboxSpec(run_id="x", image="integritylab/no-such-image:nope"))


# ---- exec basics --------------------------------------------------------------------------


def test_exec_exit_code_stdout_stderr_stdin(box: DockerSandbox) -> None:
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


def test_env_is_clean_and_configurable(backend: DockerBackend) -> None:
    os.environ["IL_HOST_SECRET"] = "leaked"
    try:
        spec = _spec()
        spec.env["FROM_SPEC"] = "1"
        with backend.create(spec) as sb:
            env = sb.exec(["env"], env={"FROM_CALL": "2", "LANG": "C"}).stdout.splitlines()
            ps = sb.exec(["ps", "-eo", "args"]).stdout
    finally:
        del os.environ["IL_HOST_SECRET"]
    assert "FROM_SPEC=1" in env and "FROM_CALL=2" in env and "LANG=C" in env
    assert "HOME=/workspace" in env and "MPLBACKEND=Agg" in env
    assert not any(line.startswith("IL_HOST_SECRET") for line in env)
    assert "FROM_SPEC" not in ps


def test_python_science_stack_and_matplotlib_png(box: DockerSandbox) -> None:
    r = _py(
        box,
        """
        import numpy as np, pandas as pd, scipy.stats, sklearn.linear_model, matplotlib
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot(np.arange(10) ** 2)
        fig.savefig("/workspace/plot.png")
        print(np.arange(4).sum(), matplotlib.get_backend().lower(), len(pd.DataFrame({"a": [1, 2]})))
        """,
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == ["6", "agg", "2"]
    assert box.read_file("plot.png")[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing but the plot landed in the workspace (caches live in /tmp)
    assert box.exec(["ls", "-A", "/workspace"]).stdout.split() == ["plot.png"]


# ---- privileges ----------------------------------------------------------------------------


def test_unprivileged_uid_and_no_capabilities(box: DockerSandbox) -> None:
    assert box.exec(["id", "-u"]).stdout.strip() == "1000"
    assert box.exec(["id", "-g"]).stdout.strip() == "1000"
    status = box.exec(["cat", "/proc/self/status"]).stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0 and int(fields["CapBnd"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"
    assert box.exec(["unshare", "-U", "true"]).exit_code != 0


def test_container_is_hardened_and_labelled(backend: DockerBackend, box: DockerSandbox) -> None:
    attrs = backend.client().api.inspect_container(box.container_id)
    host = attrs["HostConfig"]
    limits = box.spec.limits
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] and host["Init"]
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert host["Memory"] == host["MemorySwap"] == limits.memory_mb * 1024 * 1024
    assert host["NanoCpus"] == 10**9 and host["PidsLimit"] == limits.pids + 2
    assert host["Tmpfs"]["/tmp"].startswith(f"size={limits.tmp_size_mb}m,exec")
    assert attrs["Config"]["User"] == "1000:1000"
    labels = attrs["Config"]["Labels"]
    assert labels[LABEL_MANAGED] == "1" and labels[LABEL_RUN_ID] == box.spec.run_id
    assert labels[LABEL_OWNER] == owner_label()
    mounts = {m["Destination"]: m for m in attrs["Mounts"]}
    assert list(mounts) == ["/workspace"] and mounts["/workspace"]["Source"] == str(box.host_workspace)


# ---- network ---------------------------------------------------------------------------------


def test_network_is_unreachable(box: DockerSandbox) -> None:
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


# ---- filesystem isolation -----------------------------------------------------------------------


def test_host_files_are_invisible(backend: DockerBackend, box: DockerSandbox) -> None:
    rubric_dir = Path(tempfile.mkdtemp(prefix="il-rubric-"))
    rubric = rubric_dir / "rubric.txt"
    rubric.write_text("hidden rubric")
    rubric_dir.chmod(0o755)
    rubric.chmod(0o644)
    with backend.create(_spec()) as other:
        other.write_file("secret.txt", b"other run")
        probes = [
            "/etc/shadow",
            "/root",
            "/work",
            "/home",
            str(rubric),
            str(rubric_dir),
            str(other.host_workspace / "secret.txt"),
            str(other.host_dir),
            str(box.host_workspace),
            "/var/run/docker.sock",
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
        leaked = {
            p: v for p, v in res.items() if v.startswith("READ") or v not in ("LISTED []",) and v.startswith("LISTED")
        }
        assert not leaked, leaked
    finally:
        rubric.unlink()
        rubric_dir.rmdir()


def test_writes_outside_workspace_and_tmp_fail(box: DockerSandbox) -> None:
    for target in ["/x", "/etc/x", "/usr/x", "/bin/x", "/dev/x", "/proc/x", "/workspace/../x", "/var/tmp/x", "/run/x"]:
        r = box.exec(["sh", "-c", f"echo hi > {target}"])
        assert r.exit_code != 0, target
    assert box.exec(["sh", "-c", "echo hi > /tmp/t && cat /tmp/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /dev/shm/t && cat /dev/shm/t"]).stdout == "hi\n"
    assert box.exec(["sh", "-c", "echo hi > /workspace/w && cat /workspace/w"]).stdout == "hi\n"
    # /tmp belongs to the container: it persists across execs of one sandbox, like the workspace
    assert box.exec(["test", "-e", "/tmp/t"]).exit_code == 0
    assert box.exec(["test", "-e", "/workspace/w"]).exit_code == 0
    # and /tmp is executable (compiled helpers, pip --target builds)
    r = box.exec(["sh", "-c", "cp /bin/true /tmp/t2 && /tmp/t2 && echo ran"])
    assert r.stdout == "ran\n", r.stderr


def test_tmp_is_size_limited(backend: DockerBackend) -> None:
    with backend.create(_spec(tmp_size_mb=4)) as sb:
        r = sb.exec(["sh", "-c", "head -c 8000000 /dev/zero > /tmp/big"])
        assert r.exit_code != 0 and "No space left" in r.stderr


def test_two_sandboxes_do_not_share_a_workspace(backend: DockerBackend) -> None:
    with backend.create(_spec()) as a, backend.create(_spec()) as b:
        a.exec(["sh", "-c", "echo from-a > mine.txt"])
        assert b.exec(["ls", "-A", "/workspace"]).stdout == ""
        assert b.exec(["cat", str(a.host_workspace / "mine.txt")]).exit_code != 0
        assert a.read_file("mine.txt") == b"from-a\n"
        with pytest.raises(FileNotFoundError):
            b.read_file("mine.txt")


# ---- timeouts and limits --------------------------------------------------------------------------


def test_timeout_kills_sleep_and_keeps_output(box: DockerSandbox) -> None:
    start = time.monotonic()
    r = box.exec(["sh", "-c", "echo before; sleep 100"], timeout=1)
    assert time.monotonic() - start < 5
    assert r.timed_out and r.exit_code is None and not r.ok
    assert r.stdout == "before\n"
    assert "sleep 100" not in box.exec(["ps", "-eo", "args"]).stdout


def test_timeout_kills_sigterm_trapping_tree(box: DockerSandbox) -> None:
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
    assert _wait_gone(marker) == []


def test_background_processes_do_not_outlive_their_exec(box: DockerSandbox) -> None:
    marker = f"il-bg-{uuid.uuid4().hex}"
    start = time.monotonic()
    # the forked subshells keep the marker in their command line
    r = box.exec(["sh", "-c", f"(sleep 100; : {marker}) & (sleep 100; : {marker}) >/dev/null 2>&1 & echo started"])
    assert r.exit_code == 0 and r.stdout == "started\n"
    assert time.monotonic() - start < 30  # not the 100 s the children sleep
    assert _wait_gone(marker, 3) == []
    assert "sleep 100" not in box.exec(["ps", "-eo", "args"]).stdout


def test_output_is_capped_without_buffering(backend: DockerBackend) -> None:
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


def test_fork_bomb_is_contained(backend: DockerBackend) -> None:
    pids = 48
    with backend.create(_spec(pids=pids)) as sb:
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
        marker = f"il-bomb-{uuid.uuid4().hex}"
        start = time.monotonic()
        bomb = sb.exec(["bash", "-c", f":(){{ :|:& }};:; sleep 30 # {marker}"], timeout=3)
        assert bomb.timed_out and time.monotonic() - start < 8
        assert subprocess.run(["true"], check=False).returncode == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sb.exec(["echo", "alive"]).stdout != "alive\n":
            time.sleep(0.2)
        assert sb.exec(["echo", "alive"]).stdout == "alive\n"
        assert _wait_gone(marker) == []


def test_memory_hog_is_oom_killed(backend: DockerBackend) -> None:
    with backend.create(_spec(memory_mb=256)) as sb:
        r = _py(sb, "x = bytearray(1 << 30); print('allocated')")
        assert r.exit_code != 0 and "allocated" not in r.stdout
        assert r.exit_code == 137 or "MemoryError" in r.stderr
        assert sb.exec(["echo", "alive"]).stdout == "alive\n"


def test_file_size_limit(backend: DockerBackend) -> None:
    with backend.create(_spec(file_size_mb=1)) as sb:
        r = sb.exec(["sh", "-c", "head -c 2000000 /dev/zero > big"])
        assert r.exit_code != 0
        assert sb.exec(["stat", "-c", "%s", "big"]).stdout.strip() == str(1024 * 1024)


# ---- host-side files -------------------------------------------------------------------------------


def test_write_read_round_trip(box: DockerSandbox) -> None:
    box.write_file("data/in/x.csv", b"a,b\n1,2\n")
    box.write_file("/workspace/top.txt", b"top")
    assert box.read_file("data/in/x.csv") == b"a,b\n1,2\n"
    assert box.read_file("/workspace/data/in/x.csv", max_bytes=3) == b"a,b"
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


def test_read_and_write_refuse_escapes(box: DockerSandbox, tmp_path: Path) -> None:
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
        box.read_file("fifo")
    assert time.monotonic() - start < 10  # it would block forever; the bound only catches that
    box.write_file("out.txt", b"new")
    assert host_target.read_text() == "host original"
    assert box.read_file("out.txt") == b"new"


def test_collect_copies_regular_files_only(box: DockerSandbox, tmp_path: Path) -> None:
    host_secret = box.host_dir / "host-only.txt"  # same filesystem as the workspace
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
    os.link(host_secret, box.host_workspace / "planted")
    dest = tmp_path / "collected"
    result = box.collect(dest)
    assert sorted(f.path for f in result.files) == ["results/a.txt", "results/deep/b.txt"]
    assert (dest / "results/deep/b.txt").read_text() == "2\n"
    for path in ["results/passwd-link", "results/dirlink", "h1", "h2", "planted", "fifo"]:
        assert path in result.skipped, (path, result.skipped)
    assert "symlink" in result.skipped["results/passwd-link"]
    assert "hard link" in result.skipped["planted"]
    assert any("bad" in p for p in result.skipped)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
    assert copied == ["results/a.txt", "results/deep/b.txt"]
    assert host_secret.stat().st_uid == os.getuid()


# ---- lifecycle ----------------------------------------------------------------------------------------


def test_destroy_removes_container_and_workspace(backend: DockerBackend) -> None:
    sb = backend.create(_spec())
    r = sb.exec(["sh", "-c", "mkdir -p ro/sub && echo x > ro/sub/f && chmod 0500 ro/sub && chmod 0 ro && ln -s /usr l"])
    assert r.exit_code == 0, r.stderr
    host_dir, cid = sb.host_dir, sb.container_id
    assert host_dir.exists() and sb.container_exists()
    sb.destroy()
    assert not host_dir.exists() and not sb.container_exists()
    sb.destroy()  # idempotent
    with pytest.raises(SandboxError):
        sb.exec(["true"])
    assert not [c for c in backend.managed_containers() if c["Id"] == cid]
    assert Path("/usr/bin").exists()


def test_destroy_kills_running_exec(backend: DockerBackend) -> None:
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


def test_owner_label_judges_only_this_host() -> None:
    assert not owner_is_gone(owner_label())
    assert not owner_is_gone("some-other-host|x|1|1")
    assert not owner_is_gone("garbage")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    label = owner_label(child.pid)
    child.wait()
    assert owner_is_gone(label)


def test_orphans_of_a_dead_owner_are_reaped(backend: DockerBackend) -> None:
    code = textwrap.dedent(
        """
        import sys, time
        from sandboxes.base import SandboxSpec
        from sandboxes.docker import DockerBackend
        box = DockerBackend().create(SandboxSpec(run_id="orphan-test"))
        box.write_file("left.txt", b"behind")
        print(box.container_id, box.host_dir, flush=True)
        time.sleep(120)
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1]
    )
    try:
        assert owner.stdout is not None
        cid, host_dir = owner.stdout.readline().split()
    finally:
        owner.send_signal(signal.SIGKILL)  # the owner dies without cleaning up
        owner.wait()
    ids = {c["Id"] for c in backend.managed_containers()}
    assert cid in ids and Path(host_dir).exists()
    with backend.create(_spec()) as alive:
        DockerBackend()  # creating a backend reaps
        ids = {c["Id"] for c in backend.managed_containers()}
        assert cid not in ids and not Path(host_dir).exists()
        assert alive.container_id in ids  # a live owner's sandbox stays
        assert alive.exec(["true"]).ok
