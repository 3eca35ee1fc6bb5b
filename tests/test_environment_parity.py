"""One environment, every backend (issue #20 item 1-2).

The bubblewrap backend runs over the sandbox image's root filesystem, so a run meets the same
Python, packages and tools on bubblewrap as in the Docker sandbox; the fingerprint measured inside
each says so, and every run records the one it met.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandboxes import rootfs
from sandboxes.base import SandboxSpec, SandboxUnavailable
from sandboxes.fingerprint import EnvironmentFingerprint, measure
from tests.conftest import ON_CI, usable_backend


def _image_root_or_skip() -> None:
    root = rootfs.bwrap_root()
    if root.kind != "image":
        if ON_CI:
            pytest.fail(f"CI=true but bubblewrap runs over {root.note}")
        pytest.skip(root.note)


def _fingerprint(name: str) -> EnvironmentFingerprint:
    with usable_backend(name).create(SandboxSpec(run_id=f"parity-{name}")) as box:
        return measure(box)


def test_bwrap_and_docker_measure_the_same_environment() -> None:
    _image_root_or_skip()
    bwrap, docker = _fingerprint("bwrap"), _fingerprint("docker")
    assert bwrap.differences(docker) == []
    assert bwrap.digest == docker.digest
    # what the issue found missing on bubblewrap, and what both must carry
    assert {"scipy", "scikit-learn", "numpy", "pandas", "matplotlib"} <= set(bwrap.packages)
    assert {"python", "pip", "git", "curl", "jq", "rg", "pdflatex"} <= set(bwrap.tools)


def test_sklearn_fits_on_bubblewrap() -> None:
    _image_root_or_skip()
    code = ("from sklearn.linear_model import LinearRegression; import scipy.stats as s; "
            "m = LinearRegression().fit([[0], [1], [2]], [1, 3, 5]); print(round(m.coef_[0], 3), s.__name__)")
    with usable_backend("bwrap").create(SandboxSpec(run_id="parity-sklearn")) as box:
        result = box.exec(["python", "-c", code], timeout=60)
    assert result.ok, result.stderr
    assert result.stdout.split() == ["2.0", "scipy.stats"]


def test_fingerprints_name_what_differs() -> None:
    a = EnvironmentFingerprint(python="3.11.2", os="Debian 12", packages={"numpy": "2.3.5", "scipy": "1.16.3"},
                               tools=["python", "git"])
    b = EnvironmentFingerprint(python="3.11.2", os="Debian 12", packages={"numpy": "1.24.2"}, tools=["python"])
    assert a.digest != b.digest and len(a.digest) == 16
    assert a.differences(b) == ["numpy: 2.3.5 vs 1.24.2", "scipy: 1.16.3 vs missing", "tool git: present vs missing"]
    same = EnvironmentFingerprint(python="3.11.2", os="Debian 12", packages={"scipy": "1.16.3", "numpy": "2.3.5"},
                                  tools=["git", "python"])
    assert same.digest == a.digest  # order does not matter


def test_root_choice_host_and_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rootfs.ROOTFS_DIR_ENV, str(tmp_path / "none-here"))
    monkeypatch.setenv(rootfs.ROOT_CHOICE_ENV, "host")
    assert rootfs.bwrap_root().kind == "host"
    monkeypatch.setenv(rootfs.ROOT_CHOICE_ENV, "auto")
    fallback = rootfs.bwrap_root()
    assert fallback.kind == "host" and "integritylab sandbox prepare" in fallback.note
    monkeypatch.setenv(rootfs.ROOT_CHOICE_ENV, "image")
    with pytest.raises(SandboxUnavailable, match="integritylab sandbox prepare"):
        rootfs.bwrap_root()
    monkeypatch.setenv(rootfs.ROOT_CHOICE_ENV, "imag")
    with pytest.raises(SandboxUnavailable, match="INTEGRITYLAB_BWRAP_ROOT='imag'"):
        rootfs.bwrap_root()


def test_a_prepared_tree_is_reused_only_for_the_current_definition(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rootfs.ROOTFS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(rootfs.ROOT_CHOICE_ENV, "auto")
    tree = rootfs.rootfs_path()
    tree.mkdir()
    assert rootfs.current_rootfs() is None  # no marker: half-written, never used
    stale = rootfs.RootfsInfo(path=str(tree), inputs_hash="0" * 64, source="mmdebstrap")
    (tree / rootfs.MARKER).write_text(stale.model_dump_json())
    assert rootfs.current_rootfs() is None
    info = rootfs.RootfsInfo(path=str(tree), inputs_hash=rootfs.wanted_hash(), source="mmdebstrap")
    (tree / rootfs.MARKER).write_text(info.model_dump_json())
    assert rootfs.current_rootfs() == info
    assert rootfs.bwrap_root().path == tree
    again, status = rootfs.prepare_rootfs(source="docker")
    assert status == "reused" and again == info
    with pytest.raises(rootfs.RootfsError, match="unknown source"):
        rootfs.prepare_rootfs(source="ftp")


def test_runs_record_the_environment_they_met(ctx) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
    from orchestrator.cli.app import app
    from orchestrator.db.models import Run
    from orchestrator.embedded import run_batch

    usable_backend("bwrap")
    spec = BatchSpec(selection=Selection(ids=["t01-kiln-energy-forecast-trap"]),
                     agents=[AgentSpec(model="scripted:honest")])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    run_batch(ctx, batch_id, workers=1)
    with ctx.sessions() as session:
        (run,) = session.query(Run).filter(Run.batch_id == batch_id).all()
        env = dict(run.environment or {})
    assert env["backend"] == "bwrap" and len(env["digest"]) == 16 and "numpy" in env["packages"]
    assert env["where"] == rootfs.bwrap_root().note
    shown = CliRunner().invoke(app, ["report", batch_id, "--json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.output)
    assert doc["runs"][0]["environment"] == env["digest"]
    assert doc["environments"] == {env["digest"]: {"runs": 1, "where": env["where"], "backend": "bwrap"}}
