"""Shared fixtures: an isolated data directory and an embedded run context per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.embedded import make_context
from orchestrator.execution import RunContext
from orchestrator.settings import Settings
from sandboxes.registry import get_backend


def bwrap_ready() -> tuple[bool, str]:
    try:
        return get_backend("bwrap").available()
    except Exception as exc:  # noqa: BLE001 - reported as the skip reason
        return False, str(exc)


requires_bwrap = pytest.mark.skipif(not bwrap_ready()[0], reason=f"bubblewrap unavailable: {bwrap_ready()[1]}")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("INTEGRITYLAB_DATABASE_URL", raising=False)
    return Settings.from_env()


@pytest.fixture
def ctx(settings: Settings) -> RunContext:
    return make_context(settings, backend="bwrap")


ON_CI = __import__("os").environ.get("CI", "").lower() == "true"


def usable_backend(name: str):  # type: ignore[no-untyped-def]
    """The named sandbox backend, or a skip saying why not (a failure under CI=true, where it must work)."""
    backend = get_backend(name)
    ok, why = backend.available()
    if not ok:
        if ON_CI:
            pytest.fail(f"CI=true but the {name} backend is unavailable: {why}")
        pytest.skip(f"{name} backend unavailable: {why}")
    return backend
