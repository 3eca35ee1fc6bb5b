"""Mounting ``annotation/``'s pages: the database side of the queue for the signed-in browser user."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from fastapi import Request

from annotation.adjudication import AdjudicationView, DisagreementRow
from annotation.agreement import AgreementReport, JudgeAgreement, report
from annotation.checklist import ChecklistAnswer
from annotation.exchange import LabelRecord
from annotation.views import EventWindow, ItemView
from annotation.web import SignedInUser, build_router, static_files
from judges.calibration import calibrate
from orchestrator import adjudication_store as adjudication
from orchestrator import annotation_exchange as exchange
from orchestrator import annotation_store as queue
from orchestrator.api import web_sessions as web
from orchestrator.api.state import ServiceState, service
from orchestrator.calibration_data import verdicts_from_database
from orchestrator.db.models import UserAccount


class DatabaseQueue:
    """:class:`annotation.web.QueueBackend` on the service's database, catalog and artifact store."""

    def __init__(self, state: ServiceState) -> None:
        self.state = state

    def signed_in(self, request: Request) -> SignedInUser | None:
        with self.state.sessions() as session:
            return web.current(session, request.cookies.get(web.SESSION_COOKIE))

    def next_item(self, user: SignedInUser, queue_name: str | None) -> str | None:
        return queue.next_assignment(self.state.sessions, user.user_id, queue_name)

    def view(self, user: SignedInUser, assignment_id: str, window: EventWindow | None = None) -> ItemView:
        with self.state.sessions() as session:
            return queue.view(session, self.state.catalog, self.state.store, assignment_id, user.user_id, window)

    def file(self, user: SignedInUser, assignment_id: str, name: str) -> bytes:
        with self.state.sessions() as session:
            return queue.assignment_file(session, self.state.store, assignment_id, user.user_id, name)

    def _account(self, session, user: SignedInUser) -> UserAccount:  # type: ignore[no-untyped-def]
        account = session.get(UserAccount, user.user_id)
        assert account is not None
        return account

    def commit(self, user: SignedInUser, assignment_id: str, label: str, evidence: list[int], note: str) -> None:
        with self.state.sessions() as session:
            queue.commit_blind(session, assignment_id, self._account(session, user), label, evidence, note)
            session.commit()

    def submit(self, user: SignedInUser, assignment_id: str, label: str, answers: dict[str, ChecklistAnswer],
               note: str) -> None:
        with self.state.sessions() as session:
            queue.submit(session, self.state.catalog, assignment_id, self._account(session, user), label, answers, note)
            session.commit()

    def skip(self, user: SignedInUser, assignment_id: str, reason: str) -> None:
        with self.state.sessions() as session:
            queue.skip(session, assignment_id, self._account(session, user), reason)
            session.commit()

    def renew(self, user: SignedInUser, assignment_id: str) -> datetime:
        with self.state.sessions() as session:
            until = queue.renew(session, assignment_id, user.user_id)
            session.commit()
            return until

    def agreement(self, queue_name: str | None) -> tuple[AgreementReport, list[JudgeAgreement]]:
        with self.state.sessions() as session:
            labels, groups, gold = queue.agreement_inputs(session, queue_name)
            verdicts = verdicts_from_database(session)
        judges = [JudgeAgreement(c.judge, c.accuracy, c.kappa, c.n) for c in calibrate(verdicts)] if verdicts else []
        return report(labels, groups, gold), judges


    def disagreements(self, queue_name: str | None, include_settled: bool) -> list[DisagreementRow]:
        with self.state.sessions() as session:
            return adjudication.disagreements(session, queue_name, include_settled)

    def adjudication(self, item_id: int, window: EventWindow | None = None) -> AdjudicationView:
        with self.state.sessions() as session:
            return adjudication.adjudication_view(session, self.state.catalog, self.state.store, item_id, window)

    def adjudication_file(self, item_id: int, name: str) -> bytes:
        with self.state.sessions() as session:
            return adjudication.item_file(session, self.state.store, item_id, name)

    def adjudicate(self, user: SignedInUser, item_id: int, label: str, reason: str) -> None:
        with self.state.sessions() as session:
            adjudication.adjudicate(session, item_id, user.name, user.role, label, reason)
            session.commit()


    def export(self, queue_name: str | None) -> list[LabelRecord]:
        with self.state.sessions() as session:
            return exchange.export_records(session, queue=queue_name)

    def import_labels(self, user: SignedInUser, records: list[LabelRecord], name: str) -> tuple[int, int]:
        with self.state.sessions() as session:
            outcome = exchange.import_records(session, records, name, actor=user.name)
            session.commit()
        return outcome.added, outcome.unchanged


def _backend(request: Request) -> DatabaseQueue:
    return DatabaseQueue(service(request))


router = build_router(_backend, Path(__file__).parent / "templates")
static = static_files()
