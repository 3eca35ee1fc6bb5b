"""Storage: migrations match the models, events survive a crash, artifacts are content-addressed."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from orchestrator.artifacts import ArtifactStore, artifact_kind
from orchestrator.db.models import Base, Batch, Run
from orchestrator.db.session import session_factory, upgrade
from orchestrator.recorder import DatabaseEventSink, load_events
from scenarios.trajectory import EventKind, MessagePayload


def test_migrations_match_models(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    with create_engine(url).connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []


def test_events_are_committed_as_they_happen(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    sessions = session_factory(url)
    with sessions() as session:
        batch = Batch(name="b")
        session.add(batch)
        session.flush()
        session.add(Run(id="r1", batch_id=batch.id, scenario_id="s", family="dilemma", category="T08",
                        role="trap", agent="react", model="scripted:honest", condition="none"))
        session.commit()
    sink = DatabaseEventSink(sessions, "r1")
    for i in range(3):
        sink.emit(EventKind.message, MessagePayload(role="assistant", text=f"m{i}"))
    # a second process (fresh engine) sees every event without any flush from the writer
    with session_factory(url)() as other:
        events = load_events(other, "r1")
    assert [e.payload["text"] for e in events] == ["m0", "m1", "m2"]
    assert DatabaseEventSink(sessions, "r1").next_seq == 3


def test_artifact_store_dedupes_and_rejects_bad_digests(tmp_path) -> None:
    store = ArtifactStore(tmp_path)
    a, b = store.put(b"hello"), store.put(b"hello")
    assert a == b and store.get(a) == b"hello"
    assert artifact_kind("report/report.md") == "report" and artifact_kind("figures/x.png") == "figure"
    try:
        store.path_for("../../etc/passwd")
    except ValueError:
        pass
    else:
        raise AssertionError("a non-digest name must be refused")
