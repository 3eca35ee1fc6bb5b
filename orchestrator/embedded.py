"""The embedded default: SQLite, an in-process thread pool, the best local sandbox backend."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import Batch, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.execution import RunContext, execute_run, judge_or_record_failure
from orchestrator.interrupts import Interrupt, recover_stale
from orchestrator.settings import Settings
from scenarios.loader import load_catalog


def make_context(settings: Settings, packs: list[Path] | None = None, backend: str | None = None) -> RunContext:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return RunContext(
        sessions=session_factory(settings.effective_database_url),
        store=ArtifactStore(settings.artifact_dir),
        catalog=load_catalog(packs or None),
        backend=backend or settings.sandbox_backend,
        judge_panel=settings.judge_panel, audit_rate=settings.audit_rate,
        review_confidence=settings.review_confidence,
    )


def queued_run_ids(sessions: sessionmaker[Session], batch_id: str) -> list[str]:
    with sessions() as session:
        return list(session.scalars(
            select(Run.id).where(Run.batch_id == batch_id, Run.status == RunStatus.queued).order_by(Run.created_at)
        ))


def run_batch(ctx: RunContext, batch_id: str, workers: int = 2,
              on_done: Callable[[str, str], None] | None = None, interrupt: Interrupt | None = None) -> list[str]:
    """Execute every queued run of a batch in a thread pool; ``on_done(run_id, status)`` reports progress.

    Runs are handed to the pool as workers free up, so once ``interrupt`` is set
    no new run starts; runs in flight stop at their next event (marked
    ``interrupted``) and the batch ends ``interrupted``. Runs a dead embedded
    process left running are marked interrupted first (:func:`recover_stale`).

    Returns the failures that escaped a run (each is already recorded on the run
    as an orchestrator-layer error), so the caller can show them.
    """
    recover_stale(ctx.sessions)
    with ctx.sessions() as session:
        session.execute(update(Batch).where(Batch.id == batch_id).values(status="running"))
        session.commit()
        unjudged = list(session.scalars(select(Run.id).where(Run.batch_id == batch_id, Run.status == RunStatus.judging,
                                                             Run.worker.is_(None))))
    failures: list[str] = []
    for run_id in unjudged:  # finished from their recorded exit after their process died: judge, never rerun
        try:
            judge_or_record_failure(ctx, run_id)
        except Exception as exc:  # recorded on the run (orchestrator layer) by judge_or_record_failure
            failures.append(f"run {run_id}: judging failed: {type(exc).__name__}: {exc}")
    pending = iter(queued_run_ids(ctx.sessions, batch_id))
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="il-run") as pool:
        in_flight: dict[Future[str], str] = {}

        def submit_next() -> None:
            if interrupt is not None and interrupt.is_set():
                return
            run_id = next(pending, None)
            if run_id is not None:
                in_flight[pool.submit(execute_run, ctx, run_id, interrupt)] = run_id

        for _ in range(max(1, workers)):
            submit_next()
        while in_flight:
            done, _ = wait(in_flight, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                run_id = in_flight.pop(future)
                try:
                    status = future.result()
                except Exception as exc:  # already recorded on the run by execute_run
                    status = RunStatus.error
                    failures.append(f"run {run_id}: {type(exc).__name__}: {exc}")
                if on_done and status != RunStatus.queued:
                    on_done(run_id, status)
                submit_next()
    interrupted = interrupt is not None and interrupt.is_set()
    with ctx.sessions() as session:
        left = session.scalar(select(func.count()).select_from(Run).where(
            Run.batch_id == batch_id, Run.status.in_([RunStatus.queued, RunStatus.interrupted, RunStatus.running])))
        session.execute(update(Batch).where(Batch.id == batch_id)
                        .values(status="interrupted" if interrupted and left else "done"))
        session.commit()
    return failures
