"""The workspace size quota (a loop-mounted ext4 image per sandbox) and bwrap's memory cgroup.

Real sandboxes on both isolating backends: filling /workspace must fail with
ENOSPC inside while the host's free disk space stays put, and the image and its
mount must be gone after destroy (also when the owner died without destroying).
Where the host cannot give a quota (not root, no loop devices) or it is forced
off, the sandbox falls back to a plain directory and says so.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sandboxes import hostfs
from sandboxes.base import Sandbox, SandboxLimits, SandboxSpec
from sandboxes.bwrap import (
    SANDBOX_HOST_UID,
    BwrapBackend,
    BwrapSandbox,
    memory_cgroup_support,
    pids_cgroup_support,
)
from sandboxes.registry import get_backend

MIB = 1024 * 1024
BACKENDS = ("bwrap", "docker")
ON_CI = os.environ.get("CI", "").lower() == "true"


def _backend(name: str):  # type: ignore[no-untyped-def]
    backend = get_backend(name)
    ok, why = backend.available()
    if not ok:
        if ON_CI and name == "docker":
            pytest.fail(f"CI=true but the docker backend is unavailable: {why}")
        pytest.skip(f"{name} backend unavailable: {why}")
    return backend


def _needs_quota() -> None:
    ok, why = hostfs.quota_support()
    if not ok:
        pytest.skip(f"no workspace quota on this host: {why}")


def _mounted(path: Path) -> bool:
    return any(point == str(path) for point, _t, _s in hostfs.mounts())


def _spec(**limits: int) -> SandboxSpec:
    return SandboxSpec(run_id="quota-test", limits=SandboxLimits(**limits))


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_filling_the_workspace_fails_with_enospc(backend_name: str) -> None:
    _needs_quota()
    backend = _backend(backend_name)
    free_before = shutil.disk_usage(tempfile.gettempdir()).free
    box: Sandbox = backend.create(_spec(workspace_mb=32, file_size_mb=256))
    host_dir, image = box.host_dir, hostfs.image_path(box.host_dir)  # type: ignore[attr-defined]
    try:
        assert box.quota_mb == 32 and _mounted(host_dir) and image.is_file()  # type: ignore[attr-defined]
        assert box.exec(["ls", "-A", "/workspace"]).stdout == ""  # no lost+found
        r = box.exec(
            [
                "sh",
                "-c",
                "head -c 134217728 /dev/zero > /workspace/big; echo rc=$?; stat -c %s big",
            ]
        )
        assert "No space left on device" in r.stderr, r
        assert "rc=0" not in r.stdout
        size = int(r.stdout.split()[-1])
        assert 16 * MIB < size <= 32 * MIB
        # the sandbox still works, and freeing space makes room again
        assert (
            box.exec(["sh", "-c", "rm big && echo ok > small && cat small"]).stdout
            == "ok\n"
        )
        box.write_file("from-host.txt", b"x")
        assert box.read_file("from-host.txt") == b"x"
        # the host only paid for what the image holds (at most the quota)
        assert shutil.disk_usage(tempfile.gettempdir()).free > free_before - 40 * MIB
    finally:
        box.destroy()
    assert not host_dir.exists() and not image.exists() and not _mounted(host_dir)
    assert shutil.disk_usage(tempfile.gettempdir()).free > free_before - 8 * MIB


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_quota_is_forced_off_by_the_environment(
    backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _backend(backend_name)
    monkeypatch.setenv(hostfs.QUOTA_ENV, "off")
    with backend.create(_spec(workspace_mb=8, file_size_mb=16)) as box:
        host_dir = box.host_dir  # type: ignore[attr-defined]
        assert box.quota_mb is None and hostfs.QUOTA_ENV in box.quota_note  # type: ignore[attr-defined]
        assert not _mounted(host_dir) and not hostfs.image_path(host_dir).exists()
        # no quota: 3 x 8 MiB fit in an "8 MiB" workspace (the documented fallback)
        r = box.exec(
            [
                "sh",
                "-c",
                "for i in 1 2 3; do head -c 8388608 /dev/zero > f$i || exit 1; done; du -sk .",
            ]
        )
        assert r.exit_code == 0 and int(r.stdout.split()[0]) >= 24 * 1024, r
    assert not host_dir.exists()


def test_quota_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostfs.os, "geteuid", lambda: 1000)
    ok, why = hostfs.quota_support()
    assert not ok and "root" in why


class _Plain(hostfs.HostWorkspaceSandbox):
    def exec(self, cmd, **kw):  # type: ignore[no-untyped-def,override]
        raise NotImplementedError


def test_plain_host_workspace_has_no_quota_unless_asked(tmp_path: Path) -> None:
    box = _Plain(_spec(), prefix="il-plain-", temp_root=tmp_path)
    try:
        assert box.quota_mb is None and not _mounted(box.host_dir)
    finally:
        box.destroy()


def test_stale_quota_mounts_of_a_dead_owner_are_reaped() -> None:
    _needs_quota()
    _backend("bwrap")
    code = textwrap.dedent(
        """
        import time
        from sandboxes.base import SandboxSpec
        from sandboxes.bwrap import BwrapBackend
        box = BwrapBackend().create(SandboxSpec(run_id="stale-quota"))
        box.write_file("left.txt", b"behind")
        print(box.host_dir, flush=True)
        time.sleep(120)
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[1],
    )
    try:
        assert owner.stdout is not None
        host_dir = Path(owner.stdout.readline().strip())
    finally:
        owner.send_signal(signal.SIGKILL)  # dies without destroying its sandbox
        owner.wait()
    assert _mounted(host_dir) and hostfs.image_path(host_dir).exists()
    with BwrapBackend().create(_spec()) as alive:  # creating a backend reaps
        assert (
            not _mounted(host_dir)
            and not host_dir.exists()
            and not hostfs.image_path(host_dir).exists()
        )
        assert _mounted(alive.host_dir)  # a live owner's sandbox stays
        assert alive.exec(["true"]).ok


def test_bwrap_memory_cgroup_is_per_sandbox_and_removed() -> None:
    where, why = memory_cgroup_support()
    if where is None:
        pytest.skip(why)
    backend = _backend("bwrap")
    box = backend.create(_spec(memory_mb=128))
    assert isinstance(box, BwrapSandbox) and box.cgroup is not None
    path = box.cgroup.path
    try:
        assert path.is_dir()
        start = time.monotonic()
        r = box.exec(
            [
                "/usr/bin/python3",
                "-c",
                (
                    "import os, time\n"
                    "for _ in range(3):\n"
                    "    if os.fork() == 0:\n"
                    "        b = bytearray(96 << 20); time.sleep(2); print('held', flush=True); os._exit(0)\n"
                    "for _ in range(3):\n"
                    "    os.wait()\n"
                ),
            ],
            timeout=30,
        )
        assert r.stdout.count("held") <= 1, r  # 3 x 96 MiB cannot coexist under 128 MiB
        assert time.monotonic() - start < 30
        assert box.exec(["echo", "alive"]).stdout == "alive\n"
    finally:
        box.destroy()
    assert not path.exists()


def test_bwrap_memory_cgroup_can_be_forced_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_BWRAP_CGROUP", "off")
    backend = _backend("bwrap")
    with backend.create(_spec()) as box:
        assert isinstance(box, BwrapSandbox)
        assert box.cgroup is None and "RLIMIT_AS" in box.memory_note
        assert box.pids_limit is None and "RLIMIT_NPROC" in box.pids_note
        assert box.exec(["true"]).ok


_FORK_UNTIL_REFUSED = """
import os, time
time.sleep(1.5)  # the host's other tasks of this uid end meanwhile
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
"""


def test_bwrap_pids_cgroup_counts_only_the_sandbox() -> None:
    """RLIMIT_NPROC's budget grew when other tasks of the sandbox uid ended mid-run; the pids cgroup does not."""
    where, why = pids_cgroup_support()
    if where is None:
        pytest.skip(why)
    backend = _backend("bwrap")
    if backend.host_uid != SANDBOX_HOST_UID:
        pytest.skip("the sandbox does not run as the shared unprivileged uid here")
    sleepers = [
        subprocess.Popen(["sleep", "60"], user=SANDBOX_HOST_UID, group=SANDBOX_HOST_UID)
        for _ in range(6)
    ]
    box = backend.create(_spec(pids=40))
    assert isinstance(box, BwrapSandbox) and box.pids_limit is not None
    path = box.pids_limit.path
    try:
        def end_sleepers() -> None:
            for proc in sleepers:
                proc.kill()
                proc.wait()

        killer = threading.Timer(0.5, end_sleepers)  # after exec has counted them, before the forks
        killer.start()
        r = box.exec(["/usr/bin/python3", "-c", _FORK_UNTIL_REFUSED], timeout=30)
        killer.join()
        assert r.exit_code == 0, r
        assert int(r.stdout) == 40  # pids.max = 40 + bwrap's own three, whatever the host does
        assert box.exec(["echo", "alive"]).stdout == "alive\n"
    finally:
        for proc in sleepers:
            if proc.poll() is None:
                proc.kill()
        box.destroy()
    assert not path.exists()
