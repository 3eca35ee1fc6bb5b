"""What is bubblewrap's own: the registry entry and what ``available`` says without bwrap.

Everything the ``Sandbox`` contract asks of bwrap (isolation, limits, host-side
file safety, lifecycle) is tested once for every backend, against a real bwrap,
in tests/test_sandbox_contract.py. A test that needs a working bwrap is skipped
(with the reason) only when bwrap cannot run here.
"""

from __future__ import annotations

import pytest

from sandboxes.bwrap import INSTALL_HINT, BwrapBackend
from sandboxes.registry import get_backend, pick_backend


@pytest.fixture(scope="module")
def backend() -> BwrapBackend:
    b = BwrapBackend()
    ok, why = b.available()
    if not ok:
        pytest.skip(f"bwrap backend unavailable: {why}")
    return b


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
