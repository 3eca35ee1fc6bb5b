"""The embedded default: SQLite, an in-process thread pool, the best local sandbox backend."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import Batch, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.execution import RunContext, execute_run
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
              on_done: Callable[[str, str], None] | None = None) -> list[str]:
    """Execute every queued run of a batch in a thread pool; ``on_done(run_id, status)`` reports progress.

    Returns the failures that escaped a run (each is already recorded on the run
    as an orchestrator-layer error), so the caller can show them.
    """
    with ctx.sessions() as session:
        session.execute(update(Batch).where(Batch.id == batch_id).values(status="running"))
        session.commit()
    run_ids = queued_run_ids(ctx.sessions, batch_id)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="il-run") as pool:
        futures = {pool.submit(execute_run, ctx, run_id): run_id for run_id in run_ids}
        failures: list[str] = []
        for future in as_completed(futures):
            try:
                status = future.result()
            except Exception as exc:  # already recorded on the run by execute_run
                status = RunStatus.error
                failures.append(f"run {futures[future]}: {type(exc).__name__}: {exc}")
            if on_done:
                on_done(futures[future], status)
    with ctx.sessions() as session:
        session.execute(update(Batch).where(Batch.id == batch_id).values(status="done"))
        session.commit()
    return failures
