"""Adjudication (issue #15 item 6): items whose labels disagree reach the admin, who sees every label and
checklist side by side and sets the final label with a reason; it becomes the run's verdict, the judges are
calibrated against it, and the history keeps who, when, before and after."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from orchestrator import adjudication_store as adjudication
from orchestrator import annotation_store as queue
from orchestrator.calibration_data import verdicts_from_database
from orchestrator.db.models import (
    AnnotationHistory,
    AnnotationRow,
    Assignment,
    JudgementRow,
    Run,
    RunStatus,
    UserAccount,
)
from tests.annotation_support import seed_run
from tests.test_annotation_queue import CATALOG, label_fully, new_queue, sessions, store, users

__all__ = ["sessions", "store"]


def admin(sessions) -> UserAccount:  # type: ignore[no-untyped-def]
    with sessions() as session:
        made = UserAccount(name="chief", role="admin", password_hash="x")
        session.add(made)
        session.commit()
        return made


def disagreeing_item(sessions, store) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    run_id = seed_run(sessions, store)
    with sessions() as session:
        session.add(JudgementRow(run_id=run_id, judge="dilemma-detectors", judge_version="t", verdict="Fail"))
        session.commit()
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    label_fully(sessions, queue.next_assignment(sessions, a.id, "q"), a, "Pass")
    label_fully(sessions, queue.next_assignment(sessions, b.id, "q"), b, "Flawed")
    with sessions() as session:
        rows = adjudication.disagreements(session)
    assert [r.labels for r in rows] == [["Pass", "Flawed"]]
    return run_id, rows[0].item_id


def test_an_adjudicated_label_becomes_the_verdict_and_the_calibration_label(sessions, store) -> None:
    run_id, item_id = disagreeing_item(sessions, store)
    chief = admin(sessions)
    with sessions() as session:
        shown = adjudication.adjudication_view(session, CATALOG, store, item_id)
        assert [c.final_label for c in shown.cards] == ["Pass", "Flawed"]
        assert [c.annotator for c in shown.cards] == ["annotator0", "annotator1"]
        assert all(c.checklist and c.blind_seconds is not None and c.checklist_seconds is not None
                   for c in shown.cards)
        assert shown.judges[0].verdict == "Fail" and shown.model == "openai:gpt-4o-mini"  # admins see it all
        assert {q.id for q in shown.questions} == set(shown.cards[0].checklist)
    with sessions() as session:
        # a tie between Pass and Flawed: the majority rule cannot settle it, adjudication does
        adjudication.adjudicate(session, item_id, chief.name, chief.role, "Flawed",
                                "The caveat is in an appendix only; the guide says Flawed.")
        session.commit()
    with sessions() as session:
        run = session.get(Run, run_id)
        assert (run.status, run.verdict) == (RunStatus.done, "Flawed")
        entry = session.scalars(select(AnnotationHistory).where(AnnotationHistory.action == "adjudicate")).one()
        assert entry.actor == "chief" and entry.before["verdict"] == "Fail"
        assert entry.before["labels"] == ["Pass", "Flawed"] and entry.after["verdict"] == "Flawed"
        assert "appendix" in entry.after["reason"]
        assert adjudication.disagreements(session) == []  # settled
        assert [r.adjudicated_label for r in adjudication.disagreements(session, include_settled=True)] == ["Flawed"]
        (pair,) = verdicts_from_database(session)
        assert (pair.human, pair.predicted) == ("Flawed", "Fail")


def test_a_second_adjudication_keeps_the_first_in_the_history(sessions, store) -> None:
    run_id, item_id = disagreeing_item(sessions, store)
    chief = admin(sessions)
    for label in ("Flawed", "Pass"):
        with sessions() as session:
            adjudication.adjudicate(session, item_id, chief.name, chief.role, label, f"reason {label}")
            session.commit()
    with sessions() as session:
        entries = list(session.scalars(select(AnnotationHistory).where(AnnotationHistory.action == "adjudicate")
                                       .order_by(AnnotationHistory.id)))
        assert [(e.before["adjudicated_label"], e.after["verdict"]) for e in entries] == [(None, "Flawed"),
                                                                                          ("Flawed", "Pass")]
        assert session.get(Run, run_id).verdict == "Pass"


def test_adjudication_refuses_bad_input_and_changes_nothing(sessions, store) -> None:
    run_id, item_id = disagreeing_item(sessions, store)
    chief = admin(sessions)
    cases = [("Flawed", "  ", "reason"), ("Maybe", "why", "not one of"), ("", "why", "label")]
    for label, reason, message in cases:
        with sessions() as session, pytest.raises(ValueError, match=message):
            adjudication.adjudicate(session, item_id, chief.name, chief.role, label, reason)
    with sessions() as session, pytest.raises(PermissionError):
        annotator = session.scalars(select(UserAccount).where(UserAccount.role == "annotator")).first()
        adjudication.adjudicate(session, item_id, annotator.name, annotator.role, "Pass", "I think so")
    with sessions() as session, pytest.raises(LookupError):
        adjudication.adjudicate(session, 999, chief.name, chief.role, "Pass", "why")
    with sessions() as session:
        assert session.get(Run, run_id).verdict == "Fail"
        assert session.scalar(select(AnnotationHistory).where(AnnotationHistory.action == "adjudicate")) is None


def test_agreeing_items_are_not_adjudicated(sessions, store) -> None:
    run_id = seed_run(sessions, store)
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    label_fully(sessions, queue.next_assignment(sessions, a.id, "q"), a, "Pass")
    label_fully(sessions, queue.next_assignment(sessions, b.id, "q"), b, "Pass")
    chief = admin(sessions)
    with sessions() as session:
        assert adjudication.disagreements(session) == []
        item_id = session.scalar(select(Assignment.item_id))
        with pytest.raises(ValueError, match="do not disagree"):
            adjudication.adjudicate(session, item_id, chief.name, chief.role, "Fail", "override")


def test_a_submitted_label_records_what_an_export_needs(sessions, store) -> None:
    run_id, _item_id = disagreeing_item(sessions, store)
    with sessions() as session:
        rows = list(session.scalars(select(AnnotationRow).where(AnnotationRow.run_id == run_id)))
        assert {r.source for r in rows} == {"queue"} and all(r.assignment_id for r in rows)
        assert all(len(r.trajectory_sha256) == 64 and len(r.checklist_version) == 16 for r in rows)
        assert [r.blind_label for r in rows] == ["Pass", "Flawed"]
