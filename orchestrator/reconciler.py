"""The periodic reconciler (Celery beat sends it): the database is the truth, Redis only carries work.

Each pass:

1. A run in ``running`` whose heartbeat deadline has passed has no live worker:
   it goes back to ``queued`` (its lost attempt closed with an orchestrator-layer
   error event; everything it wrote is kept) and is enqueued again, or, after
   ``max_attempts``, ends as an ``error`` in the ``orchestrator`` layer.
2. A run in ``queued`` for longer than the grace period whose task is in no
   Redis queue and in no worker's hands (e.g. Redis restarted without
   persistence) is enqueued again.
3. The same for runs in ``judging`` and the ``judges`` queue.
4. A batch none of whose runs needs a worker any more is marked done.

A duplicate message is harmless (the run's guarded transitions make it a no-op),
so the reconciler prefers enqueueing twice to losing a run.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

import redis
from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from orchestrator import runs
from orchestrator.db.models import Batch, Run, RunStatus
from orchestrator.settings import Settings

log = logging.getLogger(__name__)
PRIORITY_SEPARATOR = "\x06\x16"  # kombu's Redis transport names priority lists "<queue>\x06\x16<n>"
PRIORITY_STEPS = (3, 6, 9)
UNACKED_KEY = "unacked"  # kombu's hash of delivered, not yet acknowledged messages
UNACKED_INDEX_KEY = "unacked_index"  # kombu's sorted set: delivery tag -> when it was delivered
LOCK_KEY = "il:reconcile:lock"
LAST_RUN_KEY = "il:reconcile:last"  # when a pass last finished (beat's health check reads it)


@dataclass
class ReconcileReport:
    requeued: list[str] = field(default_factory=list)
    finished_from_record: list[str] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    reenqueued: list[str] = field(default_factory=list)
    rejudged: list[str] = field(default_factory=list)
    batches_done: list[str] = field(default_factory=list)
    broker_checked: bool = False
    skipped: str = ""

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items()}


class BrokerView:
    """Which run ids have a task message in Redis: waiting in a queue, or delivered and not yet acknowledged."""

    def __init__(self, client: redis.Redis, task_names: dict[str, str]) -> None:
        self.client = client
        self.task_names = task_names  # task name -> queue name

    def _keys(self, queue: str) -> list[str]:
        return [queue, *(f"{queue}{PRIORITY_SEPARATOR}{p}" for p in PRIORITY_STEPS)]

    @staticmethod
    def _task_and_run(raw: dict) -> tuple[str, str] | None:
        headers = raw.get("headers") or {}
        task = headers.get("task")
        try:
            body = raw.get("body", "")
            if raw.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            return (task, str(args[0])) if task and args else None
        except (ValueError, TypeError, IndexError, KeyError):
            return None

    def pending(self, unacked_max_age_s: float | None = None) -> dict[str, set[str]]:
        """Run ids per task name.

        A delivered message counts only if it was delivered less than
        ``unacked_max_age_s`` ago: one held longer by a worker that died would
        come back only after the visibility timeout (hours), so its run is
        better sent again now.
        """
        found: dict[str, set[str]] = {name: set() for name in self.task_names}
        raws: list[dict] = []
        for queue in set(self.task_names.values()):
            for key in self._keys(queue):
                start = 0
                while True:
                    chunk = self.client.lrange(key, start, start + 999)
                    raws.extend(json.loads(item) for item in chunk)
                    if len(chunk) < 1000:
                        break
                    start += 1000
        recent: set[bytes] | None = None
        if unacked_max_age_s is not None:
            since = time.time() - unacked_max_age_s
            recent = set(self.client.zrangebyscore(UNACKED_INDEX_KEY, since, "+inf"))
        for tag, value in self.client.hscan_iter(UNACKED_KEY, count=1000):
            if recent is not None and tag not in recent:
                continue
            try:
                raws.append(json.loads(value)[0])
            except (ValueError, IndexError):
                continue
        for raw in raws:
            pair = self._task_and_run(raw)
            if pair and pair[0] in found:
                found[pair[0]].add(pair[1])
        return found


@dataclass
class Publisher:
    runs: Callable[[list[str]], None]
    judges: Callable[[list[str]], None]


def _ids(session: Session, statement) -> list[str]:  # noqa: ANN001
    return list(session.scalars(statement))


def reconcile(sessions: sessionmaker[Session], settings: Settings, publish: Publisher,
              broker: BrokerView | None, run_task: str, judge_task: str) -> ReconcileReport:
    """One pass over the database; see the module docstring."""
    report = ReconcileReport()
    now = runs.utcnow()
    with sessions() as session:
        stuck = session.execute(select(Run.id, Run.attempt, Run.worker).where(
            Run.status == RunStatus.running, Run.deadline_at < now)).all()
    for run_id, attempt, worker in stuck:
        why = f"no heartbeat from {worker or 'its worker'} before its deadline"
        if runs.finish_from_record(sessions, run_id, attempt, why):  # its exit is on record: never run it twice
            report.finished_from_record.append(run_id)
        elif attempt >= settings.max_attempts:
            if runs.give_up(sessions, run_id, attempt, why):
                report.gave_up.append(run_id)
        elif runs.requeue(sessions, run_id, attempt, "orchestrator", why, lost=True):
            report.requeued.append(run_id)
    if report.requeued:
        publish.runs(report.requeued)
    if report.gave_up or report.finished_from_record:
        publish.judges(report.gave_up + report.finished_from_record)

    if broker is not None:
        try:
            # a live worker holds a message at most for a retry's countdown (or a moment before claiming its run)
            longest_countdown = min(settings.retry_backoff_s * 2 ** settings.max_attempts, 600.0) * 1.2
            pending = broker.pending(unacked_max_age_s=max(settings.requeue_grace_s, longest_countdown, 30.0))
            report.broker_checked = True
        except redis.RedisError as exc:
            log.warning("reconciler cannot read the broker: %s", exc)
            pending = None
        if pending is not None:
            cutoff = now - timedelta(seconds=settings.requeue_grace_s)
            with sessions() as session:
                queued = _ids(session, select(Run.id).join(Batch, Batch.id == Run.batch_id).where(
                    Run.status == RunStatus.queued, Batch.status != "cancelled",
                    or_(Run.enqueued_at.is_(None), Run.enqueued_at < cutoff)).order_by(Run.created_at))
                judging = _ids(session, select(Run.id).where(
                    Run.status == RunStatus.judging, or_(Run.status_at.is_(None), Run.status_at < cutoff)))
            report.reenqueued = [r for r in queued if r not in pending.get(run_task, set())]
            report.rejudged = [r for r in judging if r not in pending.get(judge_task, set())]
            if report.reenqueued:
                _touch_enqueued(sessions, report.reenqueued)
                publish.runs(report.reenqueued)
            if report.rejudged:
                publish.judges(report.rejudged)

    with sessions() as session:
        open_batches = _ids(session, select(Batch.id).where(Batch.status.in_(["queued", "running"])))
    report.batches_done = [b for b in open_batches if runs.finish_batch_if_done(sessions, b)]
    if any((report.requeued, report.finished_from_record, report.gave_up, report.reenqueued, report.rejudged)):
        log.warning("reconciler: %s", report.as_dict())
    return report


def _touch_enqueued(sessions: sessionmaker[Session], run_ids: Iterable[str]) -> None:
    from sqlalchemy import update

    ids = list(run_ids)
    with sessions() as session:
        for start in range(0, len(ids), 500):
            session.execute(update(Run).where(Run.id.in_(ids[start:start + 500]), Run.status == RunStatus.queued)
                            .values(enqueued_at=runs.utcnow()))
        session.commit()


def reconcile_once(sessions: sessionmaker[Session], settings: Settings, publish: Publisher,
                   client: redis.Redis | None, run_task: str, judge_task: str,
                   task_queues: dict[str, str]) -> ReconcileReport:
    """``reconcile`` under a Redis lock, so overlapping beats or a second beat process do not double the work."""
    lock = None
    if client is not None:
        try:
            lock = client.lock(LOCK_KEY, timeout=max(5.0, settings.reconcile_interval_s * 4), blocking=False)
            if not lock.acquire(blocking=False):
                return ReconcileReport(skipped="another reconciler is running")
        except redis.RedisError as exc:
            log.warning("reconciler cannot reach Redis (%s); checking the database only", exc)
            lock, client = None, None
    broker = BrokerView(client, task_queues) if client is not None else None
    try:
        report = reconcile(sessions, settings, publish, broker, run_task, judge_task)
        if client is not None:
            client.set(LAST_RUN_KEY, str(time.time()))
        return report
    finally:
        if lock is not None:
            try:
                lock.release()
            except redis.RedisError:
                pass
