"""What is Docker's own: availability messages, the container's configuration, reaping orphans.

Everything the ``Sandbox`` contract asks of Docker (isolation, limits, host-side
file safety, lifecycle) is tested once for every backend in
tests/test_sandbox_contract.py. No mocks: every test builds real containers from
the real sandbox image. Skipped (with the reason) only when no engine can run
here; on CI (``CI=true``) a missing engine or image is a failure, not a skip.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes.base import SandboxLimits, SandboxSpec, SandboxUnavailable
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
from tests.conftest import usable_backend

PY = "python3"


def _docker_backend_or_skip() -> DockerBackend:
    backend = usable_backend("docker")
    assert isinstance(backend, DockerBackend)
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


# ---- the image ------------------------------------------------------------------------------


def test_image_has_the_python_science_stack(box: DockerSandbox) -> None:
    # numpy and matplotlib (the PNG) are part of the contract; the image adds pandas, scipy and sklearn
    r = _py(
        box,
        """
        import numpy as np, pandas as pd, scipy.stats, sklearn.linear_model
        print(np.arange(4).sum(), len(pd.DataFrame({"a": [1, 2]})))
        """,
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == ["6", "2"]


# ---- the container ---------------------------------------------------------------------------


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


def test_destroy_removes_the_container(backend: DockerBackend) -> None:
    sb = backend.create(_spec())
    cid = sb.container_id
    assert sb.container_exists()
    sb.destroy()
    assert not sb.container_exists()
    assert not [c for c in backend.managed_containers() if c["Id"] == cid]
    sb.destroy()  # idempotent once the container is gone


# ---- orphans ---------------------------------------------------------------------------------


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
