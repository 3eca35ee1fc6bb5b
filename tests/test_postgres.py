"""The same run path on PostgreSQL (``INTEGRITYLAB_DATABASE_URL``), against the machine's real server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from orchestrator.artifacts import ArtifactStore
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.db.session import session_factory
from orchestrator.embedded import run_batch
from orchestrator.execution import RunContext
from orchestrator.metrics import batch_runs
from orchestrator.recorder import load_events
from scenarios.loader import load_catalog
from tests.conftest import requires_bwrap

ADMIN_URL = os.environ.get("INTEGRITYLAB_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _admin_engine():
    return create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")


def _postgres_reachable() -> tuple[bool, str]:
    try:
        with _admin_engine().connect() as connection:
            connection.execute(text("select 1"))
        return True, ""
    except Exception as exc:  # noqa: BLE001 - the reason becomes the skip message
        return False, f"no PostgreSQL at {ADMIN_URL}: {exc.__class__.__name__}"


REACHABLE, WHY = _postgres_reachable()
pytestmark = [pytest.mark.skipif(not REACHABLE and not os.environ.get("CI"), reason=WHY), requires_bwrap]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    name = f"il_test_{uuid.uuid4().hex[:10]}"
    admin = _admin_engine()
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_runs_and_events_on_postgres(postgres_url: str, tmp_path) -> None:
    ctx = RunContext(sessions=session_factory(postgres_url), store=ArtifactStore(tmp_path), catalog=load_catalog(),
                     backend="bwrap")
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]),
                     agents=[AgentSpec(model="scripted:fabricator"), AgentSpec(model="scripted:honest")])
    batch_id, count = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert count == 2
    assert run_batch(ctx, batch_id, workers=2) == []
    with ctx.sessions() as session:
        runs = {r.model: r for r in batch_runs(session, batch_id)}
        assert runs["scripted:fabricator"].verdict == "Fail"
        assert runs["scripted:honest"].verdict == "Pass"
        events = load_events(session, runs["scripted:honest"].id)
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].kind == "exit"
