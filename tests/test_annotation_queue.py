"""The annotation queue (issue #15): leases to N distinct annotators, lapsed leases, the two-phase blind
label, and the run's verdict once the labels agree — on SQLite and on the machine's PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from annotation.checklist import ChecklistAnswer
from annotation.leases import LeaseError, NotYours
from orchestrator import annotation_store as queue
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import (
    AnnotationHistory,
    AnnotationRow,
    Assignment,
    QueueItem,
    Run,
    RunStatus,
    UserAccount,
)
from orchestrator.db.session import session_factory
from orchestrator.runs import utcnow
from scenarios.loader import load_catalog
from tests.annotation_support import seed_run
from tests.test_postgres import REACHABLE, WHY, _admin_engine

CATALOG = load_catalog()


@pytest.fixture
def sessions(tmp_path) -> sessionmaker[Session]:
    return session_factory(f"sqlite:///{tmp_path}/queue.sqlite3")


@pytest.fixture
def store(tmp_path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def users(sessions: sessionmaker[Session], n: int) -> list[UserAccount]:
    # argon2 is slow on purpose; the queue does not need real hashes here
    with sessions() as session:
        made = [UserAccount(name=f"annotator{i}", role="annotator", password_hash="x") for i in range(n)]
        session.add_all(made)
        session.commit()
        return made


def new_queue(sessions: sessionmaker[Session], run_ids: list[str], n: int, name: str = "q") -> None:
    with sessions() as session:
        q = queue.create_queue(session, queue.QueueSpec(name, annotators_per_item=n), created_by="test")
        queue.add_runs(session, q, run_ids)
        session.commit()


def answers(run_scenario: str) -> dict[str, ChecklistAnswer]:
    items = CATALOG.get(run_scenario).rubric().checklist
    return {i.id: ChecklistAnswer(answer="no", evidence="#3") for i in items}


def label_fully(sessions, assignment_id: str, user: UserAccount, label: str) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        queue.commit_blind(session, assignment_id, user, label, [3, 9])
        session.commit()
    with sessions() as session:
        scenario = session.scalar(select(Run.scenario_id))
        queue.submit(session, CATALOG, assignment_id, user, label, answers(scenario))
        session.commit()


def test_an_item_goes_to_exactly_n_distinct_annotators(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=2)
    a, b, c = users(sessions, 3)
    first = queue.next_assignment(sessions, a.id, "q")
    assert first is not None
    assert queue.next_assignment(sessions, a.id, "q") == first  # the open lease again, never a second slot
    second = queue.next_assignment(sessions, b.id, "q")
    assert second not in (None, first)
    assert queue.next_assignment(sessions, c.id, "q") is None  # two slots, both held
    with sessions() as session:
        assert session.query(Assignment).count() == 2


def test_a_lapsed_lease_frees_the_slot_and_its_commit_is_refused_with_nothing_changed(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=1)
    a, b = users(sessions, 2)
    mine = queue.next_assignment(sessions, a.id, "q")
    assert mine is not None and queue.next_assignment(sessions, b.id, "q") is None
    with sessions() as session:
        session.get(Assignment, mine).lease_expires_at = utcnow() - timedelta(seconds=1)
        session.commit()
    taken = queue.next_assignment(sessions, b.id, "q")
    assert taken is not None and taken != mine
    with sessions() as session, pytest.raises(LeaseError, match="lapsed"):
        queue.commit_blind(session, mine, a, "Pass", [3])
    with sessions() as session:
        assert session.get(Assignment, mine).blind_label is None
        assert session.query(AnnotationHistory).count() == 0
        with pytest.raises(LeaseError, match="lapsed"):
            queue.renew(session, mine, a.id)


def test_the_checklist_is_hidden_until_the_blind_label_is_committed(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=1)
    (a,) = users(sessions, 1)
    mine = queue.next_assignment(sessions, a.id, "q")
    assert mine is not None
    with sessions() as session:
        before = queue.view(session, CATALOG, store, mine, a.id)
    assert before.checklist is None and before.agent is None and before.model is None
    dump = before.model_dump_json()
    assert "gpt-4o-mini" not in dump and "codex" not in dump.lower()
    assert before.report and before.events and before.events[0].kind == "model_call"
    with sessions() as session, pytest.raises(LeaseError, match="Commit your blind label first"):
        queue.submit(session, CATALOG, mine, a, "Pass", answers(before.scenario_id))
    with sessions() as session:
        queue.commit_blind(session, mine, a, "Pass", [2, 9], "validator MET")
        session.commit()
    with sessions() as session:
        after = queue.view(session, CATALOG, store, mine, a.id)
    assert after.checklist and next(q.id for q in after.checklist) == "R1"
    assert after.assignment.blind_label == "Pass"


def test_labels_that_agree_become_the_verdict_and_a_revision_keeps_the_blind_label(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    first = queue.next_assignment(sessions, a.id, "q")
    second = queue.next_assignment(sessions, b.id, "q")
    with sessions() as session:
        queue.commit_blind(session, first, a, "Flawed", [3])
        session.commit()
    with sessions() as session:
        queue.submit(session, CATALOG, first, a, "Pass", answers(session.get(Run, run_id).scenario_id), "revised")
        session.commit()
    with sessions() as session:
        run = session.get(Run, run_id)
        assert run.status == RunStatus.awaiting_review and run.verdict == "Fail"  # one of two labels only
        kept = session.get(Assignment, first)
        assert (kept.blind_label, kept.final_label, kept.state) == ("Flawed", "Pass", "submitted")
        assert len(kept.trajectory_sha256) == 64
    label_fully(sessions, second, b, "Pass")
    with sessions() as session:
        run = session.get(Run, run_id)
        assert run.status == RunStatus.done and run.verdict == "Pass"
        assert session.scalar(select(QueueItem.completed_at)) is not None
        assert sorted(session.scalars(select(AnnotationRow.annotator))) == ["annotator0", "annotator1"]
        actions = Counter(session.scalars(select(AnnotationHistory.action)))
        assert actions == {"blind_commit": 2, "submit": 2, "verdict": 1}


def test_labels_that_disagree_leave_the_verdict_to_adjudication(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    label_fully(sessions, queue.next_assignment(sessions, a.id, "q"), a, "Pass")
    label_fully(sessions, queue.next_assignment(sessions, b.id, "q"), b, "Fail")
    with sessions() as session:
        run = session.get(Run, run_id)
        assert run.status == RunStatus.awaiting_review and run.verdict == "Fail"


def test_an_annotator_cannot_open_or_act_on_anothers_item(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    mine = queue.next_assignment(sessions, a.id, "q")
    with sessions() as session:
        with pytest.raises(NotYours):
            queue.view(session, CATALOG, store, mine, b.id)
        with pytest.raises(NotYours):
            queue.commit_blind(session, mine, b, "Pass", [1])


def test_bad_input_names_the_field_and_saves_nothing(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=1)
    (a,) = users(sessions, 1)
    mine = queue.next_assignment(sessions, a.id, "q")
    with sessions() as session:
        with pytest.raises(ValueError, match="not one of Pass, Flawed, Fail, Error"):
            queue.commit_blind(session, mine, a, "Great", [1])
        with pytest.raises(ValueError, match="evidence"):
            queue.commit_blind(session, mine, a, "Pass", [])
        queue.commit_blind(session, mine, a, "Pass", [1])
        session.commit()
    with sessions() as session:
        partial = dict(list(answers(session.get(Run, run_id).scenario_id).items())[:2])
        with pytest.raises(ValueError, match="has no answer"):
            queue.submit(session, CATALOG, mine, a, "Pass", partial)
        with pytest.raises(ValueError, match="queue name"):
            queue.create_queue(session, queue.QueueSpec("q"), created_by="t")
    with sessions() as session:
        assert session.get(Assignment, mine).state == "committed"


def test_runs_sent_to_review_join_the_default_queue_once(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    with sessions() as session:
        queue.route_for_review(session, run_id)
        queue.route_for_review(session, run_id)
        session.commit()
    (a,) = users(sessions, 1)
    assert queue.next_assignment(sessions, a.id) is not None
    with sessions() as session:
        assert session.query(QueueItem).count() == 1


def race(sessions: sessionmaker[Session], store: ArtifactStore) -> None:
    """Ten annotators ask for items at the same moment; three items need two each."""
    run_ids = [seed_run(sessions, store) for _ in range(3)]
    new_queue(sessions, run_ids, n=2)
    people = users(sessions, 10)
    start = threading.Barrier(len(people))
    got: dict[str, str | None] = {}
    errors: list[BaseException] = []

    def ask(user: UserAccount) -> None:
        try:
            start.wait()
            got[user.id] = queue.next_assignment(sessions, user.id, "q")
        except BaseException as exc:  # noqa: BLE001 - re-raised below in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(u,)) for u in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    with sessions() as session:
        per_item = Counter(session.scalars(select(Assignment.item_id)))
        holders = [(a.item_id, a.user_id) for a in session.scalars(select(Assignment))]
    assert sorted(per_item.values()) == [2, 2, 2]  # every slot filled, none over
    assert len(set(holders)) == len(holders)
    assert sum(1 for v in got.values() if v) == 6


def test_ten_annotators_at_once_never_over_assign_on_sqlite(sessions, store) -> None:
    race(sessions, store)


@pytest.mark.skipif(not REACHABLE, reason=WHY)
def test_ten_annotators_at_once_never_over_assign_on_postgres(tmp_path, store) -> None:
    import uuid

    from sqlalchemy import text
    name = f"il_queue_{uuid.uuid4().hex[:10]}"
    admin = _admin_engine()
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        from tests.test_postgres import ADMIN_URL
        race(session_factory(ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"), store)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_a_queue_from_a_selection_mixes_in_gold_items_that_never_set_a_verdict(sessions, store) -> None:
    chosen, known = seed_run(sessions, store), seed_run(sessions, store, status=RunStatus.done)
    with sessions() as session:
        session.add(AnnotationRow(run_id=known, annotator="earlier", label="Pass"))
        session.get(Run, known).verdict = "Pass"
        batch = session.get(Run, chosen).batch_id
        spec = queue.QueueSpec("gold", annotators_per_item=1, gold_rate=1.0)
        made, added, gold = queue.queue_from_selection(session, spec, queue.Selection(batch=batch), "admin")
        session.commit()
        assert (added, gold) == (1, 1)
        items = {i.run_id: i.gold_label for i in session.scalars(select(QueueItem).where(QueueItem.queue_id == made.id))}
    assert items == {chosen: None, known: "Pass"}
    (a,) = users(sessions, 1)
    for _ in range(2):
        label_fully(sessions, queue.next_assignment(sessions, a.id, "gold"), a, "Fail")
    with sessions() as session:
        assert session.get(Run, known).verdict == "Pass"  # a gold item checks the annotator, not the run
        assert (session.get(Run, chosen).status, session.get(Run, chosen).verdict) == (RunStatus.done, "Fail")
