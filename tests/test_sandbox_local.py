"""The unisolated ``local`` backend and the shared process runner it exercises directly."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from sandboxes.base import SandboxLimits, SandboxSpec
from sandboxes.local import LocalBackend, LocalSandbox
from sandboxes.process import run_process
from sandboxes.registry import get_backend, pick_backend


def _box(**limits: object) -> LocalSandbox:
    spec = SandboxSpec(run_id=f"local-{uuid.uuid4().hex[:8]}", limits=SandboxLimits(**limits))
    return LocalBackend().create(spec)


def test_registered_but_never_auto_picked() -> None:
    backend = get_backend("local")
    assert isinstance(backend, LocalBackend) and not backend.isolated
    assert "NO isolation" in backend.available()[1]
    assert pick_backend("local")[0].name == "local"
    try:
        picked, _ = pick_backend(None)
    except Exception:  # noqa: BLE001 - no isolating backend on this host is fine too
        return
    assert picked.name != "local"


def test_exec_cwd_env_stdin() -> None:
    with _box() as box:
        assert box.exec(["pwd"]).stdout.strip() == str(box.host_workspace)
        box.exec(["mkdir", "sub"])
        assert box.exec(["pwd"], cwd="/workspace/sub").stdout.strip() == str(box.host_workspace / "sub")
        assert box.exec(["pwd"], cwd="sub").stdout.strip() == str(box.host_workspace / "sub")
        r = box.exec(["sh", "-c", 'echo "$HOME $X"; cat; exit 4'], stdin="in\n", env={"X": "y"})
        assert (r.exit_code, r.stdout) == (4, f"{box.host_workspace} y\nin\n")
        assert box.exec(["no-such-command-here"]).exit_code == 127
        assert box.exec(["true"], cwd="/workspace/missing").exit_code == 1


def test_timeout_kills_group_and_background_children() -> None:
    with _box() as box:
        start = time.monotonic()
        r = box.exec(["sh", "-c", "trap '' TERM; echo up; sleep 100 & sleep 100"], timeout=1)
        assert r.timed_out and r.exit_code is None and r.stdout == "up\n"
        assert time.monotonic() - start < 5
        # a background child that keeps the pipes open does not outlive its command
        start = time.monotonic()
        r = box.exec(["sh", "-c", "sleep 100 & echo done"], timeout=30)
        assert r.exit_code == 0 and r.stdout == "done\n" and not r.timed_out
        assert time.monotonic() - start < 5


def test_output_cap_and_marker() -> None:
    with _box(output_cap_bytes=1000) as box:
        r = box.exec(["sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x"])
    assert r.truncated and r.stdout.startswith("x" * 1000)
    assert "4999000 bytes dropped" in r.stdout


def test_files_and_collect(tmp_path: Path) -> None:
    with _box() as box:
        box.write_file("a/b.txt", b"hello")
        assert box.exec(["cat", "a/b.txt"]).stdout == "hello"
        box.exec(["ln", "-s", "/etc/passwd", "link"])
        with pytest.raises(PermissionError):
            box.read_file("link")
        with pytest.raises(PermissionError):
            box.read_file("../outside")
        result = box.collect(tmp_path / "out")
        assert [f.path for f in result.files] == ["a/b.txt"]
        assert result.skipped == {"link": "symlink"}
        host_dir = box.host_dir
    assert not host_dir.exists()


def test_runner_stdin_to_a_process_that_never_reads() -> None:
    # must not deadlock: the child exits without reading 10 MB of stdin
    out = run_process(["true"], timeout=10, output_cap=100, stdin=b"x" * 10_000_000)
    assert out.returncode == 0 and not out.timed_out


def test_runner_process_that_closes_its_pipes_still_times_out() -> None:
    code = "import os, time; os.close(1); os.close(2); time.sleep(100)"
    start = time.monotonic()
    out = run_process([sys.executable, "-c", code], timeout=1, output_cap=100)
    assert out.timed_out and time.monotonic() - start < 5


def test_runner_reports_signals_like_a_shell() -> None:
    out = run_process(["sh", "-c", "kill -9 $$"], timeout=10, output_cap=100)
    assert out.returncode == 137 and not out.timed_out
