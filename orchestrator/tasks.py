"""The Celery app (Redis broker) and its tasks, thin wrappers over ``orchestrator.worker`` and ``.reconciler``.

Queues: ``runs`` (agent phase), ``judges`` (judging), ``maintenance`` (the
reconciler, sent by beat). Messages are acknowledged after the task returns
(``acks_late``) and handed back when the worker process dies
(``task_reject_on_worker_lost``); each worker process reserves one message at a
time. A message delivered and never acknowledged because the whole worker died
returns after the Redis ``visibility_timeout``; long before that, the reconciler
has re-queued its run from the database.
"""

from __future__ import annotations

import logging

from celery import Celery, signals

from orchestrator import reconciler, worker
from orchestrator.settings import Settings, get_settings

log = logging.getLogger(__name__)

RUNS_QUEUE, JUDGES_QUEUE, MAINTENANCE_QUEUE = "runs", "judges", "maintenance"
DEFAULT_QUEUES = f"{RUNS_QUEUE},{JUDGES_QUEUE},{MAINTENANCE_QUEUE}"
EXECUTE_RUN, JUDGE_RUN, RECONCILE = "integritylab.execute_run", "integritylab.judge_run", "integritylab.reconcile"
JUDGE_TRIES = 3

app = Celery("integritylab")
settings: Settings = get_settings()


def configure(new: Settings) -> None:
    """Point the app at ``new`` settings (done at import from the environment; the API factory may call it again)."""
    global settings, _context
    settings, _context = new, None
    new.import_plugins()
    app.conf.update(_conf(new))
    if "pool" in app.__dict__:  # drop connections to a previously configured broker
        app.pool.force_close_all()
        del app.__dict__["pool"]


def _conf(settings: Settings) -> dict[str, object]:
    return dict(
        broker_url=settings.broker_url,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=False,  # duplicates are no-ops; let runs finish
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_default_queue=RUNS_QUEUE,
        task_routes={EXECUTE_RUN: {"queue": RUNS_QUEUE}, JUDGE_RUN: {"queue": JUDGES_QUEUE},
                     RECONCILE: {"queue": MAINTENANCE_QUEUE}},
        task_publish_retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1},
        worker_hijack_root_logger=False,
        beat_schedule={"reconcile": {
            "task": RECONCILE, "schedule": settings.reconcile_interval_s,
            "options": {"queue": MAINTENANCE_QUEUE, "expires": max(1.0, settings.reconcile_interval_s)},
        }},
    )


_context: worker.WorkerContext | None = None
configure(settings)


@signals.worker_process_init.connect
def _fresh_process(**_kwargs: object) -> None:
    """A forked pool process must not share the parent's database connections."""
    global _context
    from orchestrator.db import session as db_session

    for engine in db_session._engines.values():  # noqa: SLF001 - engines cached per process
        engine.dispose(close=False)
    _context = None


def worker_context() -> worker.WorkerContext:
    global _context
    if _context is None:
        _context = worker.build_context(settings, enqueue_judge=lambda run_id: enqueue_judges([run_id]))
    return _context


@app.task(name=EXECUTE_RUN, bind=True, max_retries=None)
def execute_run(self, run_id: str) -> str:  # noqa: ANN001
    ctx = worker_context()
    outcome = worker.guarded(ctx, lambda: worker.attempt_run(ctx, run_id))
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


@app.task(name=JUDGE_RUN, bind=True, max_retries=None)
def judge_run(self, run_id: str) -> str:  # noqa: ANN001
    ctx = worker_context()
    final = self.request.retries >= JUDGE_TRIES - 1
    outcome = worker.guarded(ctx, lambda: worker.judge_attempt(ctx, run_id, final=final))
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


@app.task(name=RECONCILE, acks_late=False)
def reconcile() -> dict[str, object]:
    ctx = worker_context()
    report = reconciler.reconcile_once(
        ctx.run.sessions, settings, reconciler.Publisher(runs=enqueue_runs, judges=enqueue_judges),
        ctx.semaphores.client if ctx.semaphores else None, EXECUTE_RUN, JUDGE_RUN,
        {EXECUTE_RUN: RUNS_QUEUE, JUDGE_RUN: JUDGES_QUEUE},
    )
    return report.as_dict()


def _publish(task, run_ids: list[str]) -> int:  # noqa: ANN001
    """Send one message per run over one connection; returns how many were sent (the rest the reconciler sends)."""
    sent = 0
    try:
        with app.producer_or_acquire() as producer:
            for run_id in run_ids:
                task.apply_async((run_id,), producer=producer)
                sent += 1
    except Exception as exc:  # noqa: BLE001 - the database keeps the runs queued; the reconciler re-sends
        log.warning("could not enqueue %d of %d %s tasks: %s", len(run_ids) - sent, len(run_ids), task.name, exc)
    return sent


def enqueue_runs(run_ids: list[str]) -> int:
    return _publish(execute_run, run_ids)


def enqueue_judges(run_ids: list[str]) -> int:
    return _publish(judge_run, run_ids)
